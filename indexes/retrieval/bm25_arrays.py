"""FTS5's ``bm25()`` computed over postings held as numpy arrays: the exact top k at a
cost of one multiply-add per posting of the query's terms.

At 100,000 entries FTS5 evaluates ``bm25()`` through its auxiliary-function API for each
row a MATCH returns (~1 us a row) and MaxScore still scores ~15,000 rows for a query with
several mid-frequency words (top-50 p95 72 ms). The same sums over the same postings as
arrays take 1.7 ms p50 / 2.6 ms p95 (docs/decisions.md, "The floor of BM25 top-k at
100,000 entries").

The formula and the order of its operations are FTS5's (``fts5_aux.c``,
``fts5Bm25Function``)::

    score += idf[i] * ((f[i] * (k1 + 1.0)) / (f[i] + k1 * (1 - b + b * D / avgdl)))

per phrase ``i`` in query order, ``f`` the phrase's occurrences weighted by column, ``D``
the row's tokens over all columns, ``avgdl`` the table's tokens per row and ``idf`` as
:func:`indexes.retrieval.maxscore.fts5_idf`. ``f`` is stored summed (float32), so the
scores are FTS5's to the last bit only where every sum of weights is exact in any order:
:func:`indexes.retrieval.maxscore.exact_weights` (whole numbers or quarters, as the
defaults are); the engines use the arrays only then, FTS5 (or the SQL leg) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexes.retrieval.maxscore import K1, B, fts5_idf


@dataclass(frozen=True)
class TermPostings:
    """One term's postings: ``rowids`` (int32 or int64, ascending, each once) and
    ``freqs`` (float32, the term's occurrences in that row weighted by column; 0 or
    negative where weights are)."""

    rowids: np.ndarray
    freqs: np.ndarray


@dataclass(frozen=True)
class Contributions:
    """A phrase's share of each matching row's score, computed elsewhere (FTS5's own
    ``bm25()`` of the phrase alone, for a phrase of several tokens): ``rowids`` (int64)
    and ``scores`` (float64, larger is better)."""

    rowids: np.ndarray
    scores: np.ndarray


def phrase_scores(postings: TermPostings, *, df: int, n_rows: int, avgdl: float,
                  lengths: np.ndarray) -> np.ndarray:
    """Each posting's contribution to its row's score (float64, one per posting).

    ``df``: the rows holding the term (FTS5's ``nHit``); ``n_rows``, ``avgdl``: the table's
    rows and tokens per row; ``lengths``: tokens per row indexed by rowid (every rowid of
    ``postings`` inside it)."""
    f = postings.freqs.astype(np.float64)
    d = lengths[postings.rowids].astype(np.float64)
    return fts5_idf(df, n_rows) * ((f * (K1 + 1.0)) / (f + K1 * (1 - B + B * d / avgdl)))


class ScoreBoard:
    """Scores of every rowid below ``size`` (float64) and which rows matched a phrase;
    a larger rowid added or put grows it.

    Add phrases in query order (:meth:`add`), as FTS5 sums them; :meth:`top` gives the best
    rows. Memory: 9 bytes per rowid up to the largest (0.9 MB at 100,000 rows; rowids
    grow as documents are deleted and added)."""

    def __init__(self, size: int):
        self.scores = np.zeros(size, dtype=np.float64)
        self.matched = np.zeros(size, dtype=bool)

    def _fit(self, largest: int) -> None:
        if largest >= len(self.scores):
            grown = largest + 1
            self.scores = np.concatenate([self.scores, np.zeros(grown - len(self.scores))])
            self.matched = np.concatenate([self.matched,
                                           np.zeros(grown - len(self.matched), dtype=bool)])

    def add(self, rowids: np.ndarray, scores: np.ndarray) -> None:
        """Add one phrase's ``scores`` to its ``rowids`` (each once)."""
        if len(rowids):
            self._fit(int(rowids.max()))
        self.scores[rowids] += scores
        self.matched[rowids] = True

    def drop(self, rowids: np.ndarray) -> None:
        """Forget ``rowids`` (rows left out by a filter, or scored elsewhere); rowids past
        the board are ignored."""
        rowids = rowids[rowids < len(self.scores)]
        self.scores[rowids] = 0.0
        self.matched[rowids] = False

    def put(self, rowid: int, score: float) -> None:
        """Set one row's whole score (a row scored elsewhere)."""
        self._fit(rowid)
        self.scores[rowid] = score
        self.matched[rowid] = True

    def keep_only(self, rowids: np.ndarray) -> None:
        """Forget every row but ``rowids``."""
        kept = np.zeros_like(self.matched)
        kept[rowids[rowids < len(kept)]] = True
        self.matched &= kept

    def top(self, limit: int) -> list[tuple[int, float]]:
        """``(rowid, score)`` of the best ``limit`` matched rows, best first, ties by the
        lower rowid (FTS5's ``ORDER BY bm25(...), rowid``)."""
        rows = np.flatnonzero(self.matched)
        if not len(rows) or limit <= 0:
            return []
        scores = self.scores[rows]
        if len(rows) > limit:
            kth = np.partition(scores, len(rows) - limit)[len(rows) - limit]
            near = scores >= kth
            rows, scores = rows[near], scores[near]
        order = np.lexsort((rows, -scores))[:limit]
        return [(int(rows[i]), float(scores[i])) for i in order]
