"""An externally ranked list of document keys (such as the LLM index walk's) as hits, so
it can be fused like any other leg."""

from __future__ import annotations

from collections.abc import Sequence

from indexes.backend import IndexBackend
from indexes.documents import Hit, in_order
from indexes.retrieval.filters import Filters


def hits_for(index: IndexBackend, scored: Sequence[tuple[str, float]], *,
             filters: Filters | None = None, limit: int | None = None) -> list[Hit]:
    """``(key, score)`` pairs, best first, as :class:`Hit` objects ranked from 1; keys that
    are not indexed or do not pass ``filters`` (the same filters every leg applies before
    ranking) are dropped."""
    keys = [key for key, _ in scored]
    if not keys:
        return []
    rows = index.hits_for(keys, filters)
    hits = in_order([Hit(*rows[key], float(score)) for key, score in scored if key in rows])
    return hits[:limit] if limit is not None else hits
