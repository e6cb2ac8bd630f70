"""The typer app, its global options and the helpers every command module shares."""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperCommand

from indexes.retrieval.legs import LEG_NAMES
from indexes.retrieval.legs import parse_legs as legs_from
from wiki.errors import UsageError
from wiki_cli import __version__
from wiki_cli.errors import EXIT_CODE_MEANINGS, WikiGroup, report, talk
from wiki_cli.inert import masked_note, shown, tally
from wiki_cli.payloads import as_of_time
from wiki_cli.payloads import require_text as check_text
from wiki_cli.render import err, out


class PlainUsage(TyperCommand):
    """A command whose arguments are named in capitals (``PROPOSAL``, ``[FILE]``,
    ``PATHS...``) in its usage line, help and errors, not as typer's ``{proposal}``
    (read as a template left unfilled). An argument given its own ``metavar`` keeps it."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument" and param.metavar is None and param.name:
                param.metavar = param.name.upper()

    def collect_usage_pieces(self, ctx) -> list[str]:
        """``[OPTIONS]`` and each argument as ``NAME``, ``[NAME]`` (optional) and
        ``NAME...`` (repeated), written here rather than by typer, whose form differs
        between releases (``{name}`` in 0.29, no ``...`` for a named one in 0.28)."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name != "argument":
                pieces.extend(param.get_usage_pieces(ctx))
                continue
            name = param.metavar or (param.name or "").upper()
            name = name if param.required else f"[{name}]"
            pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


class WikiTyper(typer.Typer):
    """``typer.Typer`` whose commands are :class:`PlainUsage` unless one names its own
    class: every command and sub-command, written once here."""

    def command(self, *args, **kwargs):
        """:meth:`typer.Typer.command`, with ``cls`` defaulting to :class:`PlainUsage`."""
        kwargs["cls"] = kwargs.get("cls") or PlainUsage
        return super().command(*args, **kwargs)


app = WikiTyper(
    cls=WikiGroup,
    help="A git-native markdown knowledge base: ingest, review, search and ask.",
    epilog="\b\nExit codes:\n" + "\n".join(f"  {code:>3}  {meaning}"
                                          for code, meaning in EXIT_CODE_MEANINGS),
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


class State:
    repo: Path = Path(".")
    branch: str | None = None


state = State()

RepoOption = Annotated[Path, typer.Option("--repo", "-C", help="Repository to use.",
                                          show_default=False)]
JsonOption = Annotated[bool, typer.Option("--json", help="Write JSON to stdout.")]


def parse_legs(value: str | None) -> tuple[str, ...] | None:
    """``--legs a,b`` as a tuple of leg names (:class:`indexes.retrieval.legs.Leg`); an unknown leg
    raises :class:`UsageError` (exit 2) through the one error path."""
    if value is None or isinstance(value, tuple):  # typer may hand back a parsed default
        return value
    try:
        return legs_from(value, "--legs")
    except ValueError as exc:
        raise UsageError(str(exc)) from None


LegsOption = Annotated[str | None, typer.Option(
    "--legs", parser=parse_legs, metavar="LEGS",
    help=f"Comma-separated legs to run: {','.join(LEG_NAMES)} (default: "
         "wiki.toml; llm needs a model, see docs/llm.md).")]
RerankOption = Annotated[bool, typer.Option(
    "--rerank", help="Re-order the top hits with the LLM (needs a model).")]
VerboseOption = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Report what the LLM did and cost on stderr.")]
RedactOption = Annotated[bool, typer.Option(
    "--redact", help="Replace secrets (tokens, keys, passwords) with [REDACTED:<kind>] "
                     "instead of refusing the text.")]
AsOfOption = Annotated[str | None, typer.Option(
    "--as-of", help="Answer from the wiki as it was then (YYYY-MM-DD or ISO time, UTC).")]

RouteOption = Annotated[bool | None, typer.Option(
    "--route/--no-route", help="Route the question to its category folder(s) first and "
                               "favour them (default: [search] route in wiki.toml, off; "
                               "needs the vector leg).", show_default=False)]

ScopeOption = Annotated[str | None, typer.Option(
    "--scope", help="Only entries of this scope (a `scope:` field, else the top folder).")]
ExpiredOption = Annotated[bool, typer.Option(
    "--include-expired", help="Also entries past valid_until or their type's lifetime.")]


def parse_as_of(value: str | None) -> dt.datetime | None:
    """``--as-of`` as an aware UTC time; a bare date means the end of that day."""
    return as_of_time(value)


PLAIN_PROGRESS_MIN = 256
"""Fewer pending texts than this (a build, :data:`indexes.sqlite.vectors.BULK`) print no plain
progress lines: a search that embeds a few new entries stays quiet in a pipe."""
PLAIN_PROGRESS_SECONDS = 30.0
"""With stderr not a terminal, a plain progress line at least this often (besides the
25/50/75% lines)."""


class PlainProgress:
    """``progress(done, total)`` for a log (stderr not a terminal, as under ``make demo >
    log`` or CI): one plain line, ``embedding: 488/1952 texts (25%, 12 s, 41 texts/s, about
    36 s left)``, when a quarter (25, 50, 75%) is passed and at least every
    :data:`PLAIN_PROGRESS_SECONDS` in between, none when the job is done (the command's own
    report follows) and none for jobs under :data:`PLAIN_PROGRESS_MIN` texts. ``clock``
    gives seconds (``time.monotonic``)."""

    def __init__(self, what: str = "embedding", clock=time.monotonic) -> None:
        self.what, self.clock = what, clock
        self.start = self.last = clock()
        self.quarter = 0

    def __call__(self, done: int, total: int) -> None:
        if done == 0:  # the work starts now (after the model loaded): time from here
            self.start = self.last = self.clock()
            return
        if total < PLAIN_PROGRESS_MIN or done >= total:
            return
        now = self.clock()
        quarter = 4 * done // total
        if quarter > self.quarter or now - self.last >= PLAIN_PROGRESS_SECONDS:
            self.quarter, self.last = max(quarter, self.quarter), now
            spent = now - self.start
            pace = ""
            if spent > 0 and done > 0:
                rate = done / spent
                pace = f", {rate:.0f} texts/s, about {(total - done) / rate:.0f} s left"
            report(f"{self.what}: {done}/{total} texts ({100 * done // total}%, "
                   f"{spent:.0f} s{pace})")


@contextmanager
def embedding_progress(quiet: bool):
    """Progress on stderr while embedding texts that have no vector yet: a bar with the
    count, the rate and the time left when stderr is a terminal, plain lines
    (:class:`PlainProgress`) when it is not; nothing with ``quiet`` (``--json``) or
    ``--quiet`` (rich.progress is imported only for the bar)."""
    if quiet or err.quiet:
        yield lambda done, total: None
        return
    if not err.is_terminal:  # a log: a plain line now and then, no bar
        yield PlainProgress()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    rate = TextColumn("{task.fields[rate]}")
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), rate,
                  TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                  console=err, transient=True) as bar:
        task = None

        def progress(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task("", total=total, rate="")
            speed = bar.tasks[0].speed if bar.tasks else None
            bar.update(task, completed=done, total=total,
                       rate=f"{speed:.0f} texts/s" if speed else "")

        yield progress


def index_after_landing(wiki, quiet: bool) -> None:
    """After approve or sync landed entries: embed their chunks now, with
    :func:`embedding_progress` (``quiet``: ``--json``), and say on stderr how many
    (:func:`wiki.upkeep.index_landed`); a fault is one note, the landing stands."""
    from wiki.upkeep import index_landed

    with embedding_progress(quiet) as progress:
        done = index_landed(wiki, progress=progress)
    if isinstance(done, str):
        report(f"note: {done}")
    elif done is not None and done.embedded and not quiet:
        report(f"{done.embedded_text()} ({done.vectors})")


def _version(value: bool) -> None:
    if value:
        out.print(f"wiki {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    repo: RepoOption = Path("."),
    branch: Annotated[str | None, typer.Option(
        "--branch", envvar="WIKI_BRANCH",
        help="Wiki branch (default: git config wiki.branch, else 'wiki').")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Only errors and warnings on stderr: no notes, no progress.")]
    = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="More on stderr: which wiki and database, library logs, "
                                "timing, the traceback of an internal error.")] = False,
) -> None:
    """Options shared by every command."""
    if quiet and verbose:
        raise UsageError("--quiet and --verbose cannot be used together")
    set_talk(-1 if quiet else 1 if verbose else 0, ctx)
    ctx.with_resource(embedder_scope())
    tally.reset()
    ctx.call_on_close(_report_masked)
    if repo != Path("."):
        try:  # like `git -C`: relative paths given to commands are read from there
            os.chdir(repo)
        except OSError as exc:
            raise UsageError(f"-C {repo}: {exc.strerror}") from None
    try:  # a shell still standing in a folder that was removed (or replaced)
        os.getcwd()
    except OSError:
        raise UsageError("the current folder no longer exists (deleted or moved): cd into "
                         "the repository again, or pass -C PATH") from None
    state.repo = Path(".")
    state.branch = branch


def embedder_scope():
    """The user's embedding settings (``WIKI_EMBED_*``), read once for this command and in
    force until it ends; slow one-time steps of the model (preparing its ONNX copy) are
    reported on stderr (not with ``--quiet``)."""
    from wiki.answering.embed_settings import resolve_spec, using

    return using(resolve_spec(notify=report))


def _report_masked() -> None:
    """Say once, at the end of the command, how many secrets its output masked."""
    note = masked_note()
    if note:
        report(note)


class InertFormatter(logging.Formatter):
    """Library log lines on stderr with secrets masked and control characters inert
    (a log message may quote stored text)."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record))


def set_talk(level: int, ctx: typer.Context | None = None) -> None:
    """Apply ``--quiet`` (-1) / ``--verbose`` (1): stderr talk, progress bars, library logs
    and the command's timing. Set on every invocation (tests run many in one process)."""
    talk.level = level
    err.quiet = level < 0  # progress bars
    handler = next((h for h in logging.getLogger("wiki").handlers
                    if getattr(h, "wiki_cli", False)), None)
    if level > 0 and handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler.wiki_cli = True  # type: ignore[attr-defined]
        handler.setFormatter(InertFormatter("%(name)s: %(message)s"))
        for name in ("wiki", "indexes"):
            logging.getLogger(name).addHandler(handler)
            logging.getLogger(name).setLevel(logging.INFO)
    elif level <= 0 and handler is not None:
        for name in ("wiki", "indexes"):
            logging.getLogger(name).removeHandler(handler)
            logging.getLogger(name).setLevel(logging.NOTSET)
    if level > 0 and ctx is not None:
        started = time.monotonic()
        ctx.call_on_close(
            lambda: report(f"took {time.monotonic() - started:.2f}s"))


def open_wiki():
    """The wiki of the current directory (``-C`` already applied) and ``--branch``."""
    from wiki.store.workspace import Wiki
    wiki = Wiki(state.repo, state.branch)
    if talk.level > 0:
        report(f"wiki: branch '{wiki.branch}' of {wiki.repo.common_dir}, "
               f"index {wiki.database_path()}")
    return wiki


def report_flags(proposal) -> None:
    """Warn on stderr about each flag the review check raised on ``proposal``
    (:mod:`wiki.review.check`): approving it will need ``--override-flags``."""
    for flag in proposal.flags:
        where = f"{flag.path}:{flag.line}:{flag.column}" if flag.line else flag.path
        report(f"warning: {where}: {flag.kind} ({flag.rule}) flagged for the reviewer")
    if proposal.flags:
        report("warning: approving it will need `wiki approve --override-flags REASON`"
               + ("" if all(f.overridable for f in proposal.flags)
                  else "; secrets cannot be overridden"))


def proposed_line(name: str, created: bool = True) -> str:
    """The one line that says a proposal is open and how it lands (every command that
    proposes says it this way)."""
    verb = "proposed" if created else "already proposed as"
    return (f"{verb} {name}: review with `wiki diff {name}`, land with "
            f"`wiki approve {name}` (by someone else)")


def report_proposal(proposal, created: bool, existing: str | None, *,
                    nothing: str = "nothing to propose", name_on_stdout: bool = True) -> None:
    """Report a proposal just opened (or found open with the same result): its flags and
    how to land it on stderr (:func:`proposed_line`), its name on stdout; without one,
    that ``existing`` already says this."""
    if proposal is None:
        report(f"{nothing}: {existing} already says this")
        return
    report_flags(proposal)
    report(proposed_line(proposal.name, created))
    if name_on_stdout:
        out.print(proposal.name)


def report_llm(llm: dict | None, verbose: bool) -> None:
    """Notes on the LLM's work on stderr: why it stopped early (always) and, with
    ``verbose`` (the command's ``--verbose``, or the global ``wiki -v``), its calls,
    tokens, cache hits and seconds."""
    if not llm:
        return
    for reason in llm["stopped"]:
        report(f"note: llm {reason}")
    if (verbose or talk.level > 0) and llm["model"]:
        u, cost = llm["usage"], llm.get("walk_cost") or {}
        cached = (f" (walk from cache; computing it took {cost.get('calls', '?')} calls)"
                  if llm["walk_cached"] else "")
        report(f"llm {llm['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
               f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens, "
               f"{u['seconds']:.1f} s{cached}")


def require_text(value: str, name: str) -> None:
    """Exit 2 with a one-line error when ``value`` is empty or blank."""
    check_text(value, name)
