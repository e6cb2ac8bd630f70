"""The plain document shape that the search engines index, and the hit they return."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Document:
    """One searchable document.

    ``key`` is the caller's unique handle (the wiki uses the entry's path on the branch);
    ``doc_id`` is the stable identity shown to users (the entry id). Text fields are plain
    strings; ``aliases`` and ``tags`` are lists of strings. ``status``, ``category``,
    ``scope``, ``valid_until`` and ``dated`` (ISO 8601 UTC ``YYYY-MM-DDTHH:MM:SSZ`` or
    ``""``) are filter attributes, never matched by queries (:mod:`indexes.retrieval.filters`).
    ``content_hash`` lets callers skip unchanged documents.
    """

    key: str
    doc_id: str
    title: str
    summary: str = ""
    body: str = ""
    aliases: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    status: str = "active"
    category: str = ""
    doc_type: str = "note"
    content_hash: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)
    scope: str = ""
    valid_until: str = ""
    dated: str = ""
    sentences: tuple[str, ...] = field(default=(), compare=False)
    """The sentences an answer may quote (plain text, in order): stored at index time,
    embedded by the first answer that reads them and kept, so the answer picker embeds each
    once; ``()`` for none."""


@dataclass(frozen=True)
class Hit:
    """One ranked result, a value: ``rank`` is 1-based, ``score`` is higher-is-better. A
    step that re-ranks or re-scores makes new hits (``dataclasses.replace``); its
    ``legs`` and ``contributions`` are never changed after it is made either.

    ``legs`` maps a leg name (``"bm25"``, ``"trigram"``) to ``(rank, score)`` in that leg,
    so every hit can explain where it came from.
    """

    key: str
    doc_id: str
    title: str
    summary: str
    category: str
    status: str
    score: float
    rank: int = 0
    legs: dict[str, tuple[int, float]] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)
    """After fusion: what each leg added to ``score`` (they sum to it exactly)."""


def hits_from_rows(rows: list[tuple], *, negate: bool) -> list[Hit]:
    """Hits from ``(key, doc_id, title, summary, category, status, score)`` rows, ranked
    in order; ``negate`` turns SQLite's lower-is-better bm25() into higher-is-better."""
    hits = []
    for rank, (key, doc_id, title, summary, category, status, score) in enumerate(rows, 1):
        hits.append(Hit(key, doc_id, title, summary, category, status,
                        -score if negate else score, rank))
    return hits


def scored_hits(found: list[tuple[str, float]], stored: list[Hit]) -> list[Hit]:
    """Hits for ``(key, score)`` pairs in their order (rank 1 first), with each key's stored
    fields from ``stored`` (hits read from the index); a key no longer stored is dropped."""
    rows = {hit.key: hit for hit in stored}
    return [Hit(h.key, h.doc_id, h.title, h.summary, h.category, h.status, score, rank)
            for rank, (key, score) in enumerate(found, 1) if (h := rows.get(key))]


def in_order(hits: list[Hit]) -> list[Hit]:
    """``hits`` in their order as new hits ranked from 1."""
    return [replace(hit, rank=rank) for rank, hit in enumerate(hits, start=1)]


def with_leg(hits: list[Hit], leg: str) -> list[Hit]:
    """``hits`` as new hits whose ``legs`` also say ``leg`` found them at their own rank
    and score."""
    return [replace(hit, legs={**hit.legs, leg: (hit.rank, hit.score)}) for hit in hits]
