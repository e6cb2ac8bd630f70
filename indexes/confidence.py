"""How well a document covers a query: the basis of the evidence-gap decision.

coverage = sum of idf(t) over query tokens t found in the document
           / sum of idf(t) over all distinct query tokens,

with the BM25 inverse document frequency idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
(Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009; the
``1 +`` keeps it positive, as Lucene does). Rare words weigh most, so a question whose
distinctive words are absent from the best hit scores low even when its common words
match; a nonsense word (df = 0) carries the largest weight of all. The result is in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from indexes.text import fold, no_space_runs, tokens


def idf(df: int, n_docs: int) -> float:
    """BM25 idf of a token found in ``df`` of ``n_docs`` documents (always > 0)."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def coverage(
    query_tokens: Sequence[str],
    document_text: str,
    document_frequency: Mapping[str, int],
    n_docs: int,
) -> float:
    """IDF-weighted share of ``query_tokens`` present in ``document_text`` (0.0 - 1.0).

    Tokens of space-less scripts (CJK) count as present when they occur as a substring of
    the folded document text, since such scripts are not split into words.
    """
    distinct = list(dict.fromkeys(query_tokens))
    if not distinct:
        return 0.0
    doc_tokens = set(tokens(document_text))
    folded = fold(document_text) if any(no_space_runs(t) for t in distinct) else ""
    total = found = 0.0
    for token in distinct:
        weight = idf(document_frequency.get(token, 0), n_docs)
        total += weight
        if token in doc_tokens or (folded and no_space_runs(token) and token in folded):
            found += weight
    return found / total if total else 0.0
