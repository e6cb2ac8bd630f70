"""The trigram path: substring search for scripts written without spaces (CJK, Thai) and,
when BM25 finds nothing, for parts of words. Terms of three or more characters use a
``tokenize='trigram'`` FTS5 table; shorter ones (CJK words are often 1-2 characters) a scan.
"""

from __future__ import annotations

import sqlite3

from indexes.documents import Hit, hits_from_rows, in_order
from indexes.retrieval.query import quote, substring_terms


def search_substrings(conn: sqlite3.Connection, query: str, where: str, params: list, *,
                      limit: int, include_latin: bool) -> list[Hit]:
    """Documents containing the query's substring terms, best first; empty when no term
    qualifies. ``where``/``params``: the filter condition over table alias ``d``."""

    terms = substring_terms(query, include_latin=include_latin)
    if not terms:
        return []
    long_terms = [t for t in terms if len(t) >= 3]
    short_terms = [t for t in terms if len(t) < 3]
    hits: list[Hit] = []
    if long_terms:
        sql = (
            "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, "
            "bm25(docs_tri) AS s FROM docs_tri CROSS JOIN docs d ON d.rowid = docs_tri.rowid "
            f"WHERE docs_tri MATCH ? AND {where} ORDER BY s LIMIT ?"
        )
        expression = " OR ".join(quote(t) for t in long_terms)
        hits = hits_from_rows(conn.execute(sql, [expression, *params, limit]).fetchall(),
                     negate=True)
    if short_terms and len(hits) < limit:
        found = {h.key for h in hits}
        condition = " OR ".join("instr(d.title || ' ' || d.body, ?) > 0"
                                for _ in short_terms)
        sql = (
            "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, 0.0 "
            f"FROM docs d WHERE ({condition}) AND {where} ORDER BY d.key LIMIT ?"
        )
        rows = conn.execute(sql, [*short_terms, *params, limit]).fetchall()
        hits.extend(h for h in hits_from_rows(rows, negate=False) if h.key not in found)
    return in_order(hits[:limit])
