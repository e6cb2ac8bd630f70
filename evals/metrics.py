"""Retrieval metrics as pure functions over one ranked list and one gold set.

A *ranked list* holds retrieval units (SciFact: doc ids; handbook: source pages, see
:func:`dedupe_units`), best first, without duplicates. ``gold`` is the set of relevant
units. Gains are binary. Every function treats ``k`` as a cut-off of the ranked list.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

KS = (3, 5, 10)


def dedupe_units(ranked_keys: Iterable[str],
                 units_of: Mapping[str, Sequence[str]]) -> list[str]:
    """Map ranked keys (entries) to their units (source pages) and keep each unit at its
    first position: ``["a#1", "a#2", "b"]`` with pages ``a, a, b`` gives ``["a", "b"]``.
    A key without units contributes nothing."""
    seen: set[str] = set()
    out: list[str] = []
    for key in ranked_keys:
        for unit in units_of.get(key, ()):
            if unit not in seen:
                seen.add(unit)
                out.append(unit)
    return out


def recall_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """Share of ``gold`` found in the top ``k`` (0.0 for an empty gold set)."""
    if not gold:
        return 0.0
    return len(gold.intersection(ranked[:k])) / len(gold)


def hit_at(ranked: Sequence[str], gold: set[str], k: int) -> float:
    """1.0 when at least one gold unit is in the top ``k``, else 0.0."""
    return 1.0 if gold.intersection(ranked[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: set[str], k: int = 10) -> float:
    """1 / rank of the first gold unit within the top ``k`` (0.0 when none)."""
    rank = first_rank(ranked, gold)
    return 1.0 / rank if rank is not None and rank <= k else 0.0


def first_rank(ranked: Sequence[str], gold: set[str]) -> int | None:
    """1-based rank of the first gold unit in the whole list, or ``None``."""
    for rank, unit in enumerate(ranked, start=1):
        if unit in gold:
            return rank
    return None


def ndcg_at(ranked: Sequence[str], gold: set[str], k: int = 10) -> float:
    """Binary nDCG@k: DCG = sum over gold units at rank r <= k of 1 / log2(r + 1), divided
    by the ideal DCG of min(|gold|, k) gold units at the top (0.0 for an empty gold set)."""
    if not gold:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1)
              for rank, unit in enumerate(ranked[:k], start=1) if unit in gold)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def missed_at(ranked: Sequence[str], gold: set[str], k: int = 10) -> int:
    """Number of gold units not in the top ``k``."""
    return len(gold - set(ranked[:k]))


def non_gold_at(ranked: Sequence[str], gold: set[str], k: int = 10) -> int:
    """Number of retrieved units in the top ``k`` that are not gold (noise the reader
    must skip)."""
    return sum(1 for unit in ranked[:k] if unit not in gold)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation between closest ranks
    (numpy's default); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def query_metrics(ranked: Sequence[str], gold: set[str], ks: Sequence[int] = KS) -> dict:
    """All per-query metrics of one ranked list, as a flat dict."""
    row: dict[str, float] = {}
    for k in ks:
        row[f"recall@{k}"] = recall_at(ranked, gold, k)
    for k in ks:
        row[f"hit@{k}"] = hit_at(ranked, gold, k)
    row["mrr@10"] = reciprocal_rank(ranked, gold, 10)
    row["ndcg@10"] = ndcg_at(ranked, gold, 10)
    row["missed@10"] = missed_at(ranked, gold, 10)
    row["non_gold@10"] = non_gold_at(ranked, gold, 10)
    return row


def aggregate(rows: Sequence[Mapping[str, float]],
              latencies_ms: Sequence[float] = ()) -> dict[str, float]:
    """Mean of every per-query metric over ``rows``, plus ``queries`` and latency
    ``p50_ms`` / ``p95_ms`` when latencies are given."""
    summary: dict[str, float] = {"queries": len(rows)}
    if rows:
        for name in rows[0]:
            summary[name] = sum(r[name] for r in rows) / len(rows)
    if latencies_ms:
        summary["p50_ms"] = percentile(latencies_ms, 50)
        summary["p95_ms"] = percentile(latencies_ms, 95)
    return summary


def gap_sweep(answerable: Sequence[float], unanswerable: Sequence[float],
              thresholds: Iterable[float]) -> list[dict]:
    """For each threshold t, how many unanswerable questions get an evidence gap
    (confidence < t) and how many answerable ones get a false gap. A question without
    hits should be passed with confidence 0.0."""
    out = []
    for t in thresholds:
        out.append({"threshold": t,
                    "gaps_unanswerable": sum(1 for c in unanswerable if c < t),
                    "false_gaps_answerable": sum(1 for c in answerable if c < t)})
    return out


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """Area under the ROC curve of a score that should be higher for ``positives``
    (e.g. answerable questions' top retrieval score) than for ``negatives``
    (unanswerable ones): the probability that a random positive outscores a random
    negative, ties counting one half. Computed by the rank formula of the Mann-Whitney
    U statistic (Mann & Whitney 1947; Hanley & McNeil 1982, Radiology 143:29):
    ``U = R_pos - n_pos (n_pos + 1) / 2`` with ``R_pos`` the sum of the positives'
    mid-ranks in the pooled sample, ``AUROC = U / (n_pos n_neg)``. Raises
    ``ValueError`` when either group is empty."""
    if not positives or not negatives:
        raise ValueError("AUROC needs at least one positive and one negative score")
    pooled = sorted([(v, 1) for v in positives] + [(v, 0) for v in negatives])
    rank_sum, i = 0.0, 0
    while i < len(pooled):
        j = i
        while j < len(pooled) and pooled[j][0] == pooled[i][0]:
            j += 1
        mid = (i + 1 + j) / 2  # mid-rank of the tied block (1-based ranks i+1 .. j)
        rank_sum += mid * sum(label for _, label in pooled[i:j])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
