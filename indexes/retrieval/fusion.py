"""Fusing ranked lists: weighted Reciprocal Rank Fusion and weighted z-score CombSUM.

RRF: score(d) = sum over legs i of w_i / (k + rank_i(d)), rank 1-based, over the legs that
returned d (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual rank learning methods", SIGIR 2009; k = 60 is their constant).

z-score CombSUM (Fox & Shaw, "Combination of multiple searches", TREC-2 1994, with z-score
normalisation as in Lee, SIGIR 1997): score(d) = sum over legs i of w_i * z_i(d), where
z_i(d) = (s_i(d) - mean_i) / std_i over leg i's hits, and a document leg i did not return
gets that leg's lowest z. A leg whose hits all score the same (std 0, e.g. one exact
title match) gives z = 1 to its hits and 0 to the rest. Unlike RRF it keeps how far a
leg's first hit stands out, which matters when a window covers every candidate (LoCoMo:
~25 sessions per conversation) and RRF degenerates into a Borda count
(evals/results/fusion.md).
"""

from __future__ import annotations

import statistics
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
    first: dict[str, Hit] = {}
    score: dict[str, float] = {}
    found: dict[str, dict[str, tuple[int, float]]] = {}
    parts: dict[str, dict[str, float]] = {}
    best_rank: dict[str, int] = {}
    for leg, hits in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        for position, hit in enumerate(hits, start=1):
            first.setdefault(hit.key, hit)
            score[hit.key] = score.get(hit.key, 0.0) + weight / (k + position)
            found.setdefault(hit.key, {})[leg] = (position, hit.score)
            parts.setdefault(hit.key, {})[leg] = weight / (k + position)
            best_rank[hit.key] = min(best_rank.get(hit.key, position), position)
    ordered = sorted(first, key=lambda key: (-score[key], best_rank[key], key))
    fused = [fused_hit(first[key], rank, score[key], found[key], parts[key])
             for rank, key in enumerate(ordered, start=1)]
    return fused[:limit] if limit is not None else fused


def fused_hit(hit: Hit, rank: int, score: float, legs: dict[str, tuple[int, float]],
              contributions: dict[str, float]) -> Hit:
    """A new hit for ``hit``'s document at ``rank`` with the fused ``score``, the ``legs``
    that found it and what each added (``contributions``)."""
    return Hit(hit.key, hit.doc_id, hit.title, hit.summary, hit.category, hit.status, score,
               rank, legs, contributions)


def zscore(
    legs: Mapping[str, Sequence[Hit]],
    *,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse by weighted CombSUM of per-leg z-scores (see the module docstring). Returns
    new hits ranked by fused score (ties: best single-leg rank, then key); ``legs`` and
    ``contributions`` explain every hit, and the contributions sum to its score."""
    standard: dict[str, dict[str, float]] = {}
    lowest: dict[str, float] = {}
    first: dict[str, Hit] = {}
    found: dict[str, dict[str, tuple[int, float]]] = {}
    best_rank: dict[str, int] = {}
    for leg, hits in legs.items():
        weight = 1.0 if weights is None else weights.get(leg, 1.0)
        if not hits or weight == 0:
            continue
        values = [h.score for h in hits]
        mean, spread = statistics.fmean(values), statistics.pstdev(values)
        standard[leg] = {h.key: weight * ((h.score - mean) / spread if spread > 0 else 1.0)
                         for h in hits}
        lowest[leg] = min(standard[leg].values()) if spread > 0 else 0.0
        for position, hit in enumerate(hits, start=1):
            first.setdefault(hit.key, hit)
            found.setdefault(hit.key, {}).setdefault(leg, (position, hit.score))
            best_rank[hit.key] = min(best_rank.get(hit.key, position), position)
    parts = {key: {leg: z.get(key, lowest[leg]) for leg, z in standard.items()}
             for key in first}
    score = {key: sum(contributions.values()) for key, contributions in parts.items()}
    ordered = sorted(first, key=lambda key: (-score[key], best_rank[key], key))
    fused = [fused_hit(first[key], rank, score[key], found[key], parts[key])
             for rank, key in enumerate(ordered, start=1)]
    return fused[:limit] if limit is not None else fused
