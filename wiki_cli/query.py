"""Read commands: search, ask, show."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import (
    AsOfOption,
    JsonOption,
    LegsOption,
    RerankOption,
    VerboseOption,
    app,
    embedding_progress,
    open_wiki,
    parse_as_of,
    parse_legs,
    report_llm,
    require_text,
)
from wiki_cli.errors import FINDINGS, GAP, report
from wiki_cli.render import out, plain, print_json, table


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
    as_of: AsOfOption = None,
    json_output: JsonOption = False,
    rerank: RerankOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Rank entries for QUERY: alias/title, BM25 and vector legs fused by weighted RRF."""
    from wiki.search import filters_for
    from wiki.search import search as run

    require_text(query, "query")
    with embedding_progress(json_output) as progress:
        result = run(open_wiki(), query, limit=limit, legs=parse_legs(legs), progress=progress,
                     as_of=parse_as_of(as_of), rerank=rerank,
                     filters=filters_for(include_superseded=include_superseded,
                                         category=category, tags=tuple(tag or ())))
    for leg, reason in result.skipped.items():
        report(f"note: {leg} leg skipped: {reason}")
    report_llm(result.llm, verbose)
    if json_output:
        print_json({"query": query, "commit": result.commit,
                    "confidence": round(result.confidence, 4), "gap": result.gap,
                    "top_cosine": None if result.top_cosine is None
                    else round(result.top_cosine, 4),
                    "hits": [_hit_json(h, result.sources.get(h.key, [])) for h in result.hits],
                    **({"llm": result.llm} if result.llm else {})})
        if not result.hits:
            raise typer.Exit(FINDINGS)
        return
    if not result.hits:
        report("no matches")
        raise typer.Exit(FINDINGS)
    grid = table("#", "score", "title", "path", *(["legs"] if explain else []))
    for hit in result.hits:
        legs = ", ".join(
            (f"{leg} #{hit.legs[leg][0]} ({hit.legs[leg][1]:.3f})" if leg in hit.legs
             else f"{leg} -") + f" {hit.contributions.get(leg, 0.0):+.3f}"
            for leg in dict.fromkeys([*hit.legs, *hit.contributions]))
        grid.add_row(str(hit.rank), f"{hit.score:.3f}", plain(hit.title), plain(hit.key),
                     *([legs] if explain else []))
    out.print(grid)
    if explain:
        cosine = "" if result.top_cosine is None else f", best cosine {result.top_cosine:.2f}"
        report(f"word coverage {result.confidence:.2f}{cosine}; evidence gap: "
               f"{'yes' if result.gap else 'no'}; commit {result.commit[:12]}")


def _hit_json(hit, sources) -> dict:
    return {"rank": hit.rank, "score": round(hit.score, 6), "id": hit.doc_id, "path": hit.key,
            "title": hit.title, "summary": hit.summary, "category": hit.category,
            "status": hit.status, "sources": sources,
            "legs": {leg: {"rank": hit.legs[leg][0] if leg in hit.legs else None,
                           "score": round(hit.legs[leg][1], 6) if leg in hit.legs else None,
                           "contribution": round(hit.contributions.get(leg, 0.0), 6)}
                     for leg in dict.fromkeys([*hit.legs, *hit.contributions])}}


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question in plain words.")],
    category: Annotated[str | None, typer.Option("--category", help="Folder prefix.")] = None,
    include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
    legs: LegsOption = None,
    as_of: AsOfOption = None,
    json_output: JsonOption = False,
    rerank: RerankOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Answer QUESTION from the wiki with cited sentences; exit 3 on an evidence gap."""
    from wiki.ask import ask as run

    require_text(question, "question")
    with embedding_progress(json_output) as progress:
        answer = run(open_wiki(), question, category=category, legs=parse_legs(legs),
                     as_of=parse_as_of(as_of), rerank=rerank,
                     include_superseded=include_superseded, progress=progress)
    report_llm(answer.llm, verbose)
    if json_output:
        print_json({**{k: v for k, v in vars(answer).items() if k != "sentences"},
                    "gap": answer.gap,
                    "sentences": [{"text": t, "citation": n} for t, n in answer.sentences]})
    elif answer.gap:
        cosine = "" if answer.top_cosine is None else f", best cosine {answer.top_cosine:.2f}"
        out.print(plain(f"The wiki does not say (word coverage {answer.confidence:.2f}{cosine})."
                        " The question was recorded as an evidence gap."))
    else:
        for text, number in answer.sentences:
            out.print(plain(f"{text} [{number}]"))
        out.print()
        for citation in answer.citations:
            sources = ", ".join(citation.sources) or "no source"
            out.print(plain(f"[{citation.number}] {citation.title} — {citation.path} "
                            f"(id {citation.entry_id}; from {sources})"))
            for uri in citation.changed_sources:
                out.print(plain(f"    warning: {uri} changed since this entry was written; "
                                "it may be stale (see `wiki lint --select W010`)"))
    if answer.gap:
        raise typer.Exit(GAP)


@app.command()
def show(
    target: Annotated[str, typer.Argument(help="Entry id or path on the wiki branch.")],
    json_output: JsonOption = False,
) -> None:
    """Print one entry or file of the wiki as stored (--json: parsed fields)."""
    from wiki.lookup import find_entry, raw_file

    wiki = open_wiki()
    raw = None if json_output else raw_file(wiki, target)
    if raw is not None:  # any file on the branch, valid entry or not, shown as stored
        out.file.write(raw.decode("utf-8", "replace"))
        return
    entry = find_entry(wiki, target)
    if json_output:
        print_json({"path": entry.path, "id": entry.id, "meta": entry.meta, "body": entry.body})
        return
    out.file.write(entry.to_bytes().decode("utf-8"))


