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
| 130  | interrupted (Ctrl-C) |
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import tempfile
import traceback
from pathlib import Path

import typer
from typer.core import TyperGroup

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
    WikiError,
)

OK, FINDINGS, USAGE, GAP, CONFLICT, REFUSED, INTERNAL, INTERRUPTED = 0, 1, 2, 3, 4, 5, 70, 130

EXIT_CODES: list[tuple[type[Exception], int]] = [
    (EmptyQueryError, USAGE),
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
    (WikiError, FINDINGS),
    (IndexBusyError, CONFLICT),
    (IndexesError, USAGE),
]


EXIT_CODE_MEANINGS: list[tuple[int, str]] = [
    (OK, "ok"), (FINDINGS, "findings, or not found / already exists"),
    (USAGE, "usage or configuration error"), (GAP, "evidence gap (wiki ask)"),
    (CONFLICT, "conflict: the wiki moved, or a stale proposal"),
    (REFUSED, "refused by review policy"), (INTERNAL, "internal error (details in a log file)"),
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
    """Write one line of talk to stderr (with ``--quiet``, only errors and warnings)."""
    if talk.level < 0 and not message.startswith(LOUD):
        return
    typer.echo(message, err=True)


class WikiGroup(TyperGroup):
    """The top-level command group: maps domain errors to one line and an exit code, and
    unexpected ones to a log file and exit 70, so no user error shows a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (WikiError, IndexesError) as error:
            report(f"error: {error}")
            raise typer.Exit(exit_code_for(error)) from None
        except KeyboardInterrupt:
            report("interrupted")
            raise typer.Exit(INTERRUPTED) from None
        except Exception as error:
            if type(error).__module__.split(".")[0] in ("click", "typer"):
                raise  # usage errors and exits: the CLI framework reports them (exit 2)
            # a bug: keep the details, show one line
            log = _write_crash_log()
            if talk.level > 0:
                typer.echo(traceback.format_exc().rstrip(), err=True)
            report(f"internal error: {type(error).__name__}: {error} (details in {log}; "
                   "please report it)")
            raise typer.Exit(INTERNAL) from None


def _write_crash_log() -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    handle, name = tempfile.mkstemp(prefix=f"wiki-crash-{stamp}-", suffix=".log")
    os.close(handle)
    path = Path(name)
    path.write_text(f"wiki {' '.join(sys.argv[1:])}\n\n{traceback.format_exc()}",
                    encoding="utf-8")
    return path
