"""FTS5's postings copied into arrays, kept in the search database beside FTS5: the BM25
leg of a large index scores them in numpy (:mod:`indexes.retrieval.bm25_arrays`).

What is stored (schema migration 10):

- ``postings``: per term (as FTS5's tokenizer makes it), the rowids holding it (int32
  blob, ascending) and its occurrences in each weighted by column (float32 blob), read
  from FTS5's own index through ``fts5vocab`` (:func:`build`);
- ``postings_rows``: the build's random name, the column weights the frequencies were
  summed with (only weights that sum exactly are used:
  :func:`indexes.retrieval.maxscore.exact_weights`) and each row's length in tokens
  (int32 blob indexed by rowid, FTS5's ``docsize``);
- ``postings_stale``: rowids written since (insert, update, delete; kept by triggers
  while postings exist). A search scores them with FTS5 itself, so results are exact
  between builds; the engine builds again when too many are stale (:data:`REBUILD_STALE`).

Costs at 100,000 entries (151,449 chunks, 26,370 terms, 11.0 M postings): a build reads
20.9 M token instances in 7.6 s (evals/results/bench-scale.md) and stores ~88 MB; a
search reads the blobs of its terms only (a word in 45,000 rows: 360 KB).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from indexes.documents import Hit, hits_from_rows
from indexes.retrieval.passages import TOKENIZER

if TYPE_CHECKING:  # numpy is imported only where postings are read or built: a search of
    # a small index, or one the embedding server ranks, never imports it
    from indexes.retrieval.bm25_arrays import Contributions, TermPostings
    from indexes.sqlite.vectors import RowFilter

COLUMNS = ("title", "aliases", "tags", "summary", "body")

POSTINGS_FROM = 20_000
"""Documents from which the index keeps postings and its BM25 leg scores them in numpy.
Below, FTS5's own query answers in a few ms (MAXSCORE_FROM's measurements) and the copy
is not worth its disk."""

REBUILD_STALE = 0.05
"""The engine builds the postings again once more than this fraction of the documents
were written since they were built: each stale row costs the search an FTS5 lookup."""

SCHEMA = """
    CREATE TABLE IF NOT EXISTS postings (
        term TEXT PRIMARY KEY, rowids BLOB NOT NULL, freqs BLOB NOT NULL
    );
    CREATE TABLE IF NOT EXISTS postings_rows (
        id INTEGER PRIMARY KEY CHECK (id = 1), build TEXT NOT NULL, weights TEXT NOT NULL,
        lengths BLOB NOT NULL
    );
    CREATE TABLE IF NOT EXISTS postings_stale (rowid INTEGER PRIMARY KEY);
    CREATE TRIGGER IF NOT EXISTS docs_postings_ai AFTER INSERT ON docs
    WHEN EXISTS (SELECT 1 FROM postings_rows) BEGIN
        INSERT INTO postings_stale SELECT new.rowid
        WHERE NOT EXISTS (SELECT 1 FROM postings_stale WHERE rowid = new.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS docs_postings_ad AFTER DELETE ON docs
    WHEN EXISTS (SELECT 1 FROM postings_rows) BEGIN
        INSERT INTO postings_stale SELECT old.rowid
        WHERE NOT EXISTS (SELECT 1 FROM postings_stale WHERE rowid = old.rowid);
    END;
    CREATE TRIGGER IF NOT EXISTS docs_postings_au AFTER UPDATE ON docs
    WHEN EXISTS (SELECT 1 FROM postings_rows) BEGIN
        INSERT INTO postings_stale SELECT old.rowid
        WHERE NOT EXISTS (SELECT 1 FROM postings_stale WHERE rowid = old.rowid);
        INSERT INTO postings_stale SELECT new.rowid
        WHERE NOT EXISTS (SELECT 1 FROM postings_stale WHERE rowid = new.rowid);
    END;
"""
"""Migration 10: the tables above and the triggers that note stale rows (each rowid once;
not by ``INSERT OR IGNORE``, whose policy an outer upsert's ``ON CONFLICT`` overrides)."""

TABLES = ("postings", "postings_rows", "postings_stale")


@dataclass(frozen=True)
class PostingsState:
    """What a search needs to know before it uses the postings: the ``build`` (a random
    name each build; ``None``: never built), the ``weights`` they were built with, the
    ``stale`` rowids and, when asked for, each row's ``lengths`` at the build (int32 by
    rowid)."""

    build: str | None
    weights: tuple[float, ...] | None
    stale: tuple[int, ...]
    lengths: object = None

    def usable(self, weights: tuple[float, ...], n_docs: int) -> bool:
        """Whether a search with column ``weights`` over ``n_docs`` documents scores the
        postings: built with those weights, which sum exactly
        (:func:`~indexes.retrieval.maxscore.exact_weights`), at most
        :data:`REBUILD_STALE` of the documents stale."""
        if self.weights is None or self.weights != tuple(float(w) for w in weights):
            return False
        from indexes.retrieval.maxscore import exact_weights

        return exact_weights(self.weights) and len(self.stale) <= REBUILD_STALE * max(n_docs, 1)


def read_state(conn: sqlite3.Connection, *, lengths: bool = False) -> PostingsState:
    """The postings' :class:`PostingsState` as stored now (``lengths``: with each row's
    length, read in the same statement as the build's name)."""
    row = conn.execute(f"SELECT build, weights{', lengths' if lengths else ''} "
                       "FROM postings_rows").fetchone()
    if row is None:
        return PostingsState(None, None, ())
    stale = tuple(r[0] for r in conn.execute("SELECT rowid FROM postings_stale ORDER BY rowid"))
    found = None
    if lengths:
        import numpy as np

        found = np.frombuffer(row[2], dtype=np.int32)
    return PostingsState(row[0], tuple(float(w) for w in json.loads(row[1])), stale, found)


def due(state: PostingsState, weights: tuple[float, ...], n_docs: int, *,
        postings_from: int = POSTINGS_FROM) -> bool:
    """Whether the postings should be built (again): the index has at least
    ``postings_from`` documents, the ``weights`` sum exactly, and the postings are
    missing, built with other weights or too stale."""
    from indexes.retrieval.maxscore import exact_weights

    return (n_docs >= postings_from and exact_weights(tuple(float(w) for w in weights))
            and not state.usable(weights, n_docs))


def drop(conn: sqlite3.Connection) -> None:
    """Delete the postings (the triggers stop noting rows)."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")


def build(conn: sqlite3.Connection, weights: tuple[float, ...]) -> int:
    """Copy FTS5's postings of ``docs_fts`` with the column ``weights`` (call inside a
    write transaction); returns the number of terms. Reads every token instance once
    (``fts5vocab`` ``instance``, term by term) and every row's size (``docs_fts_docsize``,
    big-endian base-128 varints per column, as FTS5 writes them)."""
    import numpy as np

    drop(conn)
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.wiki_fts_instances "
                 "USING fts5vocab(main, docs_fts, instance)")
    codes = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(COLUMNS))
    weight_of = np.array(weights, dtype=np.float64)
    rows = conn.execute(f"SELECT term, group_concat(doc * 8 + CASE col {codes} END, ',') "
                        "FROM temp.wiki_fts_instances GROUP BY term")
    terms = 0
    for term, instances in rows:
        values = np.array(instances.split(","), dtype=np.int64)
        rowids, columns = values >> 3, values & 7
        starts = np.flatnonzero(np.r_[True, rowids[1:] != rowids[:-1]])
        freqs = np.add.reduceat(weight_of[columns], starts)
        conn.execute("INSERT INTO postings VALUES (?, ?, ?)",
                     (term, rowids[starts].astype(np.int32).tobytes(),
                      freqs.astype(np.float32).tobytes()))
        terms += 1
    sizes = conn.execute("SELECT id, sz FROM docs_fts_docsize").fetchall()
    lengths = np.zeros(max((i for i, _ in sizes), default=0) + 1, dtype=np.int32)
    for rowid, size in sizes:
        lengths[rowid] = sum(_varints(size))
    conn.execute("INSERT INTO postings_rows VALUES (1, ?, ?, ?)",
                 (uuid.uuid4().hex, json.dumps([float(w) for w in weights]), lengths.tobytes()))
    conn.execute("DELETE FROM postings_stale")
    return terms


def term_postings(conn: sqlite3.Connection, terms: list[str],
                  build: str | None) -> dict[str, TermPostings] | None:
    """The stored postings of ``terms`` (a term no row holds is absent); ``None`` when the
    postings are no longer those of ``build`` (built again meanwhile)."""
    import numpy as np

    from indexes.retrieval.bm25_arrays import TermPostings

    found = conn.execute("SELECT term, rowids, freqs, (SELECT build FROM postings_rows) "
                         "FROM postings WHERE term IN (SELECT value FROM json_each(?))",
                         [json.dumps(terms)]).fetchall()
    if any(row[3] != build for row in found):
        return None
    return {term: TermPostings(np.frombuffer(rowids, dtype=np.int32),
                               np.frombuffer(freqs, dtype=np.float32))
            for term, rowids, freqs, _ in found}


def table_totals(conn: sqlite3.Connection) -> tuple[int, float]:
    """``(rows, tokens per row)`` of ``docs_fts`` now, from FTS5's averages record (rowid 1
    of ``docs_fts_data``: the row count, then each column's token total, as varints) —
    the ``N`` and ``avgdl`` of its ``bm25()``."""
    row = conn.execute("SELECT block FROM docs_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0.0
    values = _varints(row[0])
    n_rows = values[0]
    return n_rows, (sum(values[1:]) / n_rows if n_rows else 0.0)


def fts5_contributions(conn: sqlite3.Connection, match: str,
                       weight_list: str) -> Contributions:
    """FTS5's own ``bm25()`` of the one phrase ``match`` for every row holding it: the
    phrase's share of each row's score in a query of several phrases."""
    import numpy as np

    from indexes.retrieval.bm25_arrays import Contributions

    found = conn.execute(f"SELECT rowid, -bm25(docs_fts, {weight_list}) FROM docs_fts "
                         "WHERE docs_fts MATCH ?", [match]).fetchall()
    return Contributions(np.array([r for r, _ in found], dtype=np.int64),
                         np.array([s for _, s in found], dtype=np.float64))


FEW_STALE = 32
"""Up to this many stale rows, FTS5 looks each up by rowid (the whole query run once per
row); above, it runs the query once and keeps the stale rows (``+rowid``): 200 stale rows
looked up one by one took 102 ms at 20,000 documents."""


def stale_scores(conn: sqlite3.Connection, matches: str, weight_list: str, where: str,
                 params: list, stale: int) -> list[tuple[int, float]]:
    """``(rowid, score)`` of the stale rows (``stale`` of them) matching the OR
    expression ``matches`` and the filter ``where`` (alias ``d``), scored by FTS5 itself
    over the table as it is now."""
    rowid = "rowid" if stale <= FEW_STALE else "+rowid"
    return conn.execute(
        f"SELECT f.r, f.s FROM (SELECT rowid AS r, -bm25(docs_fts, {weight_list}) AS s "
        f"FROM docs_fts WHERE docs_fts MATCH ? AND {rowid} IN "
        "(SELECT rowid FROM postings_stale)) f "
        f"CROSS JOIN docs d ON d.rowid = f.r WHERE {where}", [matches, *params]).fetchall()


class PhraseTokens:
    """The tokens FTS5 makes of a query phrase, by FTS5's own tokenizer (the index's
    :data:`~indexes.retrieval.passages.TOKENIZER`) in a private in-memory database, so
    a stemmed query word is the term the postings hold. Kept per phrase (at most
    :attr:`LIMIT`); thread-safe."""

    LIMIT = 8192

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None
        self._known: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def __call__(self, phrase: str) -> tuple[str, ...]:
        """The tokens of ``phrase`` (an FTS5 string, quoted) in order."""
        with self._lock:
            if phrase not in self._known:
                if len(self._known) >= self.LIMIT:
                    self._known = {}
                self._known[phrase] = self._tokens(phrase)
            return self._known[phrase]

    def _tokens(self, phrase: str) -> tuple[str, ...]:
        if self._conn is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
            self._conn.execute("CREATE VIRTUAL TABLE words USING fts5(x, tokenize="
                               f"\"{TOKENIZER}\")")
            self._conn.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, instance)")
        text = phrase[1:-1].replace('""', '"') if phrase.startswith('"') else phrase
        self._conn.execute("DELETE FROM words")
        self._conn.execute("INSERT INTO words(x) VALUES (?)", [text])
        return tuple(t for t, in self._conn.execute("SELECT term FROM tokens ORDER BY offset"))


phrase_tokens = PhraseTokens()
"""The process's tokenizer of query phrases."""


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints (base 128, high bit set on all but the last byte; up to 9 bytes,
    the ninth all 8 bits) read from ``blob``, in order."""
    values, value, count = [], 0, 0
    for byte in blob:
        if count == 8:
            values.append((value << 8) | byte)
            value, count = 0, 0
            continue
        value = (value << 7) | (byte & 0x7F)
        count += 1
        if not byte & 0x80:
            values.append(value)
            value, count = 0, 0
    return values



def search(conn: sqlite3.Connection, phrases: list[str], state: PostingsState, *,
           weights: tuple[float, ...], where: str, params: list, rows: RowFilter | None,
           limit: int, frequency: Callable[[str], int]) -> list[Hit] | None:
    """The ``limit`` best documents matching any of ``phrases`` (FTS5 strings) and the
    filter (``where`` over alias ``d`` with ``params``; ``rows``, the same filter as
    rowids), by FTS5's ``bm25()`` with the column ``weights``, ties by rowid: the list
    FTS5's whole OR query gives, scored from the postings
    (:mod:`indexes.retrieval.bm25_arrays`); ``state`` read with its lengths.

    A phrase of one token is scored from its postings; one of several tokens (``covid
    19``), whose rows FTS5's positions decide, by FTS5's ``bm25()`` of it alone. Rows
    written since the build (``state.stale``) are scored by FTS5 over the whole query
    (:func:`stale_scores`: a cost that grows with their number, hence
    :data:`REBUILD_STALE`), and the words' document frequencies then come from FTS5
    (``frequency``, the engine's memo of them). ``None`` when a phrase has no token (FTS5
    decides what it matches) or the postings were built again since ``state`` was read:
    the caller runs FTS5's query instead."""
    import numpy as np

    from indexes.retrieval.bm25_arrays import ScoreBoard, phrase_scores

    tokens = [phrase_tokens(p) for p in phrases]
    if not tokens or any(not t for t in tokens) or state.lengths is None:
        return None
    stored = term_postings(conn, [t[0] for t in tokens if len(t) == 1], state.build)
    if stored is None:
        return None
    lengths = state.lengths
    n_rows, avgdl = table_totals(conn)
    weight_list = ", ".join(str(float(w)) for w in weights)
    stale = np.array(state.stale, dtype=np.int64)
    board = ScoreBoard(max(len(lengths), int(stale.max()) + 1 if len(stale) else 0))
    for phrase, words in zip(phrases, tokens, strict=True):
        if len(words) > 1:
            part = fts5_contributions(conn, phrase, weight_list)
            board.add(part.rowids, part.scores)
            continue
        found = stored.get(words[0])
        if found is not None:
            df = frequency(phrase) if len(stale) else len(found.rowids)
            board.add(found.rowids, phrase_scores(found, df=df, n_rows=n_rows, avgdl=avgdl,
                                                  lengths=lengths))
    if len(stale):
        board.drop(stale)
    if rows is not None:
        chosen = np.frombuffer(rows.rowids, dtype=np.int64)
        if rows.keep:
            board.keep_only(chosen)
        else:
            board.drop(chosen)
    if len(stale):
        for rowid, score in stale_scores(conn, " OR ".join(phrases), weight_list, where,
                                         params, len(stale)):
            board.put(rowid, score)
    return _hits(conn, board.top(limit))


def _hits(conn: sqlite3.Connection, ranked: list[tuple[int, float]]) -> list[Hit]:
    """Hits of ``(rowid, score)`` pairs, in order."""
    if not ranked:
        return []
    found = {r[0]: r[1:] for r in conn.execute(
        "SELECT d.rowid, d.key, d.doc_id, d.title, d.summary, d.category, d.status FROM "
        "json_each(?) j CROSS JOIN docs d ON d.rowid = j.value",
        [json.dumps([rowid for rowid, _ in ranked])])}
    return hits_from_rows([(*found[rowid], score) for rowid, score in ranked
                           if rowid in found], negate=False)
