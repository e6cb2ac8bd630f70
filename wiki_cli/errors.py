"""One error path: domain errors become one line on stderr and a documented exit code.

| code | meaning |
|------|---------|
| 0    | success |
| 1    | findings, or something asked for was not found / already exists |
| 2    | usage or configuration error (bad option, empty query, no repo, no wiki branch) |
| 3    | evidence gap: ``wiki ask`` found nothing confident enough to answer |
| 4    | conflict: the wiki moved (lost compare-and-swap), a proposal is stale, or another |
|      | process held the search index's lock too long |
| 5    | refused by review policy (e.g. approving your own proposal, a secret in a proposal, |
|      | a flagged proposal without --override-flags) |
| 70   | internal error (a bug): the traceback is written to a log file |
| 74   | storage: a file could not be written (read-only file system, no permission, disk |
|      | full or over quota); the message names the path and the cause, and nothing on the |
|      | wiki branch or its refs was changed (``EX_IOERR`` of sysexits.h) |
| 130  | interrupted (Ctrl-C) |

A damaged derived index is not an error: it is set aside as ``<name>.corrupt-<time>``,
rebuilt from the branch and reported in one ``warning:`` line; a read-only (or full) git
dir makes reads use a temporary index, said in one ``note:`` line (docs/cli.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import sys
import tempfile
import traceback
from pathlib import Path

import typer
from typer.core import TyperGroup

from indexes.backend import as_index_error
from indexes.errors import EmptyQueryError, IndexBusyError, IndexesError
from wiki.errors import (
    AlreadyInitializedError,
    BranchCheckedOutError,
    ConfigError,
    DuplicateIdError,
    EntryError,
    IdentityError,
    NotARepositoryError,
    NotFoundError,
    NotInitializedError,
    ProposalClosedError,
    RefMovedError,
    RemoteError,
    ReviewChangedError,
    ReviewFlaggedError,
    SecretError,
    SelfApprovalError,
    StaleProposalError,
    StorageError,
    UsageError,
    WikiError,
)
from wiki.store.disk_faults import storage_error
from wiki.store.notices import collect_notices, take_notices
from wiki_cli.inert import one_line, shown

OK, FINDINGS, USAGE, GAP, CONFLICT, REFUSED, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 4, 5, 70, 130
STORAGE = 74

EXIT_CODES: list[tuple[type[Exception], int]] = [
    (EmptyQueryError, USAGE),
    (UsageError, USAGE),
    (NotARepositoryError, USAGE),
    (NotInitializedError, USAGE),
    (ConfigError, USAGE),
    (IdentityError, USAGE),
    (EntryError, USAGE),
    (NotFoundError, FINDINGS),
    (AlreadyInitializedError, FINDINGS),
    (RefMovedError, CONFLICT),
    (BranchCheckedOutError, CONFLICT),
    (StaleProposalError, CONFLICT),
    (ReviewChangedError, CONFLICT),
    (DuplicateIdError, CONFLICT),
    (ProposalClosedError, FINDINGS),
    (RemoteError, USAGE),
    (SelfApprovalError, REFUSED),
    (ReviewFlaggedError, REFUSED),
    (SecretError, REFUSED),
    (StorageError, STORAGE),
    (WikiError, FINDINGS),
    (IndexBusyError, CONFLICT),
    (IndexesError, USAGE),
]


EXIT_CODE_MEANINGS: list[tuple[int, str]] = [
    (OK, "ok"), (FINDINGS, "findings, or not found / already exists"),
    (USAGE, "usage or configuration error"), (GAP, "evidence gap (wiki ask)"),
    (CONFLICT, "conflict: the wiki moved, or a stale proposal"),
    (REFUSED, "refused by review policy"),
    (INTERNAL, "internal error (details in a log file)"),
    (STORAGE, "storage: a file could not be written (read-only or full disk)"),
    (INTERRUPTED, "interrupted"),
]
"""Every exit code and its meaning, for ``wiki --help`` (docs/cli.md has the same table)."""

LOUD = ("error", "internal error", "warning", "interrupted")
"""Talk that ``--quiet`` still lets through."""


class Talk:
    """How much goes to stderr: ``level`` -1 with ``--quiet`` (errors and warnings only),
    0 by default, 1 with ``--verbose`` (also which wiki, library logs, timing and the
    traceback of an internal error)."""

    level = 0


talk = Talk()


def exit_code_for(error: Exception) -> int:
    """The documented exit code of a domain error."""
    for kind, code in EXIT_CODES:
        if isinstance(error, kind):
            return code
    return INTERNAL


def report(message: str) -> None:
    """Write one line of talk to stderr (with ``--quiet``, only errors and warnings); stored
    text in it is shown safely (secrets masked, control characters inert)."""
    if talk.level < 0 and not message.startswith(LOUD):
        return
    typer.echo(shown(message), err=True)


class WikiGroup(TyperGroup):
    """The top-level command group: maps domain errors to one line and an exit code, and
    unexpected ones to a log file and exit 70, so no user error shows a traceback."""

    def invoke(self, ctx):
        from wiki.llm.usage import command_scope  # light: no model library

        # `-C DIR` holds for this invocation only; the notices are this invocation's
        # (a context variable: an embedding program may run commands in several threads)
        with _working_directory_kept(), collect_notices():
            return self._invoke(ctx, command_scope)

    def _invoke(self, ctx, command_scope):
        try:
            with command_scope():  # one [llm] timeout for the whole command
                result = super().invoke(ctx)
        except (WikiError, IndexesError) as error:
            report_notices()
            report(f"error: {one_line(str(error))}")
            raise typer.Exit(exit_code_for(error)) from None
        except KeyboardInterrupt:
            report_notices()
            report("interrupted")
            raise typer.Exit(INTERRUPTED) from None
        except Exception as error:
            report_notices()
            if type(error).__module__.split(".")[0] in ("click", "typer"):
                raise  # usage errors and exits: the CLI framework reports them (exit 2)
            if isinstance(error, UnicodeEncodeError) and "surrogates" in str(error):
                # bytes that are not UTF-8 in an argument or a file name (Python keeps
                # them as surrogates): a usage error, not a bug
                text = error.object if isinstance(error.object, str) else ""
                near = text[max(0, error.start - 30):error.end + 30]
                near = near.encode("utf-8", "surrogateescape").decode(
                    "utf-8", "backslashreplace").replace("\n", "\\n")
                report(f"error: an argument or a file name is not valid UTF-8 text (at "
                       f"'{near}'); wiki takes UTF-8 names, ids, keys and queries")
                raise typer.Exit(USAGE) from None
            unavailable = as_index_error(error)
            if unavailable is not None:  # the index database broke off mid-command
                report(f"error: {unavailable}")
                raise typer.Exit(exit_code_for(unavailable)) from None
            storage = storage_error(error, getattr(error, "filename", None) or "a file",
                                    anywhere=True)
            if storage is not None:  # a write the disk refused, wherever it happened
                report(f"error: {storage}")
                raise typer.Exit(STORAGE) from None
            # a bug: keep the details, show one line
            try:
                log = _write_crash_log()
            except OSError as exc:  # the temp folder is full or read-only too
                log = f"no log file: {exc.strerror}"
            if talk.level > 0:
                typer.echo(shown(traceback.format_exc().rstrip()), err=True)
            report(f"internal error: {type(error).__name__}: {error} (details in {log}; "
                   "please report it)")
            raise typer.Exit(INTERNAL) from None
        report_notices()
        return result


@contextlib.contextmanager
def _working_directory_kept():
    """Restore the process's working directory after a command: ``wiki -C DIR`` changes it
    (like ``git -C``), which must not outlive the invocation when the CLI runs in-process
    (tests, an embedding program)."""
    try:
        cwd = os.getcwd()
    except OSError:  # already gone: nothing to go back to
        cwd = None
    try:
        yield
    finally:
        if cwd is not None:
            with contextlib.suppress(OSError):
                os.chdir(cwd)


def report_notices() -> None:
    """Report the notices this command has recorded so far
    (:func:`wiki.store.notices.take_notices`, the command's own collector opened by
    :class:`WikiGroup`), one line each on stderr."""
    for notice in take_notices():
        report(notice)


def _write_crash_log() -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    handle, name = tempfile.mkstemp(prefix=f"wiki-crash-{stamp}-", suffix=".log")
    os.close(handle)
    path = Path(name)
    path.write_text(f"wiki {' '.join(sys.argv[1:])}\n\n{traceback.format_exc()}",
                    encoding="utf-8", errors="backslashreplace")
    return path
