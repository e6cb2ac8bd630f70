"""Commands that set up and maintain a wiki: init, ingest, index, status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from wiki_cli.common import (
    JsonOption,
    RedactOption,
    app,
    embedding_progress,
    open_wiki,
    report_llm,
    report_proposal,
    require_text,
)
from wiki_cli.errors import FINDINGS, report
from wiki_cli.render import err, out, plain, print_json, table, to_jsonable


@app.command()
def init() -> None:
    """Create the wiki branch (with wiki.toml and index.md) in this repository, and its
    (empty) derived index, so `wiki status` reads current from the start."""
    from wiki.upkeep import init_wiki

    wiki = open_wiki()
    commit = init_wiki(wiki)
    report(f"created wiki branch '{wiki.branch}' at {commit[:12]}")
    out.print(commit)


@app.command()
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files or folders of markdown/text.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report without proposing.")] = False,
    distill: Annotated[bool, typer.Option(
        "--distill", help="Have the LLM split each source into atomic entries, checked "
                          "against the source and merged with existing ones (needs a model; "
                          "docs/llm.md).")] = False,
    redact: RedactOption = False,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Recompile entries edited since they were compiled too "
                            "(default: leave them alone and list them).")] = False,
    json_output: JsonOption = False,
) -> None:
    """Compile sources into entries and propose them (approve with `wiki approve`)."""
    from wiki.ingest.pipeline import ingest as run_ingest

    for path in paths:
        require_text(path, "path")
    wiki = open_wiki()
    distiller = _distiller(wiki) if distill else None
    with Progress(TextColumn("distil" if distill else "ingest"), BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.description}"),
                  console=err, transient=True,
                  disable=json_output or not err.is_terminal) as bar:
        task = bar.add_task("", total=None)

        def progress(done: int, total: int, path: str) -> None:
            bar.update(task, completed=done, total=total, description=path[-50:])

        result = run_ingest(wiki, [Path(p) for p in paths], progress=progress, dry_run=dry_run,
                            redact=redact, distiller=distiller, overwrite=overwrite)
    if json_output:
        print_json({**to_jsonable(result), **({"distill": distiller.report,
                                               "llm": distiller.llm()} if distiller else {})})
    for skipped in result.skipped:
        report(f"skipped {skipped.path}: {skipped.reason}")
    for new, old in result.renamed.items():
        report(f"renamed {old} -> {new}: its entries keep their ids")
    for path in result.conflicts:
        report(f"conflict: {path} was edited since it was compiled; not overwritten — "
               "decide: merge the source's change by hand (wiki propose --edit), or re-run "
               "with --overwrite")
    if distiller is not None:
        _report_distilled(distiller)
    report(f"{result.sources} sources read ({result.unchanged_sources} unchanged), "
           f"{len(result.skipped)} skipped; entries: {result.added} new, "
           f"{result.updated} updated, {result.retracted} retracted")
    if result.proposal is not None and not json_output:
        report_proposal(result.proposal, result.proposal_created, None)
    elif result.sources == 0 and not json_output:
        report("nothing ingested: no readable source among the given paths")
    elif result.changed == 0 and result.conflicts and not json_output:
        held = len(result.conflicts)
        report(f"nothing to propose: the sources' only changes are for {held} "
               f"entr{'y' if held == 1 else 'ies'} edited by hand, held back (see the "
               "conflict line above)")
    elif result.changed == 0 and not json_output:
        report("nothing to propose: the wiki already matches these sources")
    if result.sources == 0:
        raise typer.Exit(FINDINGS)


def _distiller(wiki):
    """The ingest hook with the configured model (exit 2 without one)."""
    from wiki.knowledge.distill import Distiller
    from wiki.llm.settings import require_client

    return Distiller(wiki, require_client(wiki))


def _report_distilled(distiller) -> None:
    """Distillation notes on stderr: fallbacks, dropped drafts, counts and the LLM's cost."""
    done = distiller.report
    for fallback in done.fallbacks:
        report(f"note: {fallback['path']}: ingested without distilling: {fallback['reason']}")
    for drop in done.dropped:
        report(f"dropped ({drop['why']}): {drop['source']}: {drop['claim']}")
    report(f"distilled {done.sources} sources: {done.proposed} drafts, {done.kept} kept "
           f"({done.new} new, {done.updated} updates, {done.superseded} supersessions, "
           f"{done.known} already known), {len(done.dropped)} dropped")
    report_llm(distiller.llm(), True)


@app.command("index")
def index_command(
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Rebuild from scratch.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Bring the derived search index (full text and vectors) up to the wiki branch, or
    rebuild it from scratch."""
    from wiki.upkeep import update_index

    wiki = open_wiki()
    with embedding_progress(json_output) as progress:
        done = update_index(wiki, rebuild=rebuild, progress=progress)
    result, note = done.sync, done.vectors
    if json_output:
        print_json({**vars(result), "embedded": done.embedded, "embedded_chunks": done.embedded,
                    "vectors": note})
    else:
        report(f"indexed {result.commit[:12]}: {result.added} added, {result.updated} updated, "
               f"{result.removed} removed, {len(result.invalid)} invalid; "
               f"{done.embedded_text()} ({note})")
        for _path, message in result.invalid:
            report(f"invalid entry left out: {message}")


@app.command()
def status(json_output: JsonOption = False) -> None:
    """Branch head, indexed commit and counts; exit 1 when the index is behind or
    entries are invalid, 2 when there is no wiki branch."""
    from wiki.status import wiki_status

    info = wiki_status(open_wiki())
    if json_output:
        print_json(info)
    else:
        grid = table("", "")
        for key, value in info.rows():
            grid.add_row(key, plain(str(value)))
        out.print(grid)
    if not info.healthy:
        raise typer.Exit(FINDINGS)


