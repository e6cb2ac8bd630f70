"""The derived search database: one SQLite file with FTS5/BM25 and a trigram path.

Schema changes are numbered, append-only migrations tracked in ``PRAGMA user_version``
(:mod:`indexes.sqlite.schema`); typed reads of the stored rows are :mod:`indexes.sqlite.rows`.
Writers take ``BEGIN IMMEDIATE`` and every connection waits up to ``busy_timeout`` for a
lock, in WAL mode, so concurrent readers and writers never see "database is locked"
(docs/robustness.md, W4).
"""

from __future__ import annotations

import contextvars
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from indexes.backend import CheckMark
from indexes.documents import Document, Hit, scored_hits, with_leg
from indexes.errors import IndexBusyError, IndexSchemaError
from indexes.retrieval.filters import Filters
from indexes.retrieval.fusion import rrf
from indexes.retrieval.graph import expand
from indexes.retrieval.names import replace_names, search_names
from indexes.retrieval.query import match_phrases, normalize, phrase
from indexes.retrieval.text import no_space_runs
from indexes.sqlite import checkmark, postings
from indexes.sqlite.bm25 import MAXSCORE_FROM, search_bm25
from indexes.sqlite.fts_triggers import fts_text
from indexes.sqlite.marks import mark_sources, marks
from indexes.sqlite.memo import StateMemo
from indexes.sqlite.rows import DocRows, keys_json
from indexes.sqlite.schema import MIGRATIONS, statements
from indexes.sqlite.substrings import search_substrings
from indexes.sqlite.vectors import (
    CHUNK_WORDS,
    OVERLAP_WORDS,
    RowFilter,
    VectorStore,
    chunk_texts,
    rank_vector,
)

__all__ = ["MIGRATIONS", "Filters", "SearchIndex"]

BUSY_TIMEOUT_MS = 30_000

COLUMNS = ("title", "aliases", "tags", "summary", "body")
DEFAULT_WEIGHTS = (8.0, 6.0, 3.0, 3.0, 1.0)
"""BM25 column weights (title, aliases, tags, summary, body), tuned on the handbook dev set."""
FEW_LEFT_OUT = 4096
"""Below this many documents left out by a filter, the vector leg is given those (the
default filter leaves out only superseded entries); at or above it, the ones kept."""

VECTOR_WORKERS = 8
"""Vector legs ranked at once per process (a server's parallel reads each start one)."""
_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_MADE = threading.Lock()


def vector_workers() -> ThreadPoolExecutor:
    """The process's pool for the vector legs begun by ``start_vector`` (SQLite's and
    PostgreSQL's in a long-running process; threads start as calls need them)."""
    global _WORKERS
    with _WORKERS_MADE:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=VECTOR_WORKERS,
                                          thread_name_prefix="wiki-vector")
    return _WORKERS


class SearchIndex:
    """A derived search database at ``path`` (created and migrated on open).

    Use as a context manager or call :meth:`close`. Raises :class:`IndexSchemaError` when
    the file was written by a newer schema than this code knows.
    """

    def __init__(self, path: Path | str, *, weights: tuple[float, ...] = DEFAULT_WEIGHTS,
                 chunk_words: int = CHUNK_WORDS, busy_timeout_ms: int = BUSY_TIMEOUT_MS):
        self.path = Path(path)
        self.weights = weights
        self.maxscore_from = MAXSCORE_FROM
        """Documents from which the BM25 leg prunes by MaxScore
        (:data:`indexes.sqlite.bm25.MAXSCORE_FROM`; a test sets its own)."""
        self.postings_from = postings.POSTINGS_FROM
        """Documents from which :meth:`settle` keeps BM25 postings
        (:data:`indexes.sqlite.postings.POSTINGS_FROM`; a test sets its own)."""
        self.chunk_words = chunk_words
        self.busy_timeout_ms = busy_timeout_ms
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=busy_timeout_ms / 1000,
                               isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._enter_wal(conn)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.create_function("wiki_fts", 1, fts_text, deterministic=True)
        conn.execute("PRAGMA recursive_triggers = on")  # as every index was opened so far
        self.conn = conn
        self._migrate()
        self.memo = StateMemo(conn)
        """Values read from the database, kept until it changes
        (:class:`indexes.sqlite.memo.StateMemo`): filters' rowids, words' document
        frequencies, the document count."""
        self.vectors = VectorStore(conn, self.get_meta, self.set_meta)
        self.docs = DocRows(conn)
        """Typed reads of the documents' rows (:class:`indexes.sqlite.rows.DocRows`)."""

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _enter_wal(self, conn: sqlite3.Connection) -> None:
        """Switch the file to WAL, retrying while another process holds it.

        Switching a new file's journal mode (and WAL recovery) can answer SQLITE_BUSY at
        once, without calling the busy handler, when several processes open the same new
        index together; so retry with a short, growing sleep for up to ``busy_timeout_ms``,
        then raise :class:`IndexBusyError`. A file already in WAL is left as it is."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        pause = 0.005
        while True:
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if time.monotonic() + pause > deadline:
                    raise self._busy_error() from None
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _busy_error(self) -> IndexBusyError:
        return IndexBusyError(
            f"{self.path}: the search index is locked by another process (waited "
            f"{self.busy_timeout_ms / 1000:g} s); try again when the other wiki command "
            "finishes")

    def _migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise IndexSchemaError(
                f"{self.path}: schema version {version} is newer than this wiki "
                f"({len(MIGRATIONS)}); upgrade wiki or run `wiki index --rebuild`"
            )
        if version == len(MIGRATIONS):
            return
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, len(MIGRATIONS)):
                for statement in statements(MIGRATIONS[number]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (``BEGIN IMMEDIATE``): waits for other writers, then holds
        the write lock until the block ends; rolls back on error. Raises
        :class:`IndexBusyError` when another process held the lock for the whole wait."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            raise self._busy_error() from None
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:  # SQLite already rolled back after e.g. a full disk
                self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- metadata ----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """The stored value for ``key`` or ``None``."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def get_metas(self, keys: Sequence[str]) -> dict[str, str]:
        """``key -> stored value`` of those of ``keys`` stored, in one statement."""
        keys = list(keys)
        return dict(self.conn.execute(
            f"SELECT key, value FROM meta WHERE key IN ({', '.join('?' * len(keys))})",
            keys).fetchall()) if keys else {}

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (call inside :meth:`transaction` when batching)."""
        _upsert(self.conn, "meta", [{"key": key, "value": value}])

    # -- documents ---------------------------------------------------------------------
    def content_hashes(self) -> dict[str, str]:
        """``key -> content_hash`` of every stored document."""
        return dict(self.conn.execute("SELECT key, content_hash FROM docs"))

    def count(self, filters: Filters | None = None) -> int:
        """Number of documents (matching ``filters`` when given)."""
        where, params = (filters or Filters(statuses=None)).sql()
        return self.memo.get(("count", where, *params), lambda: self.conn.execute(
            f"SELECT count(*) FROM docs d WHERE {where}", params).fetchone()[0])

    def upsert(self, documents: Iterable[Document]) -> int:
        """Insert or replace documents by ``key`` (with their names and vector chunks);
        returns how many were written."""
        documents = list(documents)
        rows = [_row(doc) for doc in documents]
        if rows:
            _upsert(self.conn, "docs", rows)
        for doc, row in zip(documents, rows, strict=True):
            self.conn.execute("DELETE FROM revalidate WHERE key = ?", (doc.key,))
            replace_names(self.conn, doc.key, row["title"], row["aliases"].splitlines())
            self.vectors.replace_chunks(doc.key, chunk_texts(
                row["title"], row["summary"], row["body"], words=self.chunk_words,
                overlap=min(OVERLAP_WORDS, self.chunk_words // 4)))
            self.vectors.replace_sentences(doc.key, doc.sentences)
        return len(rows)

    def delete(self, keys: Iterable[str]) -> int:
        """Delete documents by ``key``; returns how many were asked for."""
        keys = list(keys)
        if keys:
            wanted = keys_json(keys)
            for table in ("docs", "names", "revalidate"):
                self.conn.execute(f"DELETE FROM {table} WHERE key IN "
                                  "(SELECT value FROM json_each(?))", [wanted])
        self.vectors.delete(keys)
        return len(keys)

    def clear(self) -> None:
        """Delete every document and metadata value."""
        for table in (*postings.TABLES, "docs", "meta", "names", "chunks", "sentences",
                      "revalidate"):  # postings first: their triggers then note nothing
            self.conn.execute(f"DELETE FROM {table}")  # embeddings stay: keyed by text

    def get(self, key: str) -> dict | None:
        """The stored row of one document as a dict (``extra`` decoded), or ``None``."""
        cursor = self.conn.execute("SELECT * FROM docs WHERE key = ?", (key,))
        row = cursor.fetchone()
        if row is None:
            return None
        record = dict(zip((c[0] for c in cursor.description), row, strict=True))
        record["extra"] = json.loads(record["extra"])
        return record

    def extras(self, keys: Iterable[str]) -> dict[str, dict]:
        """``key -> extra`` (the decoded JSON attributes) for the given keys, one query."""
        return {key: row.extra for key, row in self.docs.attributes(keys).items()}

    def keys_for_doc_id(self, doc_id: str) -> list[str]:
        """Keys of the documents whose ``doc_id`` is ``doc_id`` (normally one)."""
        sql = "SELECT key FROM docs WHERE doc_id = ? ORDER BY key"
        return [r[0] for r in self.conn.execute(sql, (doc_id,))]

    # -- revalidation marks and relations ------------------------------------------------
    def mark_sources(self, uris: Iterable[str], commit: str, when: str) -> list[str]:
        """Mark the documents citing any of ``uris`` as changed by ``commit`` at ``when``
        (call inside :meth:`transaction`); returns their keys (:mod:`indexes.sqlite.marks`)."""
        return mark_sources(self.conn, uris, commit, when)

    def marks(self, keys: Iterable[str] | None = None) -> dict[str, list[dict]]:
        """``key -> [{uri, commit, marked_at}]`` of marked documents (all, or ``keys``)."""
        return marks(self.conn, keys)

    def expand(self, seeds: dict[str, float], kinds: Iterable[str], *, depth: int = 2,
               decay: float = 0.5,
               allowed: set[str] | None = None) -> dict[str, tuple[float, int, str]]:
        """Documents reached from ``seeds`` along the relations ``kinds``
        (:func:`indexes.retrieval.graph.expand`)."""
        return expand(self.conn, seeds, kinds, depth=depth, decay=decay, allowed=allowed)

    # -- search ------------------------------------------------------------------------
    def search_bm25(self, query: str, *, limit: int = 10,
                    filters: Filters | None = None) -> list[Hit]:
        """BM25 over the weighted columns, exact top ``limit``: from the postings copied into
        arrays where :meth:`settle` built them (:mod:`indexes.sqlite.postings`), else by
        FTS5 without scoring every match of a common word (:mod:`indexes.sqlite.bm25`);
        raises ``EmptyQueryError`` for an empty query."""
        filters = filters or Filters()
        where, params = filters.sql()
        phrases = match_phrases(query)
        state = self.memo.get(("postings",), self._read_postings)
        if (limit > 0 and state.weights is not None
                and state.usable(self.weights, self.count(Filters(statuses=None)))):
            found = postings.search(self.conn, phrases, state, weights=self.weights,
                                    where=where, params=params,
                                    rows=self._row_filter(filters), limit=limit,
                                    frequency=self._document_frequency)
            if found is not None:
                return found
        return search_bm25(self.conn, phrases, where, params,
                           weights=self.weights, limit=limit, narrow=filters.narrow,
                           frequency=self._document_frequency,
                           maxscore_from=self.maxscore_from)

    def _read_postings(self) -> postings.PostingsState:
        return postings.read_state(self.conn, lengths=True)

    def settle(self) -> bool:
        """Bring what the index derives from its documents as a whole up to date after a
        batch of writes: the BM25 postings (:mod:`indexes.sqlite.postings`) are built when
        the index holds at least :attr:`postings_from` documents, the column weights sum
        exactly, and the postings are missing, built with other weights or more than
        :data:`~indexes.sqlite.postings.REBUILD_STALE` stale; otherwise, where they
        cannot be used, dropped. Returns whether they were built: ~6-8 s at 100,000
        entries, inside the caller's write transaction (or one of its own), so other
        writers wait for it and readers do not."""
        if not self.conn.in_transaction:
            if self._settle_step() is None:  # the common case: no write lock for nothing
                return False
            with self.transaction():
                return self.settle()
        step = self._settle_step()
        if step == "build":
            postings.build(self.conn, self.weights)
        elif step == "drop":
            postings.drop(self.conn)
        return step == "build"

    def _settle_step(self) -> str | None:
        """What :meth:`settle` has to do now: ``"build"``, ``"drop"`` (the postings can no
        longer be used: the index shrank below the size, or the weights do not sum
        exactly) or ``None``."""
        n_docs = self.count(Filters(statuses=None))
        state = postings.read_state(self.conn)
        if postings.due(state, self.weights, n_docs, postings_from=self.postings_from):
            return "build"
        if state.build is not None and (n_docs < self.postings_from
                                        or not state.usable(self.weights, n_docs)):
            return "drop"
        return None

    def _document_frequency(self, match: str) -> int:
        """How many documents the FTS5 expression ``match`` matches (a phrase's df), kept
        in :attr:`memo` until the database changes: the BM25 leg and the evidence-gap
        coverage of one question ask for the same words."""
        return self.memo.get(("df", match), lambda: self.conn.execute(
            "SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?", [match]).fetchone()[0])

    def search_trigram(self, query: str, *, limit: int = 10, filters: Filters | None = None,
                       include_latin: bool = False) -> list[Hit]:
        """Substring search (:mod:`indexes.sqlite.substrings`)."""
        where, params = (filters or Filters()).sql()
        return search_substrings(self.conn, query, where, params, limit=limit,
                                 include_latin=include_latin)

    def allowed_keys(self, filters: Filters | None) -> set[str] | None:
        """Keys passing ``filters`` (``None``: no restriction at all)."""
        filters = filters or Filters()
        if filters == Filters(statuses=None):
            return None
        where, params = filters.sql()
        return {r[0] for r in self.conn.execute(f"SELECT key FROM docs d WHERE {where}",
                                                params)}

    def excluded_keys(self, filters: Filters | None) -> set[str]:
        """Keys ``filters`` leave out: few, so cheaper than the allowed ones (3 ms / 5k)."""
        where, params = (filters or Filters()).sql()
        return {r[0] for r in self.conn.execute(
            f"SELECT key FROM docs d WHERE NOT coalesce(({where}), 0)", params)}

    def word_matches(self, word: str, key: str | None = None) -> tuple[int, bool]:
        """``(document frequency, found in document key)`` of one query word, matched by
        FTS5 itself (same tokenizer and stemming as the index; a substring scan for
        space-less scripts): the input of :func:`indexes.retrieval.coverage.coverage`."""
        runs = no_space_runs(word)
        if runs:
            condition = " AND ".join("instr(d.title || ' ' || d.aliases || ' ' || d.summary "
                                     "|| ' ' || d.body, ?) > 0" for _ in runs)
            base, params = f"SELECT d.rowid FROM docs d WHERE {condition}", list(runs)
        else:  # the FTS table alone: its rowids are the docs' rowids
            base, params = "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ?", [phrase(word)]
        df = (self.memo.get(("substrings", *runs), lambda: self.conn.execute(
            f"SELECT count(*) FROM ({base})", params).fetchone()[0]) if runs
            else self._document_frequency(params[0]))
        found = key is not None and self.conn.execute(
            f"SELECT 1 FROM ({base}) WHERE rowid = (SELECT rowid FROM docs WHERE key = ?)",
            [*params, key]).fetchone() is not None
        return df, found

    def words_matched(self, words: list[str], key: str | None = None
                      ) -> list[tuple[int, bool]]:
        """:meth:`word_matches` of each of ``words``, in order (each a statement or two,
        in process)."""
        return [self.word_matches(word, key) for word in words]

    def hits_for(self, keys: list[str], filters: Filters | None) -> dict[str, tuple]:
        """``key -> (key, doc_id, title, summary, category, status)`` of ``keys`` passing
        ``filters`` (:func:`indexes.retrieval.ranked.hits_for`)."""
        where, params = (filters or Filters()).sql()
        # json_each first (CROSS JOIN keeps that order): one lookup by key each, never a
        # scan of the filter index for a scope that keeps thousands
        return {r[0]: r for r in self.conn.execute(
            "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status FROM "
            "json_each(?) j CROSS JOIN docs d ON d.key = j.value "
            f"WHERE {where}", [keys_json(keys), *params])}

    def check_mark(self, fact: str) -> CheckMark:
        """Whether ``fact`` was recorded for this file as it is now (its ``.checked`` mark,
        :mod:`indexes.sqlite.checkmark`); ``record()`` records it for the file as it was
        at this call. An in-memory database keeps no mark."""
        before = checkmark.stamp(self.path)
        return CheckMark(fact in checkmark.facts(self.path, before),
                         lambda: checkmark.record(self.path, fact, before))

    def search_names(self, query: str, *, limit: int = 10,
                     filters: Filters | None = None) -> list[Hit]:
        """The alias/title leg (:mod:`indexes.retrieval.names`)."""
        where, params = (filters or Filters()).sql()
        return search_names(self.conn, query, where, params, limit=limit)

    def search_vector(self, query_vector, model: str, *, limit: int = 10,
                      filters: Filters | None = None) -> list[Hit]:
        """The vector leg: documents by the cosine of their best chunk to
        ``query_vector`` (unit length, the model's dimension), among those ``filters``
        keep (checked again on the hits found, so no ranking path can return one the
        filters leave out)."""
        found = self.vectors.search(query_vector, model, rows=self._row_filter(filters),
                                    limit=limit, path=self._file())
        return self._vector_hits(found, filters)

    def start_vector(self, query_vector, model: str, *, limit: int = 10,
                     filters: Filters | None = None) -> Callable[[], list[Hit]]:
        """The vector leg begun on a worker thread, so it ranks while the lexical legs
        run on this one; the returned call waits for it and gives :meth:`search_vector`'s
        hits. ``query_vector``: a vector or a Future of one (its exception is raised by the
        returned call). The worker runs no SQL (this connection stays the caller's): the
        filter's rowids, the stamp and the matrix are read here first; the worker waits
        for the vector and ranks it in numpy or in the embedding server
        (:func:`indexes.sqlite.vectors.rank_vector`). When the matrix is not read yet or
        the server cannot answer, the returned call ranks on this thread."""
        rows = self._row_filter(filters)
        path, stamp = self._file(), self.vectors.stamp()
        matrix = self.vectors.current(model)
        work = vector_workers().submit(
            contextvars.copy_context().run, rank_vector, query_vector, model,
            rows=rows, limit=limit, path=path, stamp=stamp, matrix=matrix,
            sign_bits=self.vectors.sign_bits)

        def hits() -> list[Hit]:
            found, vector = work.result()
            if found is None:
                found = self.vectors.rank_here(vector, model, rows=rows, limit=limit)
            return self._vector_hits(found, filters)

        return hits

    def _file(self) -> str | None:
        return None if str(self.path) == ":memory:" else str(self.path.resolve())

    def _vector_hits(self, found: list[tuple[str, float]],
                     filters: Filters | None) -> list[Hit]:
        if not found:
            return []
        kept = self.hits_for([k for k, _ in found], filters)
        return scored_hits([(k, s) for k, s in found if k in kept],
                           [Hit(*row, 0.0) for row in kept.values()])

    def _row_filter(self, filters: Filters | None) -> RowFilter | None:
        """The documents ``filters`` keep, as a :class:`~indexes.sqlite.vectors.RowFilter`
        of the shorter list: the rowids left out when fewer than :data:`FEW_LEFT_OUT`
        (the default filter: superseded entries), else the rowids kept (a scope, a
        category). A filter on status, scope, category or lifetimes reads the covering
        ``docs_filter`` index (schema migration 9), not the rows; a tags filter reads the
        rows. ``None`` when nothing is left out. Kept in :attr:`memo` until the database
        changes (5 ms for the default filter at 100,000 entries); with ``valid_at``, the
        rows of the filter without it, less those expired then (:meth:`_expired`)."""
        filters = filters or Filters()
        if filters.valid_at is not None:  # the rows of the filter without expiry are kept
            return RowFilter.without(self._row_filter(filters.timeless()),
                                     self._expired(filters))
        where, params = filters.sql()
        return self.memo.get(("rows", where, *params),
                             lambda: self._read_row_filter(where, params))

    def _expired(self, filters: Filters) -> list[int]:
        """Rowids of the documents expired at ``filters.valid_at``, looked for among those
        that can expire (``valid_until`` set, or ``dated`` and a type with a lifetime:
        kept in :attr:`memo`; by default only episodes expire)."""
        condition, types = filters.can_expire_sql()
        can_expire = self.memo.get(("can expire", *types), lambda: [
            r[0] for r in self.conn.execute(f"SELECT d.rowid FROM docs d WHERE {condition}",
                                            types)])
        if not can_expire:
            return []
        clause, params = filters.expiry_sql()
        return self.memo.get(("expired", *types, *params), lambda: [  # BM25 + vector legs
            r[0] for r in self.conn.execute(
                "SELECT d.rowid FROM json_each(?) j CROSS JOIN docs d ON d.rowid = j.value "
                f"WHERE NOT coalesce(({clause}), 0)", [json.dumps(can_expire), *params])])

    def _read_row_filter(self, where: str, params: list) -> RowFilter | None:
        left_out = [r[0] for r in self.conn.execute(
            f"SELECT d.rowid FROM docs d WHERE NOT coalesce(({where}), 0) LIMIT ?",
            [*params, FEW_LEFT_OUT])]
        if len(left_out) < FEW_LEFT_OUT:
            return RowFilter.of(left_out, keep=False) if left_out else None
        return RowFilter.of((r[0] for r in self.conn.execute(
            f"SELECT d.rowid FROM docs d WHERE {where}", params)), keep=True)

    def search_lexical(self, query: str, *, limit: int = 10,
                       filters: Filters | None = None) -> list[Hit]:
        """The lexical leg: BM25, plus the trigram path for space-less scripts (and for
        substrings when BM25 finds nothing), fused by RRF when both return hits."""
        bm25 = with_leg(self.search_bm25(query, limit=limit, filters=filters), "bm25")
        cjk = bool(no_space_runs(normalize(query)))  # as stored: NFKC
        if not cjk and bm25:
            return bm25
        trigram = self.search_trigram(query, limit=limit, filters=filters,
                                      include_latin=not bm25)
        if not trigram:
            return bm25
        if not bm25:
            return with_leg(trigram, "trigram")
        return rrf({"bm25": bm25, "trigram": trigram}, limit=limit)


def _upsert(conn: sqlite3.Connection, table: str, rows: list[dict]) -> None:
    """Write ``rows`` (dicts with the same keys, ``key`` the table's primary key) into
    ``table``: a new key is inserted, a known one has its other columns set (an update,
    so the table's update triggers run). All rows or none: inside a savepoint, which
    commits on its own outside a transaction."""
    columns = list(rows[0])
    sql = (f"INSERT INTO {table} ({', '.join(columns)}) "
           f"VALUES ({', '.join('?' * len(columns))}) ON CONFLICT(key) DO UPDATE SET "
           + ", ".join(f"{c} = excluded.{c}" for c in columns if c != "key"))
    conn.execute("SAVEPOINT upsert")
    try:
        conn.executemany(sql, [[row[c] for c in columns] for row in rows])
    except BaseException:
        if conn.in_transaction:  # a full disk can end the whole transaction
            conn.execute("ROLLBACK TO SAVEPOINT upsert")
            conn.execute("RELEASE SAVEPOINT upsert")
        raise
    conn.execute("RELEASE SAVEPOINT upsert")


def _row(doc: Document) -> dict:
    extra = dict(doc.extra)
    extra["tags"] = list(doc.tags)
    extra["aliases"] = list(doc.aliases)
    return {
        "key": doc.key,
        "doc_id": doc.doc_id,
        "title": normalize(doc.title),
        "aliases": normalize("\n".join(doc.aliases)),
        "tags": normalize(" ".join(doc.tags)),
        "summary": normalize(doc.summary),
        "body": normalize(doc.body),
        "status": doc.status,
        "category": doc.category,
        "doc_type": doc.doc_type,
        "content_hash": doc.content_hash,
        "scope": doc.scope,
        "valid_until": doc.valid_until,
        "dated": doc.dated,
        "extra": json.dumps(extra, ensure_ascii=False, sort_keys=True),
    }


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is SQLite's "database is locked"/"busy" (another process holds it)."""
    return "locked" in str(exc) or "busy" in str(exc)
