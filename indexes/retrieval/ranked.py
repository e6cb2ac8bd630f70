"""An externally ranked list of document keys (such as the LLM index walk's) as hits, so
it can be fused like any other leg."""

from __future__ import annotations

from collections.abc import Sequence

from indexes.documents import Hit
from indexes.sqlite.engine import Filters, SearchIndex
from indexes.sqlite.rows import IN_KEYS, keys_json


def hits_for(index: SearchIndex, scored: Sequence[tuple[str, float]], *,
             filters: Filters | None = None, limit: int | None = None) -> list[Hit]:
    """``(key, score)`` pairs, best first, as :class:`Hit` objects ranked from 1; keys that
    are not indexed or do not pass ``filters`` (the same filters every leg applies before
    ranking) are dropped."""
    keys = [key for key, _ in scored]
    if not keys:
        return []
    own = getattr(index, "hits_for", None)
    if own is not None:  # another backend (PostgreSQL) reads its own rows
        rows = own(keys, filters)
    else:
        where, params = (filters or Filters()).sql()
        rows = {r[0]: r for r in index.conn.execute(
            "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status FROM docs d "
            f"WHERE d.{IN_KEYS} AND {where}", [keys_json(keys), *params])}
    hits = [Hit(*rows[key], float(score)) for key, score in scored if key in rows]
    for rank, hit in enumerate(hits, 1):
        hit.rank = rank
    return hits[:limit] if limit is not None else hits
