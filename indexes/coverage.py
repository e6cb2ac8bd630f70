"""Coverage of a query by one document, matched by FTS5 itself (see confidence.py)."""

from __future__ import annotations

from indexes.confidence import idf, weighted_coverage
from indexes.query import phrase, query_words
from indexes.store import Filters, SearchIndex
from indexes.text import no_space_runs


def word_matches(index: SearchIndex, word: str, key: str | None = None) -> tuple[int, bool]:
    """``(document frequency, found in document key)`` of one query word, matched by FTS5
    itself (same tokenizer and stemming as the index; a substring scan for space-less
    scripts)."""
    runs = no_space_runs(word)
    if runs:
        condition = " AND ".join("instr(d.title || ' ' || d.aliases || ' ' || d.summary "
                                 "|| ' ' || d.body, ?) > 0" for _ in runs)
        base, params = f"SELECT d.rowid FROM docs d WHERE {condition}", list(runs)
    else:  # the FTS table alone: its rowids are the docs' rowids
        base, params = "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?", [phrase(word)]
    df = index.conn.execute(f"SELECT count(*) FROM ({base})", params).fetchone()[0]
    found = key is not None and index.conn.execute(
        f"SELECT 1 FROM ({base}) WHERE rowid = (SELECT rowid FROM docs WHERE key = ?)",
        [*params, key]).fetchone() is not None
    return df, found


def coverage(index: SearchIndex, query: str, key: str) -> float:
    """IDF-weighted share of the query's words found in document ``key`` (0-1); see
    :mod:`indexes.confidence`."""
    n_docs = index.count(Filters(statuses=None))
    return weighted_coverage([word_matches(index, w, key) for w in query_words(query)], n_docs)


def word_weights(index: SearchIndex, query: str) -> dict[str, float]:
    """``query word -> BM25 idf`` over the whole index."""
    n_docs = index.count(Filters(statuses=None))
    return {w: idf(word_matches(index, w)[0], n_docs) for w in query_words(query)}
