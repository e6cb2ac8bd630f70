"""Search: sync the derived index with the branch, then rank entries (DESIGN.md §5)."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexes.documents import Hit
from indexes.store import Filters, SearchIndex
from wiki.derived import SyncReport, indexed_config, open_synced, sync
from wiki.workspace import Wiki

LEGS = ("bm25",)


@dataclass
class SearchResult:
    """Ranked ``hits`` for ``query`` at wiki ``commit``; ``confidence`` (0-1) is the
    IDF-weighted query coverage of the top hit (:mod:`indexes.confidence`) and ``gap`` is
    true when it is below the wiki's ``gap_threshold``."""

    query: str
    commit: str
    hits: list[Hit]
    confidence: float
    threshold: float
    sync: SyncReport
    sources: dict[str, list[dict]] = field(default_factory=dict)

    @property
    def gap(self) -> bool:
        return not self.hits or self.confidence < self.threshold


def filters_for(*, include_superseded: bool = False, category: str | None = None,
                tags: tuple[str, ...] = ()) -> Filters:
    """Search filters: active entries only unless ``include_superseded`` (then
    superseded ones too; retracted and draft entries are never answers)."""
    statuses = ("active", "superseded") if include_superseded else ("active",)
    return Filters(statuses=statuses, category=category or None, tags=tuple(tags))


def search(wiki: Wiki, query: str, *, limit: int = 10, filters: Filters | None = None,
           index: SearchIndex | None = None) -> SearchResult:
    """Rank entries for ``query``. Raises ``EmptyQueryError`` for a query without words
    and ``NotInitializedError`` without a wiki branch."""
    own = index is None
    if own:
        index, report = open_synced(wiki)
    else:
        report = sync(wiki, index)
    try:
        config = indexed_config(index)
        hits = index.search(query, limit=limit, filters=filters or filters_for())
        confidence = index.coverage(query, hits[0].key) if hits else 0.0
        extras = index.extras(h.key for h in hits)
        sources = {key: extra.get("sources", []) for key, extra in extras.items()}
    finally:
        if own:
            index.close()
    return SearchResult(query, report.commit, hits, confidence,
                        config.search.gap_threshold, report, sources)
