"""The BM25 leg on SQLite: FTS5's ``bm25()`` over the weighted columns, exact top k.

FTS5 computes ``bm25()`` for every row a MATCH returns (~1 us each on this machine), and
a query's common words match most of the table: at 100,000 entries an OR query of SciFact
words matched ~45,000 documents and ranking them cost ~43 ms where counting them cost 3
ms. :func:`search_bm25` scores the documents holding a rare phrase only, by MaxScore
(:mod:`indexes.retrieval.maxscore`), and proves the result equal to the whole query's.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from indexes.documents import Hit, hits_from_rows
from indexes.retrieval.maxscore import Split, first_split, split_under

HIT_COLUMNS = "d.key, d.doc_id, d.title, d.summary, d.category, d.status"

MAXSCORE_FROM = 20_000
"""Documents from which :func:`search_bm25` prunes by MaxScore. Below, the whole OR query
is one statement over at most that many rows and is faster (200 SciFact train queries,
limit 10 / 50, p50 ms, whole vs pruned: 0.93 / 1.20 vs 1.50 / 2.28 at 810 documents, 3.9 /
4.2 vs 4.5 / 5.3 at 5,183); at 100,000 pruning is 2.3x faster (docs/decisions.md)."""


def document_frequency(conn: sqlite3.Connection, match: str) -> int:
    """The number of documents FTS5 matches ``match`` in (a phrase's df)."""
    return conn.execute("SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?",
                        [match]).fetchone()[0]


def search_bm25(conn: sqlite3.Connection, phrases: list[str], where: str, params: list, *,
                weights: tuple[float, ...], limit: int, narrow: bool = False,
                frequency: Callable[[str], int] | None = None,
                maxscore_from: int = MAXSCORE_FROM) -> list[Hit]:
    """The ``limit`` best documents matching any of ``phrases`` (FTS5 strings) and the
    filter condition ``where`` over alias ``d`` (with ``params``), by ``bm25()`` with the
    column ``weights``, ties by rowid: the same list as the whole OR query gives.

    First pass: the phrases held by more than 5 % of the documents are *common*; two
    statements (``rare NOT common`` and ``rare AND common``, each phrase once, so each
    row's bm25() is the whole query's) rank the documents holding a rare phrase. Their
    k-th score above the common phrases' bound proves them the top k. Else a second
    split, under that k-th score, is exact by construction; when no phrase fits under it,
    the whole OR query runs. ``narrow``: the filter keeps a small part of the documents
    (a scope, a folder, tags), so the statements apply it as they rank rather than
    ranking unfiltered first. ``frequency``: a phrase's df (default
    :func:`document_frequency`; the engine passes its memo of it). Below
    ``maxscore_from`` documents (:data:`MAXSCORE_FROM`) the whole OR query runs at once."""
    if limit <= 0:
        return []
    weight_list = ", ".join(str(float(w)) for w in weights)
    if len(phrases) > 1 and min(weights) >= 0:
        n_docs = conn.execute("SELECT count(*) FROM docs_fts_docsize").fetchone()[0]
        if n_docs >= maxscore_from:
            frequencies = {p: (frequency(p) if frequency else document_frequency(conn, p))
                           for p in phrases}
            split = first_split(frequencies, n_docs)
            if split is not None:
                rows = _ranked_rows(conn, _statements(split), where, params, weight_list, limit,
                                    narrow)
                kth = -rows[limit - 1][-1] if len(rows) >= limit else 0.0
                if kth > split.bound:
                    return hits_from_rows(rows, negate=True)
                split = split_under(frequencies, n_docs, kth)
                if split is not None:
                    return hits_from_rows(_ranked_rows(conn, _statements(split), where, params,
                                                       weight_list, limit, narrow), negate=True)
    return hits_from_rows(_ranked_rows(conn, [" OR ".join(phrases)], where, params,
                                       weight_list, limit, narrow), negate=True)


def _statements(split: Split) -> list[str]:
    """The two MATCH expressions of a split: documents holding a rare phrase and no
    common one, and those holding both. Each phrase appears once, so FTS5's bm25() of a
    row is the whole OR query's (a phrase a row lacks adds 0)."""
    rare, common = " OR ".join(split.rare), " OR ".join(split.common)
    return [f"({rare}) NOT ({common})", f"({rare}) AND ({common})"]


def _ranked_rows(conn: sqlite3.Connection, matches: list[str], where: str, params: list,
                 weight_list: str, limit: int, narrow: bool) -> list[tuple]:
    """Hit rows (score last: FTS5's bm25, negative) of the best ``limit`` documents that
    match any of ``matches`` (one MATCH expression, or two whose match sets are disjoint)
    and pass the filter, ties by rowid.

    FTS5 ranks its matches alone first (the best ``max(4 * limit, 200)``), and only those
    are joined with the documents and filtered (2-3x faster on SciFact than joining every
    match). When fewer than ``limit`` survive, or at once when the filter is ``narrow``,
    the statements rank inside the filter: the rowids it keeps are read once, from the
    covering index of the filter columns where it can, and each match is checked against
    them (``+rowid``: a plain ``rowid IN`` makes FTS5 run the query once per rowid)."""
    rows: list[tuple] = []
    if not narrow:
        cap = max(4 * limit, 200)
        rows = conn.execute(
            f"SELECT {HIT_COLUMNS}, f.s FROM ({_ranking(weight_list, len(matches), '')}) f "
            f"CROSS JOIN docs d ON d.rowid = f.r WHERE {where} ORDER BY f.s, f.r LIMIT ?",
            [*_ranking_params(matches, [], cap), *params, limit]).fetchall()
    if len(rows) < limit and where != "1":
        inside = f" AND +docs_fts.rowid IN (SELECT d.rowid FROM docs d WHERE {where})"
        rows = conn.execute(
            f"SELECT {HIT_COLUMNS}, f.s FROM ({_ranking(weight_list, len(matches), inside)}) "
            "f CROSS JOIN docs d ON d.rowid = f.r ORDER BY f.s, f.r",
            _ranking_params(matches, params, limit)).fetchall()
    return rows


def _ranking(weight_list: str, arms: int, condition: str) -> str:
    """A ranked ``(r, s)`` list, best first, of ``arms`` FTS5 statements (one or two)
    under ``condition``; parameters as :func:`_ranking_params` lists them."""
    arm = (f"SELECT docs_fts.rowid AS r, bm25(docs_fts, {weight_list}) AS s FROM docs_fts "
           f"WHERE docs_fts MATCH ?{condition} ORDER BY s, r LIMIT ?")
    if arms == 1:
        return arm
    return f"SELECT * FROM ({arm}) UNION ALL SELECT * FROM ({arm}) ORDER BY s, r LIMIT ?"


def _ranking_params(matches: list[str], params: list, limit: int) -> list:
    """Per statement its MATCH, the condition's ``params`` and ``limit``; then the
    union's ``limit`` when there are two."""
    values = [v for match in matches for v in (match, *params, limit)]
    return values + [limit] if len(matches) > 1 else values
