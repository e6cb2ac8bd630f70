"""Fusion variants compared by :mod:`evals.tune` (candidates for ``indexes/retrieval/fusion.py``).

Every function takes ``legs``: ``{leg: [(key, score), ...]}`` best first (a leg's scores
are higher-is-better) and returns fused keys, best first.

* :func:`rrf`: weighted RRF, score = Σ_i w_i / (k + rank_i), each leg cut at its window;
* :func:`rrf_conf`: RRF whose leg weights are scaled per query by the leg's *peakedness*
  z_i = (s_1 - mean(s_1..s_n)) / std(s_1..s_n) over the leg's first ``n`` scores (how far
  its first hit stands out), clipped to [floor, cap];
* :func:`zsum`: score fusion: Σ_i w_i · (s_i(d) - mean_i) / std_i over each leg's window
  (a document a leg did not return gets that leg's lowest z).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

Legs = Mapping[str, Sequence[tuple[str, float]]]


def rrf(legs: Legs, *, k: float = 60, weights: Mapping[str, float] | None = None,
        window: int | Mapping[str, int] = 50) -> list[str]:
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for leg, hits in legs.items():
        weight = (weights or {}).get(leg, 1.0)
        cut = window if isinstance(window, int) else window.get(leg, 50)
        if weight == 0:
            continue
        for rank, (key, _) in enumerate(hits[:cut], 1):
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            best[key] = min(best.get(key, rank), rank)
    return sorted(scores, key=lambda d: (-scores[d], best[d], d))


def peakedness(scores: Sequence[float], n: int = 10) -> float:
    """(s_1 - mean) / std over the first ``n`` scores (0 for fewer than 3)."""
    top = list(scores[:n])
    if len(top) < 3:
        return 0.0
    spread = statistics.pstdev(top)
    return (top[0] - statistics.fmean(top)) / spread if spread > 0 else 0.0


def rrf_conf(legs: Legs, *, k: float = 60, weights: Mapping[str, float] | None = None,
             window: int = 50, n: int = 10, floor: float = 0.25, cap: float = 4.0,
             conf_legs: Sequence[str] = ("bm25", "vector")) -> list[str]:
    scaled = dict(weights or {})
    for leg in conf_legs:
        if legs.get(leg):
            z = peakedness([s for _, s in legs[leg]], n)
            scaled[leg] = scaled.get(leg, 1.0) * min(max(z, floor), cap)
    return rrf(legs, k=k, weights=scaled, window=window)


def zsum(legs: Legs, *, weights: Mapping[str, float] | None = None,
         window: int = 50) -> list[str]:
    scores: dict[str, float] = {}
    lows: dict[str, float] = {}
    per_leg: dict[str, dict[str, float]] = {}
    for leg, hits in legs.items():
        top = hits[:window]
        weight = (weights or {}).get(leg, 1.0)
        if not top or weight == 0:
            continue
        values = [s for _, s in top]
        mean, spread = statistics.fmean(values), statistics.pstdev(values) or 1.0
        per_leg[leg] = {key: weight * (s - mean) / spread for key, s in top}
        lows[leg] = min(per_leg[leg].values())
    keys = {key for z in per_leg.values() for key in z}
    for key in keys:
        scores[key] = sum(z.get(key, lows[leg]) for leg, z in per_leg.items())
    return sorted(scores, key=lambda d: (-scores[d], d))


def minmax(legs: Legs, *, weights: Mapping[str, float] | None = None,
           window: int = 50) -> list[str]:
    """CombSUM of min-max normalised scores over each leg's window (missing = 0)."""
    scores: dict[str, float] = {}
    for leg, hits in legs.items():
        top = hits[:window]
        weight = (weights or {}).get(leg, 1.0)
        if not top or weight == 0:
            continue
        high, low = top[0][1], min(s for _, s in top)
        for key, s in top:
            scores[key] = scores.get(key, 0.0) + weight * ((s - low) / ((high - low) or 1.0))
    return sorted(scores, key=lambda d: (-scores[d], d))
