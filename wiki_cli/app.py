"""The ``wiki`` command: parse, call one function of ``wiki``, render. Nothing else."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wiki_cli import __version__
from wiki_cli.errors import FINDINGS, GAP, USAGE, WikiGroup, report
from wiki_cli.render import err, out, plain, print_json, table

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
    "--legs", help="Comma-separated legs to run: alias,bm25,vector (default: wiki.toml).")]
LEG_NAMES = ("alias", "bm25", "vector")


def _legs(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    legs = tuple(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
    bad = [leg for leg in legs if leg not in LEG_NAMES]
    if bad or not legs:
        report(f"error: --legs takes {','.join(LEG_NAMES)}; got {value!r}")
        raise typer.Exit(USAGE)
    return legs


@contextmanager
def _embedding_progress(quiet: bool):
    """A progress bar on stderr for embedding entries that have no vector yet."""
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=True, disable=quiet) as bar:
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


def _wiki():
    from wiki.workspace import Wiki
    return Wiki(state.repo, state.branch)


@app.command()
def init() -> None:
    """Create the wiki branch (with wiki.toml and index.md) in this repository."""
    wiki = _wiki()
    commit = wiki.init()
    report(f"created wiki branch '{wiki.branch}' at {commit[:12]}")
    out.print(commit)


@app.command()
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files or folders of markdown/text.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report without proposing.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Compile sources into entries and propose them (approve with `wiki approve`)."""
    from wiki.ingest import ingest as run_ingest

    for path in paths:
        _require_text(path, "path")
    wiki = _wiki()
    with Progress(TextColumn("ingest"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.description}"),
                  console=err, transient=True, disable=json_output) as bar:
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=path[-50:])

        result = run_ingest(wiki, [Path(p) for p in paths], progress=progress, dry_run=dry_run)
    if json_output:
        print_json(result)
    for skipped in result.skipped:
        report(f"skipped {skipped.path}: {skipped.reason}")
    report(f"{result.sources} sources read ({result.unchanged_sources} unchanged), "
           f"{len(result.skipped)} skipped; entries: {result.added} new, "
           f"{result.updated} updated, {result.retracted} retracted")
    if result.proposal is not None and not json_output:
        verb = "proposed" if result.proposal_created else "already proposed as"
        report(f"{verb} {result.proposal.name}: review with `git log -p "
               f"{result.proposal.ref}`, land with `wiki approve {result.proposal.name}` "
               "(by someone else)")
        out.print(result.proposal.name)
    elif result.sources == 0 and not json_output:
        report("nothing ingested: no readable source among the given paths")
    elif result.changed == 0 and not json_output:
        report("nothing to propose: the wiki already matches these sources")
    if result.sources == 0:
        raise typer.Exit(FINDINGS)


@app.command("proposals")
def list_proposals(json_output: JsonOption = False) -> None:
    """List open proposals: name, author, age, entries touched, stale or not."""
    from wiki.proposals import list_proposals as run

    proposals = run(_wiki())
    if json_output:
        print_json(proposals)
        return
    if not proposals:
        report("no open proposals")
        return
    grid = table("proposal", "author", "created", "paths", "state", "subject")
    for p in proposals:
        grid.add_row(p.name, str(p.authors[0]) if p.authors else "?",
                     p.created.strftime("%Y-%m-%d %H:%M"), str(len(p.paths)),
                     "behind" if p.stale else "current", plain(p.subject))
    out.print(grid)


@app.command()
def approve(
    proposal: Annotated[str, typer.Argument(help="Proposal name (see `wiki proposals`).")],
    json_output: JsonOption = False,
) -> None:
    """Approve a proposal and land it on the wiki branch (compare-and-swap)."""
    from wiki.proposals import approve as run

    landing = run(_wiki(), proposal)
    if json_output:
        print_json(landing)
        return
    how = "merged onto the moved wiki" if landing.merged else "landed"
    report(f"{how}: {landing.proposal} approved by {landing.approver}")
    out.print(landing.commit)


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 10,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show each leg's rank and score.")] = False,
    category: Annotated[str | None, typer.Option("--category", help="Folder prefix.")] = None,
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", help="Required tag (repeatable).")] = None,
    include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
    legs: LegsOption = None,
    json_output: JsonOption = False,
) -> None:
    """Rank entries for QUERY: alias/title, BM25 and vector legs fused by weighted RRF."""
    from wiki.search import filters_for
    from wiki.search import search as run

    _require_text(query, "query")
    with _embedding_progress(json_output) as progress:
        result = run(_wiki(), query, limit=limit, legs=_legs(legs), progress=progress,
                     filters=filters_for(include_superseded=include_superseded,
                                         category=category, tags=tuple(tag or ())))
    for leg, reason in result.skipped.items():
        report(f"note: {leg} leg skipped: {reason}")
    if json_output:
        print_json({"query": query, "commit": result.commit,
                    "confidence": round(result.confidence, 4), "gap": result.gap,
                    "hits": [_hit_json(h, result.sources.get(h.key, [])) for h in result.hits]})
        if not result.hits:
            raise typer.Exit(FINDINGS)
        return
    if not result.hits:
        report("no matches")
        raise typer.Exit(FINDINGS)
    grid = table("#", "score", "title", "path", *(["legs"] if explain else []))
    for hit in result.hits:
        legs = ", ".join(f"{leg} #{r} ({s:.3f})" for leg, (r, s) in hit.legs.items())
        grid.add_row(str(hit.rank), f"{hit.score:.3f}", plain(hit.title), plain(hit.key),
                     *([legs] if explain else []))
    out.print(grid)
    if explain:
        report(f"confidence {result.confidence:.2f} (evidence gap below "
               f"{result.threshold:.2f}); commit {result.commit[:12]}")


def _hit_json(hit, sources) -> dict:
    return {"rank": hit.rank, "score": round(hit.score, 6), "id": hit.doc_id, "path": hit.key,
            "title": hit.title, "summary": hit.summary, "category": hit.category,
            "status": hit.status, "sources": sources,
            "legs": {leg: {"rank": r, "score": round(s, 6)} for leg, (r, s) in hit.legs.items()}}


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question in plain words.")],
    category: Annotated[str | None, typer.Option("--category", help="Folder prefix.")] = None,
    include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
    legs: LegsOption = None,
    json_output: JsonOption = False,
) -> None:
    """Answer QUESTION from the wiki with cited sentences; exit 3 on an evidence gap."""
    from wiki.ask import ask as run

    _require_text(question, "question")
    with _embedding_progress(json_output) as progress:
        answer = run(_wiki(), question, category=category, legs=_legs(legs),
                     include_superseded=include_superseded, progress=progress)
    if json_output:
        print_json({**{k: v for k, v in vars(answer).items() if k != "sentences"},
                    "gap": answer.gap,
                    "sentences": [{"text": t, "citation": n} for t, n in answer.sentences]})
    elif answer.gap:
        out.print(plain(f"The wiki does not say (confidence {answer.confidence:.2f} < "
                        f"{answer.threshold:.2f}). The question was recorded as an evidence gap."))
    else:
        for text, number in answer.sentences:
            out.print(plain(f"{text} [{number}]"))
        out.print()
        for citation in answer.citations:
            sources = ", ".join(citation.sources) or "no source"
            out.print(plain(f"[{citation.number}] {citation.title} — {citation.path} "
                            f"(id {citation.entry_id}; from {sources})"))
    if answer.gap:
        raise typer.Exit(GAP)


@app.command()
def show(
    target: Annotated[str, typer.Argument(help="Entry id or path on the wiki branch.")],
    json_output: JsonOption = False,
) -> None:
    """Print one entry or file of the wiki as stored (--json: parsed fields)."""
    from wiki.lookup import find_entry, raw_file

    wiki = _wiki()
    raw = None if json_output else raw_file(wiki, target)
    if raw is not None:  # any file on the branch, valid entry or not, shown as stored
        out.file.write(raw.decode("utf-8", "replace"))
        return
    entry = find_entry(wiki, target)
    if json_output:
        print_json({"path": entry.path, "id": entry.id, "meta": entry.meta, "body": entry.body})
        return
    out.file.write(entry.to_bytes().decode("utf-8"))


@app.command("index")
def index_command(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild from scratch.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Bring the derived search index (full text and vectors) up to the wiki branch, or
    rebuild it from scratch."""
    from wiki.derived import open_synced
    from wiki.derived import rebuild as run_rebuild
    from wiki.embedding import refresh_vectors

    wiki = _wiki()
    if rebuild:
        result = run_rebuild(wiki)
    else:
        index, result = open_synced(wiki)
        index.close()
    with _embedding_progress(json_output) as progress:
        embedded, note = refresh_vectors(wiki, progress=progress)
    if json_output:
        print_json({**vars(result), "embedded": embedded, "vectors": note})
    else:
        report(f"indexed {result.commit[:12]}: {result.added} added, {result.updated} updated, "
               f"{result.removed} removed, {len(result.invalid)} invalid; "
               f"{embedded} chunks embedded ({note})")
        for _path, message in result.invalid:
            report(f"invalid entry left out: {message}")


@app.command()
def status(json_output: JsonOption = False) -> None:
    """Branch head, indexed commit and counts; exit 1 when the index is behind or
    entries are invalid, 2 when there is no wiki branch."""
    from wiki.status import wiki_status

    info = wiki_status(_wiki())
    if json_output:
        print_json(info)
    else:
        grid = table("", "")
        for key, value in info.rows():
            grid.add_row(key, plain(str(value)))
        out.print(grid)
    if not info.healthy:
        raise typer.Exit(FINDINGS)


def _require_text(value: str, name: str) -> None:
    if not value.strip():
        report(f"error: the {name} is empty")
        raise typer.Exit(USAGE)


def main() -> None:
    """Console-script entry point."""
    app(prog_name="wiki")
