"""Running the retrieval legs and fusing them (DESIGN.md §5): weighted z-score CombSUM by
default, weighted RRF on request (:mod:`indexes.fusion`).

Legs: ``alias`` (exact title/alias spans), ``bm25`` (FTS5 with the trigram path for
space-less scripts) and ``vector`` (cosine of the best chunk). Every leg applies the same
filters before ranking; each contributes its top ``window`` hits to
:func:`indexes.fusion.rrf`; the verbatim query always feeds the lexical legs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from indexes.documents import Hit
from indexes.fusion import DEFAULT_K, rrf, zscore
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
    method: str = "zscore"
    """``zscore`` (weighted CombSUM of z-scores, the default) or ``rrf``."""


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
    """Fuse the legs' lists (``config.method``); each hit's ``legs`` explains its ranks and
    scores and ``contributions`` what each leg added. A single leg is returned as it ranked
    (its own scores)."""
    active = {leg: hits for leg, hits in legs.items() if hits}
    if len(active) == 1:
        (leg, hits), = active.items()
        for hit in hits:
            hit.legs.setdefault(leg, (hit.rank, hit.score))
            hit.contributions = {leg: hit.score}
        return hits[:limit]
    if config.method == "rrf":
        return rrf(active, k=config.k, weights=config.weights, limit=limit)
    return zscore(active, weights=config.weights, limit=limit)
