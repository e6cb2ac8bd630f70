"""Running the retrieval legs and fusing them with weighted RRF (DESIGN.md §5).

Legs: ``alias`` (exact title/alias spans), ``bm25`` (FTS5 with the trigram path for
space-less scripts) and ``vector`` (cosine of the best chunk). Every leg applies the same
filters before ranking; each contributes its top ``window`` hits to
:func:`indexes.fusion.rrf`; the verbatim query always feeds the lexical legs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from indexes.documents import Hit
from indexes.fusion import DEFAULT_K, rrf
from indexes.store import Filters, SearchIndex

LEGS = ("alias", "bm25", "vector")


@dataclass(frozen=True)
class FusionConfig:
    """Which legs run, RRF's ``k``, how many hits each leg offers (``window``) and each
    leg's weight (a missing leg weighs 1.0)."""

    legs: tuple[str, ...] = LEGS
    k: int = DEFAULT_K
    window: int = 50
    weights: Mapping[str, float] = field(default_factory=dict)


def run_legs(index: SearchIndex, query: str, config: FusionConfig, *,
             filters: Filters | None = None, query_vector=None,
             model: str | None = None) -> dict[str, list[Hit]]:
    """``leg -> ranked hits`` for every configured leg that can run (the vector leg
    needs ``query_vector`` and ``model``). Raises ``EmptyQueryError`` for an empty query
    when a lexical leg runs."""
    out: dict[str, list[Hit]] = {}
    for leg in config.legs:
        if leg == "alias":
            out[leg] = index.search_names(query, limit=config.window, filters=filters)
        elif leg == "bm25":
            out[leg] = index.search(query, limit=config.window, filters=filters)
        elif leg == "vector" and query_vector is not None and model:
            out[leg] = index.search_vector(query_vector, model, limit=config.window,
                                           filters=filters)
    return out


def fuse(legs: Mapping[str, list[Hit]], config: FusionConfig, *, limit: int) -> list[Hit]:
    """Weighted RRF of the legs' lists; each hit's ``legs`` explains its ranks and scores.
    A single leg is returned as it ranked (its own scores, with the explanation)."""
    active = {leg: hits for leg, hits in legs.items() if hits}
    if len(active) == 1:
        (leg, hits), = active.items()
        for hit in hits:
            hit.legs.setdefault(leg, (hit.rank, hit.score))
        return hits[:limit]
    return rrf(active, k=config.k, weights=config.weights, limit=limit)
