"""Exact BM25 top-k without scoring the documents that hold only common words.

MaxScore (Turtle and Flood, "Query evaluation: strategies and optimizations", IPM 1995):
a document matching none of a query's *rare* phrases can score at most the sum of the
*common* phrases' largest contributions. When the k-th best score among the documents
matching a rare phrase is above that sum, those documents hold the whole top k, and the
common phrases' long posting lists need only be checked for the rare documents rather
than scored for every one of their matches.

The scores are FTS5's ``bm25()``: per phrase ``idf * f * (k1 + 1) / (f + k1 * (1 - b + b
* len / avg_len))`` with ``f`` the phrase's occurrences weighted by column (weights >= 0)
and FTS5's idf ``log((N - df + 0.5) / (df + 0.5))`` (at least 1e-6; ``fts5_aux.c``). The
fraction is below ``k1 + 1`` for every ``f`` and length, so ``idf * (k1 + 1)`` bounds a
phrase's contribution (the bound MaxScore needs; Robertson and Zaragoza, "The
Probabilistic Relevance Framework: BM25 and Beyond", 2009, section 3.4).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

K1, B = 1.2, 0.75
"""FTS5's bm25() constants (``fts5_aux.c``), also used by the PostgreSQL ranking."""

COMMON_FRACTION = 0.05
"""A phrase is common, and skipped in the first pass, when more than this fraction of the
documents hold it. Chosen by latency alone (the ranking is exact at every value) on the
100,000-entry scale index: 0.02 and 0.1 were slower at p50 (docs/decisions.md, "BM25
top-k at 100,000 entries")."""


def fts5_idf(df: int, n_docs: int) -> float:
    """FTS5's bm25() idf: ``log((N - df + 0.5) / (df + 0.5))``, at least 1e-6."""
    value = math.log((n_docs - df + 0.5) / (df + 0.5)) if n_docs else 0.0
    return value if value > 0 else 1e-6


def largest_contribution(df: int, n_docs: int) -> float:
    """The most one phrase held by ``df`` of ``n_docs`` documents adds to a bm25() score:
    ``idf * (k1 + 1)``."""
    return fts5_idf(df, n_docs) * (K1 + 1)


@dataclass(frozen=True)
class Split:
    """The query's phrases in two parts: ``rare`` (scored for every match) and ``common``
    (only alongside a rare one); ``bound`` is the highest score a document holding only
    common phrases can reach (positive, larger is better)."""

    rare: tuple[str, ...]
    common: tuple[str, ...]
    bound: float


def split_phrases(frequencies: dict[str, int], n_docs: int,
                  take: Callable[[int, float], bool]) -> Split | None:
    """Move phrases to ``common``, most frequent first, while ``take(df, bound with it)``
    holds and at least one phrase stays rare; ``None`` when none moves.

    ``frequencies``: ``phrase -> document frequency`` (as FTS5 counts matches);
    ``take(df, bound)`` decides on one phrase given its df and the common part's bound if
    it joined."""
    ordered = sorted(frequencies, key=lambda p: (-frequencies[p], p))
    common: list[str] = []
    bound = 0.0
    for phrase in ordered[:-1]:
        grown = bound + largest_contribution(frequencies[phrase], n_docs)
        if not take(frequencies[phrase], grown):
            break
        common.append(phrase)
        bound = grown
    if not common:
        return None
    rare = tuple(p for p in frequencies if p not in common)
    return Split(rare=rare, common=tuple(common), bound=bound)


def first_split(frequencies: dict[str, int], n_docs: int,
                fraction: float = COMMON_FRACTION) -> Split | None:
    """The first pass's split: common = the phrases held by more than ``fraction`` of
    the documents."""
    return split_phrases(frequencies, n_docs, lambda df, _bound: df > fraction * n_docs)


def split_under(frequencies: dict[str, int], n_docs: int, threshold: float) -> Split | None:
    """The second pass's split, exact by construction: common = the most frequent phrases
    whose bound stays below ``threshold``, a k-th best score already reached."""
    return split_phrases(frequencies, n_docs, lambda _df, bound: bound < threshold)


WEIGHT_STEP = 4
"""Column weights must be multiples of ``1 / WEIGHT_STEP`` for :func:`exact_weights`."""

WEIGHT_LIMIT = 1024.0
"""... and at most this large in size. A sum of quarters is exact in float32 below 2^22:
with weights up to 1024, 4,096 occurrences of one word in one entry."""


def exact_weights(weights: tuple[float, ...]) -> bool:
    """Whether every sum of these column weights over a row's occurrences is exact in
    float32 whatever the order it is added in: each weight a multiple of 1/4 and at most
    1024 in size (finite). Then arrays summed pairwise (numpy) equal FTS5's running
    sum in double, and the BM25 arrays (:mod:`indexes.retrieval.bm25_arrays`) give FTS5's
    scores to the last bit; 0.3 or 0.1 round differently and can swap near ties."""
    return all(math.isfinite(w) and abs(w) <= WEIGHT_LIMIT
               and float(w) * WEIGHT_STEP == int(float(w) * WEIGHT_STEP) for w in weights)
