"""Read commands: search, ask, show."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki_cli.common import (
    AsOfOption,
    ExpiredOption,
    JsonOption,
    LegsOption,
    RedactOption,
    RerankOption,
    RouteOption,
    ScopeOption,
    VerboseOption,
    app,
    embedding_progress,
    open_wiki,
    parse_as_of,
    report_llm,
    report_proposal,
    require_text,
)
from wiki_cli.errors import FINDINGS, GAP, report
from wiki_cli.payloads import answer_payload, entry_payload, saved_payload, search_payload
from wiki_cli.render import out, plain, print_json, table, write_raw


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What to look for.", metavar="QUERY")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=1000)] = 10,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show each leg's rank and score.")] = False,
    category: Annotated[str | None, typer.Option("--category", help="Folder prefix.")] = None,
    tag: Annotated[list[str] | None, typer.Option(
        "--tag", help="Required tag (repeatable).")] = None,
    include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
    legs: LegsOption = None,
    as_of: AsOfOption = None,
    scope: ScopeOption = None,
    include_expired: ExpiredOption = False,
    json_output: JsonOption = False,
    rerank: RerankOption = False,
    route: RouteOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Rank entries for QUERY: alias/title, BM25 and vector legs fused by weighted z-scores
    (each leg's scores standardised, then summed with its weight; `[search] fusion = "rrf"`
    in wiki.toml for Reciprocal Rank Fusion). Exit 1 when nothing matches, or when no hit
    is a confident match (the weak hits are listed, with a note on stderr)."""
    from wiki.answering.search import SearchRequest
    from wiki.answering.search import search as run

    require_text(query, "query")
    request = SearchRequest.with_filters(
        query, limit=limit, legs=legs, as_of=parse_as_of(as_of), rerank=rerank, route=route,
        category=category, tags=tuple(tag or ()), include_superseded=include_superseded,
        scope=scope, include_expired=include_expired)
    with embedding_progress(json_output) as progress:
        result = run(open_wiki(), request, progress=progress)
    report_truncation(query)
    for leg, reason in result.skipped.items():
        report(f"note: {leg} leg skipped: {reason}")
    report_llm(result.llm, verbose)
    if explain and result.route is not None:
        report_route(result.route.to_dict())
    if json_output:
        print_json({**search_payload(result), **({"llm": result.llm} if result.llm else {})})
        if not result.hits or result.gap:
            raise typer.Exit(FINDINGS)
        return
    if not result.hits:
        report("no matches")
        raise typer.Exit(FINDINGS)
    grid = table("#", "score", "title", "path", *(["legs"] if explain else []),
                 identifiers=("path",), optional=("score", "title"))
    for hit in result.hits:
        legs = ", ".join(
            (f"{leg} #{hit.legs[leg][0]} ({hit.legs[leg][1]:.3f})" if leg in hit.legs
             else f"{leg} -") + f" {hit.contributions.get(leg, 0.0):+.3f}"
            for leg in dict.fromkeys([*hit.legs, *hit.contributions]))
        grid.add_row(str(hit.rank), f"{hit.score:.3f}", plain(hit.title), plain(hit.key),
                     *([legs] if explain else []))
    out.print(grid)
    cosine = "" if result.top_cosine is None else f", best cosine {result.top_cosine:.2f}"
    if explain:
        report(f"word coverage {result.confidence:.2f}{cosine}; evidence gap: "
               f"{'yes' if result.gap else 'no'}; commit {result.commit[:12]}")
    elif result.gap:  # the vector leg ranks every entry: say when none is really a match
        report(f"note: weak matches only (word coverage {result.confidence:.2f}{cosine}); "
               + ("judged by words alone while vectors are pending: run `wiki index`"
                  if result.pending else "`wiki ask` would report an evidence gap"))
    if result.gap:  # no confident hit: not found, as `grep` exits 1 (the hits stay listed)
        raise typer.Exit(FINDINGS)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(
        help="A question in plain words.", metavar="QUESTION")],
    category: Annotated[str | None, typer.Option("--category", help="Folder prefix.")] = None,
    include_superseded: Annotated[bool, typer.Option("--include-superseded")] = False,
    legs: LegsOption = None,
    as_of: AsOfOption = None,
    scope: ScopeOption = None,
    include_expired: ExpiredOption = False,
    budget: Annotated[int | None, typer.Option(
        "--budget", min=1, help="Return the best cited evidence that fits N tokens.")] = None,
    propose: Annotated[bool, typer.Option(
        "--propose", help="When a cited entry is out of date, propose re-ingesting its "
                          "changed source(s).")] = False,
    extractive: Annotated[bool, typer.Option(
        "--extractive", help="Quote the entries even when a model is configured (no "
                             "model-written answer).")] = False,
    no_revalidate: Annotated[bool, typer.Option(
        "--no-revalidate", help="Answer from the entries without checking their sources.")
    ] = False,
    save: Annotated[bool, typer.Option(
        "--save", help="Propose the answer as entries (distilled by the model when one is "
                       "configured; docs/llm.md).")] = False,
    redact: RedactOption = False,
    json_output: JsonOption = False,
    rerank: RerankOption = False,
    route: RouteOption = None,
    explain: Annotated[bool, typer.Option(
        "--explain", help="Show the routed folders and their scores on stderr.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Answer QUESTION from the wiki with cited sentences; exit 3 on an evidence gap.
    An answer that may not answer (its score below `[search] hedge_score`) opens with a
    `closest evidence, may not answer: REASON` line (exit 0). Cited entries whose sources
    changed are answered from the current source and flagged (exit 0)."""
    from wiki.answering.ask import AskRequest
    from wiki.questions import answer_question
    from wiki_cli.stale import citation_warnings, report_update, update_payload

    require_text(question, "question")
    request = AskRequest(
        question, save=save, redact=redact, propose=propose, synthesize=not extractive,
        category=category, legs=legs, as_of=parse_as_of(as_of), scope=scope,
        include_expired=include_expired, budget=budget,
        include_superseded=include_superseded, revalidate=not no_revalidate, rerank=rerank,
        route=route)
    with embedding_progress(json_output) as progress:
        answered = answer_question(open_wiki(), request, progress=progress)
    answer, saved = answered.answer, answered.saved
    report_truncation(question)
    if answer.vectors_pending and "vector" in answer.skipped:  # answered without meaning
        report(f"note: vector leg skipped: {answer.skipped['vector']}")
    report_llm(answer.llm, verbose)
    if explain and answer.route is not None:
        report_route(answer.route)
    if json_output:
        print_json({**answer_payload(answer), "update": update_payload(answered.update),
                    **({"saved": saved_payload(saved)} if save else {})})
    elif answer.gap and answer.gap_reason is not None and answer.gap_reason.code == "over_budget":
        out.print(plain(f"The answer does not fit the budget: {answer.gap_reason.sentence}."))
    elif answer.gap:
        cosine = "" if answer.top_cosine is None else f", best cosine {answer.top_cosine:.2f}"
        recorded = (" Vectors are pending, so this was decided by words alone and not "
                    "recorded as a gap: run `wiki index` and ask again."
                    if answer.vectors_pending else
                    " The question was recorded as an evidence gap.")
        out.print(plain(f"The wiki does not say (word coverage {answer.coverage:.2f}{cosine})."
                        + recorded))
        if answer.note:
            report(f"note: {answer.note}")
    else:
        if answer.hedge:
            out.print(plain(f"closest evidence, may not answer: {answer.hedge}"))
        for text, number in answer.sentences:
            out.print(plain(f"{text} [{number}]"))
        out.print()
        if answer.note:
            report(f"note: {answer.note}")
        for text, why in answer.dropped if verbose else ():
            report(f"dropped ({why}): {text}")
        for citation in answer.citations:
            sources = ", ".join(citation.sources) or "no source"
            where = f"{citation.title} › {citation.section}" if citation.section \
                else citation.title
            out.print(plain(f"[{citation.number}] {where} — {citation.path} "
                            f"(id {citation.entry_id}; from {sources})"))
            citation_warnings(citation)
            for uri in [] if citation.stale or citation.unverifiable else \
                    citation.changed_sources:
                out.print(plain(f"    warning: {uri} changed since this entry was written; "
                                "it may be stale (see `wiki lint --select W010`)"))
        if answer.tokens:
            t = answer.tokens
            report(f"{t['used']} of {t['budget']} tokens used; the whole entries would take "
                   f"{t['whole']} ({t['counter']})")
        report_update(answered.update, propose=propose)
        if saved is not None:
            _report_saved(saved, verbose)
    if answer.gap:
        if save and not json_output:
            report("note: nothing saved: the wiki does not answer this question")
        raise typer.Exit(GAP)


def _report_saved(saved, verbose: bool) -> None:
    if saved.note:
        report(f"note: {saved.note}")
    for text, why in saved.dropped if verbose else ():
        report(f"dropped ({why}): {text}")
    if saved.llm:
        report_llm(saved.llm, verbose)
    report_proposal(saved.proposal, saved.created, saved.existing, nothing="nothing to save")


def report_truncation(query: str) -> None:
    """On stderr, when the query's words past the limit were ignored (JSON: ``truncated``)."""
    from indexes.retrieval.query import truncation_note

    note = truncation_note(query)
    if note is not None:
        report(note)


def report_route(route: dict) -> None:
    """The route on stderr: the folders searched, how they were chosen, the best scores."""
    scores = ", ".join(f"{s['folder']} {s['score']:.3f}" for s in route["scores"][:5])
    how = {"llm": "tie-broken by the model", "none": "nothing to route"}.get(
        route["by"], "ambiguous" if route["ambiguous"] else "clear")
    report(f"route: {', '.join(route['folders']) or '-'} ({how}); scores: {scores or '-'}"
           + (f"; {route['note']}" if route.get("note") else ""))


@app.command()
def show(
    target: Annotated[str, typer.Argument(
        help="Entry id or path on the wiki branch.", metavar="TARGET")],
    json_output: JsonOption = False,
) -> None:
    """Print one entry or file of the wiki as stored (--json: parsed fields), and its
    relations both ways (outgoing and incoming; on stderr unless --json)."""
    from wiki.entry_view import get_entry

    view = get_entry(open_wiki(), target, as_stored=not json_output)
    if json_output:
        outgoing, incoming = view.relations()
        print_json({**entry_payload(view.entry), "commit": view.commit,
                    "relations": {"outgoing": outgoing, "incoming": incoming}})
        return
    # any file on the branch, valid entry or not, shown as stored
    write_raw(view.raw.decode("utf-8", "replace") if view.raw is not None
              else view.entry.to_bytes().decode("utf-8"))
    if view.entry is None:  # not an entry (index.md, wiki.toml) or a malformed one
        _report_commit(view.commit, None)
        return
    _report_commit(view.commit, target)
    _report_links(view)


def _report_commit(commit: str, target: str | None) -> None:
    """Say which wiki commit was read, for `wiki propose FILE --edit ID --base COMMIT`
    (``target`` ``None``: not a readable entry, such as ``wiki.toml`` or an ``index.md``,
    which `wiki propose --edit` refuses: no such hint)."""
    if target is None:
        report(f"read at wiki commit {commit}")
        return
    report(f"read at wiki commit {commit} (to propose an edit of this copy: "
           f"wiki propose FILE --edit {target} --base {commit[:12]})")


def _report_links(view) -> None:
    outgoing, incoming = view.relations()
    for arrow, found in (("->", outgoing), ("<-", incoming)):
        for link in found:
            where = f"{link.title} — {link.path}" if link.path else "no such entry"
            report(f"{arrow} {link.kind} {link.entry_id} ({where})")
