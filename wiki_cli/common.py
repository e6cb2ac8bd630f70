"""The typer app, its global options and the helpers every command module shares."""

from __future__ import annotations

import datetime as dt
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wiki_cli import __version__
from wiki_cli.errors import USAGE, WikiGroup, report
from wiki_cli.render import err

app = typer.Typer(
    cls=WikiGroup,
    help="A git-native markdown knowledge base: ingest, review, search and ask.\n\n"
         "Exit codes: 0 ok, 1 findings/not found, 2 usage or config error, 3 evidence gap, "
         "4 conflict (wiki moved, stale proposal), 5 refused by review policy, "
         "70 internal error, 130 interrupted.",
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
LegsOption = Annotated[str | None, typer.Option(
    "--legs", help="Comma-separated legs to run: alias,bm25,vector,llm (default: "
                   "wiki.toml; llm needs a model, see docs/llm.md).")]
LEG_NAMES = ("alias", "bm25", "vector", "llm")
RerankOption = Annotated[bool, typer.Option(
    "--rerank", help="Re-order the top hits with the LLM (needs a model).")]
VerboseOption = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Report what the LLM did and cost on stderr.")]
AsOfOption = Annotated[str | None, typer.Option(
    "--as-of", help="Answer from the wiki as it was then (YYYY-MM-DD or ISO time, UTC).")]


def parse_as_of(value: str | None) -> dt.datetime | None:
    """``--as-of`` as an aware UTC time; a bare date means the end of that day."""
    if value is None:
        return None
    try:
        if len(value.strip()) == 10:
            day = dt.date.fromisoformat(value.strip())
            return dt.datetime.combine(day, dt.time(23, 59, 59), dt.UTC)
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        report(f"error: --as-of {value!r} is not a date (YYYY-MM-DD) or ISO 8601 time")
        raise typer.Exit(USAGE) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def parse_legs(value: str | None) -> tuple[str, ...] | None:
    """``--legs a,b`` as a tuple of leg names (exit 2 on an unknown leg)."""
    if value is None:
        return None
    legs = tuple(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
    bad = [leg for leg in legs if leg not in LEG_NAMES]
    if bad or not legs:
        report(f"error: --legs takes {','.join(LEG_NAMES)}; got {value!r}")
        raise typer.Exit(USAGE)
    return legs


@contextmanager
def embedding_progress(quiet: bool):
    """A progress bar on stderr for embedding entries that have no vector yet."""
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True,
                  disable=quiet or not err.is_terminal) as bar:  # no bar in logs
        task = None

        def progress(done: int, total: int) -> None:
            nonlocal task
            if task is None:
                task = bar.add_task("", total=total)
            bar.update(task, completed=done, total=total)

        yield progress


def _version(value: bool) -> None:
    if value:
        typer.echo(f"wiki {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    repo: RepoOption = Path("."),
    branch: Annotated[str | None, typer.Option(
        "--branch", envvar="WIKI_BRANCH",
        help="Wiki branch (default: git config wiki.branch, else 'wiki').")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Show the version and exit.")] = False,
) -> None:
    """Options shared by every command."""
    if repo != Path("."):
        try:  # like `git -C`: relative paths given to commands are read from there
            os.chdir(repo)
        except OSError as exc:
            report(f"error: -C {repo}: {exc.strerror}")
            raise typer.Exit(USAGE) from None
    state.repo = Path(".")
    state.branch = branch


def open_wiki():
    """The wiki of the current directory (``-C`` already applied) and ``--branch``."""
    from wiki.workspace import Wiki
    return Wiki(state.repo, state.branch)


def report_llm(llm: dict | None, verbose: bool) -> None:
    """Notes on the LLM's work on stderr: why it stopped early (always) and, with
    ``verbose``, its calls, tokens, cache hits and seconds."""
    if not llm:
        return
    for reason in llm["stopped"]:
        report(f"note: llm {reason}")
    if verbose and llm["model"]:
        u, cost = llm["usage"], llm.get("walk_cost") or {}
        cached = (f" (walk from cache; computing it took {cost.get('calls', '?')} calls)"
                  if llm["walk_cached"] else "")
        report(f"llm {llm['model']}: {u['calls']} calls, {u['cache_hits']} cache hits, "
               f"{u['prompt_tokens']} prompt + {u['completion_tokens']} completion tokens, "
               f"{u['seconds']:.1f} s{cached}")


def require_text(value: str, name: str) -> None:
    """Exit 2 with a one-line error when ``value`` is empty or blank."""
    if not value.strip():
        report(f"error: the {name} is empty")
        raise typer.Exit(USAGE)
