"""How well a document covers a query: the basis of the evidence-gap decision.

coverage = sum of idf(w) over query words w found in the document
           / sum of idf(w) over all distinct query words,

with the BM25 inverse document frequency idf(w) = ln(1 + (N - df + 0.5) / (df + 0.5))
(Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009; the
``1 +`` keeps it positive, as Lucene does). Rare words weigh most, so a question whose
distinctive words are absent from the best hit scores low even when its common words
match; a nonsense word (df = 0) carries the largest weight of all. The result is in [0, 1].
Whether a word is "found" is decided by FTS5 itself (same tokenizer and stemming as the
index), see the engines' ``word_matches``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from indexes.backend import IndexBackend
from indexes.retrieval.filters import Filters
from indexes.retrieval.query import query_words


def idf(df: int, n_docs: int) -> float:
    """BM25 idf of a word found in ``df`` of ``n_docs`` documents (always > 0)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def weighted_coverage(matches: Iterable[tuple[int, bool]], n_docs: int) -> float:
    """Coverage from ``(document frequency, found)`` pairs, one per distinct query word."""
    total = found = 0.0
    for df, present in matches:
        weight = idf(df, n_docs)
        total += weight
        if present:
            found += weight
    return found / total if total else 0.0


def coverage(index: IndexBackend, query: str, key: str) -> float:
    """IDF-weighted share of the query's words found in document ``key`` (0-1); see
    :func:`weighted_coverage`."""
    n_docs = index.count(Filters(statuses=None))
    return weighted_coverage(index.words_matched(query_words(query), key), n_docs)
