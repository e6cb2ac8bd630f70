"""Ranking short passages (sentences) against a query with the index's own tokenizer.

The passages are loaded into a throw-away in-memory FTS5 table with the same tokenizer
(Porter stemming over unicode61) and ranked by BM25 with the query built exactly as for
entries, so "approved" matches "approve" in a sentence just as it does in an entry.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from indexes.retrieval.query import match_expression
from indexes.retrieval.text import code_tokens

TOKENIZER = "porter unicode61 remove_diacritics 2"


def rank_passages(query: str, passages: Sequence[str], *,
                  limit: int = 10) -> list[tuple[int, float]]:
    """``(passage index, BM25 score)`` of the passages matching ``query``, best first
    (score higher is better). Raises ``EmptyQueryError`` for a query without words."""
    expression = match_expression(query)
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE p USING fts5(text, tokenize=\"{TOKENIZER}\")")
        conn.executemany("INSERT INTO p(rowid, text) VALUES (?, ?)",
                         [(i, code_tokens(text)) for i, text in enumerate(passages)])
        rows = conn.execute("SELECT rowid, bm25(p) AS s FROM p WHERE p MATCH ? "
                            "ORDER BY s, rowid LIMIT ?", [expression, limit]).fetchall()
    finally:
        conn.close()
    return [(int(rowid), -score) for rowid, score in rows]
