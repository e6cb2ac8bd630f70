"""The JSON shapes of results, shared by ``--json`` and the MCP server, so an agent and a
script see the same fields for the same call."""

from __future__ import annotations

import datetime as dt
from typing import Any

from wiki.errors import ConfigError
from wiki_cli.render import to_jsonable


def require_text(value: str, name: str) -> None:
    """Raise :class:`ConfigError` ("the query is empty", exit 2) when ``value`` is blank."""
    if not value.strip():
        raise ConfigError(f"the {name} is empty")


def as_of_time(value: str | None, option: str = "--as-of") -> dt.datetime | None:
    """``value`` (``YYYY-MM-DD`` or ISO 8601) as an aware UTC time; a bare date means the
    end of that day. Raises :class:`ConfigError` naming ``option`` when it is not a date."""
    if value is None:
        return None
    try:
        if len(value.strip()) == 10:
            day = dt.date.fromisoformat(value.strip())
            return dt.datetime.combine(day, dt.time(23, 59, 59), dt.UTC)
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{option} {value!r} is not a date (YYYY-MM-DD) or ISO 8601 time"
                          ) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def hit_payload(hit, sources: list[dict], *, explain: bool = True) -> dict[str, Any]:
    """One ranked entry; with ``explain``, each leg's rank, raw score and contribution."""
    data = {"rank": hit.rank, "score": round(hit.score, 6), "id": hit.doc_id, "path": hit.key,
            "title": hit.title, "summary": hit.summary, "category": hit.category,
            "status": hit.status, "sources": sources}
    if explain:
        data["legs"] = {leg: {"rank": hit.legs[leg][0] if leg in hit.legs else None,
                              "score": round(hit.legs[leg][1], 6) if leg in hit.legs else None,
                              "contribution": round(hit.contributions.get(leg, 0.0), 6)}
                        for leg in dict.fromkeys([*hit.legs, *hit.contributions])}
    return data


def truncated(query: str) -> dict[str, int] | None:
    """``{"kept": 64, "dropped": N}`` when the query's words past the limit were ignored
    (:func:`indexes.retrieval.query.truncation`), else ``None``."""
    from indexes.retrieval.query import truncation

    return truncation(query)


def search_payload(result, *, explain: bool = True) -> dict[str, Any]:
    """A :class:`wiki.answering.search.SearchResult` as JSON values (``truncated``: see
    :func:`truncated`)."""
    return {"query": result.query, "commit": result.commit,
            "truncated": truncated(result.query),
            "confidence": round(result.confidence, 4), "gap": result.gap,
            "top_cosine": None if result.top_cosine is None else round(result.top_cosine, 4),
            "legs": list(result.legs), "skipped": dict(result.skipped),
            "vectors_pending": result.pending,
            "route": result.route.to_dict() if getattr(result, "route", None) else None,
            "hits": [hit_payload(h, result.sources.get(h.key, []), explain=explain)
                     for h in result.hits]}


def answer_payload(answer) -> dict[str, Any]:
    """A :class:`wiki.answering.ask.Answer` as JSON values (``confidence``: ``answered``,
    ``hedged``, the closest evidence that may not answer, with ``hedge`` saying why, or
    ``gap``; ``gap`` true: the wiki does not say; ``coverage``: the retrieval's word
    coverage; ``warnings``: one line per cited entry found out of date or unverifiable at
    ask time; ``truncated``: see :func:`truncated`)."""
    fields = {k: v for k, v in vars(answer).items() if k != "sentences"}
    warnings = [f"entry {c.entry_id} is "
                f"{'out of date' if c.stale else 'unverifiable'}: {c.reason}"
                for c in answer.citations if c.stale or c.unverifiable]
    return to_jsonable({**fields, "confidence": answer.confidence, "gap": answer.gap,
                        "warnings": warnings,
                        "truncated": truncated(answer.question),
                        "sentences": [{"text": t, "citation": n} for t, n in answer.sentences]})


def entry_payload(entry) -> dict[str, Any]:
    """An entry's identity, status, sources, every frontmatter field and its body."""
    return to_jsonable({"path": entry.path, "id": entry.id, "title": entry.title,
                        "status": entry.status, "type": entry.type, "summary": entry.summary,
                        "tags": entry.tags, "sources": [s.to_dict() for s in entry.sources],
                        "meta": entry.meta, "body": entry.body})


def authored_payload(result) -> dict[str, Any]:
    """A :class:`wiki.knowledge.authoring.Authored` result: the proposal opened (or the one or the
    entry that already says the same) and near-duplicates the reviewer should look at."""
    proposal = result.proposal
    return to_jsonable({
        "proposal": None if proposal is None else proposal.name,
        "created": result.created, "existing": result.existing,
        "paths": [] if proposal is None else list(proposal.paths),
        "flags": [] if proposal is None else [str(f) for f in proposal.flags],
        "near_duplicates": list(result.near_duplicates)})


def saved_payload(saved) -> dict[str, Any] | None:
    """A :class:`wiki.knowledge.distill.Saved` result (``wiki ask --save``): the proposal opened,
    how the answer was saved and where each of its claims went."""
    if saved is None:
        return None
    proposal = saved.proposal
    return to_jsonable({
        "proposal": None if proposal is None else proposal.name, "created": saved.created,
        "mode": saved.mode, "existing": saved.existing, "note": saved.note,
        "paths": [] if proposal is None else list(proposal.paths),
        "flags": [] if proposal is None else [str(f) for f in proposal.flags],
        "placed": saved.placed, "dropped": [{"claim": c, "why": w} for c, w in saved.dropped],
        "llm": saved.llm})
