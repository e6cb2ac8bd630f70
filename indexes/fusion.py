"""Weighted Reciprocal Rank Fusion.

score(d) = sum over legs i of w_i / (k + rank_i(d)), rank 1-based, summed over the legs
that returned d (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual rank learning methods", SIGIR 2009; k = 60 is their constant).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from indexes.documents import Hit

DEFAULT_K = 60


def rrf(
    legs: Mapping[str, Sequence[Hit]],
    *,
    k: int = DEFAULT_K,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse ranked lists of hits (one list per leg name) into one list.

    Returns new :class:`Hit` objects ranked by fused score (ties broken by best single-leg
    rank, then key, so the order is deterministic); each hit's ``legs`` records
    ``leg -> (rank, leg score)`` for every leg that found it.
    """
    fused: dict[str, Hit] = {}
    best_rank: dict[str, int] = {}
    for leg, hits in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for position, hit in enumerate(hits, start=1):
            slot = fused.get(hit.key)
            if slot is None:
                slot = Hit(hit.key, hit.doc_id, hit.title, hit.summary, hit.category,
                           hit.status, 0.0)
                fused[hit.key] = slot
            slot.score += weight / (k + position)
            slot.legs[leg] = (position, hit.score)
            best_rank[hit.key] = min(best_rank.get(hit.key, position), position)
    ordered = sorted(fused.values(), key=lambda h: (-h.score, best_rank[h.key], h.key))
    for rank, hit in enumerate(ordered, start=1):
        hit.rank = rank
    return ordered[:limit] if limit is not None else ordered
