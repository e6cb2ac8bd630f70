""":class:`PgIndex`: the search index in a shared PostgreSQL database, one ``space`` per
wiki (repository + branch), with the methods of :class:`indexes.sqlite.engine.SearchIndex`.

Writers serialise per space with a transaction-scoped advisory lock (the counterpart of
SQLite's ``BEGIN IMMEDIATE``), rows are keyed by ``(space, key)`` and written with
``ON CONFLICT``, so concurrent syncers of one wiki never duplicate or lose rows; other
spaces are never blocked. Batches go through ``executemany`` (pipelined by psycopg).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager

import psycopg

from indexes.backend import CheckMark, redacted, resolved, scrubbed
from indexes.documents import Document, Hit, scored_hits, with_leg
from indexes.errors import IndexSchemaError, IndexUnavailableError
from indexes.pg import bm25 as pg_bm25
from indexes.pg import postings as pg_postings
from indexes.pg import ranking
from indexes.pg.connections import KEPT
from indexes.pg.filters import mask_filter, pg_sql
from indexes.pg.prepared import PREPARED, StaleConnection
from indexes.pg.rows import HIT_COLUMNS, PgDocRows
from indexes.pg.schema import (
    BACKFILL,
    LOCK_SCHEMA,
    POSTINGS,
    POSTINGS_COVERED,
    SPACE_TABLES,
    STATS_FILL,
    STATS_TRIGGERS,
    VERSION,
    statements,
)
from indexes.pg.text import TS_CONFIG, fts_input, word_count
from indexes.pg.vectors import DROPPED_KEY, SHARED_SPACE, PgVectorStore
from indexes.retrieval.filters import Filters
from indexes.retrieval.fusion import rrf
from indexes.retrieval.graph import expand
from indexes.retrieval.names import fold_name
from indexes.retrieval.query import normalize
from indexes.retrieval.text import no_space_runs
from indexes.sqlite.engine import DEFAULT_WEIGHTS, vector_workers
from indexes.sqlite.vectors import (
    CHUNK_WORDS,
    OVERLAP_WORDS,
    VERSION_KEY,
    chunk_texts,
    rank_vector,
)

FTS_VALUE = ("setweight(to_tsvector(%(cfg)s::regconfig, %(title)s), 'A') || "
             "setweight(to_tsvector(%(cfg)s::regconfig, %(aliases_fts)s), 'B') || "
             "setweight(to_tsvector(%(cfg)s::regconfig, %(tags_fts)s || ' ' || "
             "%(summary_fts)s), 'C') || setweight(to_tsvector(%(cfg)s::regconfig, "
             "%(body_fts)s), 'D')")
COLUMNS = ("space", "key", "doc_id", "title", "aliases", "tags", "summary", "body", "status",
           "category", "doc_type", "content_hash", "scope", "valid_until", "dated", "extra",
           "tag_list", "doc_len")


MARK_PREFIX = "checked:"
"""``wiki_meta`` keys of :meth:`PgIndex.check_mark`'s marks."""

_STAMP = ("(coalesce((SELECT version FROM wiki_stats WHERE space = %(space)s), 0) || ':' || "
          "coalesce((SELECT value FROM wiki_meta WHERE space = %(space)s AND "
          "key = %(vkey)s), '0') || ':' || coalesce((SELECT value FROM wiki_meta WHERE "
          "space = %(shared)s AND key = %(dropped)s), '0'))")
"""A space's stamp in SQL: its documents' write counter, its vector store's version, and
the database's count of embedding deletions (the embeddings table is shared by every
space: :meth:`indexes.pg.vectors.PgVectorStore.drop_damaged` of another space can take
vectors this one uses)."""
MARK_WAIT_MS = 50
"""How long recording a mark may wait for a row lock before it gives up (ms)."""


def connect(url: str):
    """A new psycopg connection to ``url`` (autocommit; :meth:`PgIndex.transaction` groups
    writes). Raises :class:`IndexUnavailableError` when it cannot connect."""
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=10,
                               fallback_application_name="wiki")
    except psycopg.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise IndexUnavailableError(f"cannot reach the index database: "
                                    f"{scrubbed(message, url)}") from None


class PgIndex:
    """The documents of one ``space`` in the PostgreSQL database at ``url``.

    Raises :class:`IndexUnavailableError` (no connection, no pgvector) and
    :class:`IndexSchemaError` (a newer schema) at open. ``rank``: the full-text ranking
    (:mod:`indexes.pg.ranking`). ``reader``: a process that only reads (the embedding
    server) checks the schema version at its first open instead of preparing the schema,
    so it never waits for a writer's locks (:class:`IndexUnavailableError` when the schema
    is not this release's). ``transient``: a throwaway space (``--as-of``), whose chunk
    matrix no process keeps. ``statement_timeout_s``: each statement of this open is
    cancelled after so many seconds (PostgreSQL's ``statement_timeout``, lock waits
    included: ``psycopg.errors.QueryCanceled``), reset when the connection is handed back."""

    def __init__(self, url: str, space: str, *, weights: tuple[float, ...] = DEFAULT_WEIGHTS,
                 chunk_words: int = CHUNK_WORDS, rank: str = "bm25", conn=None,
                 reader: bool = False, transient: bool = False,
                 statement_timeout_s: int | None = None):
        self.url, self.space = url, space
        self.path = f"{redacted(url)} [{space}]"
        self.weights, self.chunk_words, self.rank = weights, chunk_words, rank
        self.postings_from = pg_postings.POSTINGS_FROM
        """Documents from which :meth:`settle` keeps packed postings (a test sets its
        own)."""
        self.memo = pg_bm25.KeptFrequencies()
        """The lexemes' document frequencies kept per write counter
        (:class:`indexes.pg.bm25.KeptFrequencies`)."""
        self._kept = conn is None
        """The connection came from (and goes back to) the process's kept connections
        (:mod:`indexes.pg.connections`; a plain new one unless ``wiki serve`` keeps them)."""
        self.conn = conn or KEPT.take(url, connect)
        self._depth = 0
        # the schema prepared and numpy arrays in and out of vector columns; both once per
        # process and URL, one check statement on later opens
        prepare = self._check_schema if reader else self._ensure_schema
        try:
            try:
                PREPARED.prepare(self.conn, url, prepare)
            except StaleConnection:  # kept from before the database changed under it
                self.conn.close()
                self.conn = connect(url)
                PREPARED.prepare(self.conn, url, prepare)
        except psycopg.Error as exc:
            self.conn.close()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise IndexUnavailableError(f"{self.path}: cannot prepare the connection: "
                                        f"{scrubbed(first, self.url)}") from None
        except (IndexUnavailableError, IndexSchemaError):  # a schema of another release
            self.conn.close()
            raise
        self.vectors = PgVectorStore(self.conn, space, self.get_meta, self.set_meta,
                                     kept=(url,) if KEPT.size and not transient else None,
                                     shared=not transient)
        self.docs = PgDocRows(self.conn, space)
        self._timeout = statement_timeout_s
        if statement_timeout_s is not None:
            self.conn.execute(f"SET statement_timeout = '{int(statement_timeout_s)}s'")

    def _check_schema(self) -> None:
        found = self.conn.execute("SELECT max(version) FROM wiki_schema").fetchone()[0]
        if found != VERSION:
            raise IndexUnavailableError(f"{self.path}: schema version {found}, not this "
                                        f"reader's {VERSION}")

    def _ensure_schema(self) -> None:
        try:
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_SCHEMA,))
                for statement in statements():
                    self.conn.execute(statement)
                found = self.conn.execute("SELECT max(version) FROM wiki_schema").fetchone()[0]
                if found is not None and found > VERSION:
                    raise IndexSchemaError(f"{self.path}: schema version {found} is newer "
                                           f"than this wiki ({VERSION}); upgrade wiki")
                if found is not None and found < 2:  # 1 -> 2: the postings BM25 reads
                    self.conn.execute(BACKFILL)
                if found is None or found < 3:  # 2 -> 3: the space statistics
                    for statement in STATS_TRIGGERS:  # wiki_docs first, as writers lock
                        self.conn.execute(statement)
                    self.conn.execute(STATS_FILL)
                if found is not None and found < 3:  # 2 -> 3: postings read from the index
                    for statement in POSTINGS_COVERED:
                        self.conn.execute(statement)
                if found is None:
                    self.conn.execute("INSERT INTO wiki_schema VALUES (%s)", (VERSION,))
                elif found < VERSION:
                    self.conn.execute("UPDATE wiki_schema SET version = %s", (VERSION,))
        except psycopg.Error as exc:
            self.conn.close()
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise IndexUnavailableError(f"{self.path}: cannot prepare the index schema: "
                                        f"{scrubbed(first, self.url)}") from None

    def close(self) -> None:
        """Close the connection, or hand it back to be kept (idle and open only; see
        :mod:`indexes.pg.connections`)."""
        if self._timeout is not None:
            with contextlib.suppress(psycopg.Error):  # a broken connection is not kept
                self.conn.execute("RESET statement_timeout")
        if self._kept:
            KEPT.give_back(self.url, self.conn)
        else:
            self.conn.close()

    def __enter__(self) -> PgIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction holding this space's advisory lock (other writers of the
        space wait; readers never do); rolls back on error. Nests."""
        with self.conn.transaction():
            if self._depth == 0:
                self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                                  (self.space,))
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1

    # -- metadata and documents ----------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """The stored value for ``key`` in this space, or ``None``."""
        row = self.conn.execute("SELECT value FROM wiki_meta WHERE space = %s AND key = %s",
                                (self.space, key)).fetchone()
        return row[0] if row else None

    def get_metas(self, keys: Sequence[str]) -> dict[str, str]:
        """``key -> stored value`` of those of ``keys`` this space holds, in one
        statement (one snapshot)."""
        return dict(self.conn.execute(
            "SELECT key, value FROM wiki_meta WHERE space = %s AND key = ANY(%s)",
            (self.space, list(keys))).fetchall())

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` in this space."""
        self.conn.execute("INSERT INTO wiki_meta(space, key, value) VALUES (%s, %s, %s) "
                          "ON CONFLICT (space, key) DO UPDATE SET value = excluded.value",
                          (self.space, key, value))

    def content_hashes(self) -> dict[str, str]:
        """``key -> content_hash`` of every stored document."""
        return dict(self.conn.execute("SELECT key, content_hash FROM wiki_docs WHERE "
                                      "space = %s", (self.space,)).fetchall())

    def count(self, filters: Filters | None = None) -> int:
        """Number of documents (matching ``filters`` when given)."""
        if filters is None or filters == Filters(statuses=None):  # kept in wiki_stats
            return pg_bm25.space_stats(self.conn, self.space).docs
        where, params = pg_sql(filters, default_active=False)
        return self.conn.execute(f"SELECT count(*) FROM wiki_docs d WHERE d.space = %s AND "
                                 f"{where}", [self.space, *params]).fetchone()[0]

    def upsert(self, documents: Iterable[Document]) -> int:
        """Insert or replace documents by ``key`` with their names and vector chunks, in
        batches; returns how many were written."""
        rows = [self._row(doc) for doc in documents]
        if not rows:
            return 0
        names = ", ".join(COLUMNS)
        values = ", ".join(f"%({c})s" for c in COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in (*COLUMNS[2:], "fts"))
        keys = [row["key"] for row in rows]
        with self.transaction(), self.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO wiki_docs({names}, fts) VALUES ({values}, {FTS_VALUE}) "
                f"ON CONFLICT (space, key) DO UPDATE SET {updates}", rows)
            for table in ("wiki_revalidate", "wiki_names", "wiki_terms"):
                cur.execute(f"DELETE FROM {table} WHERE space = %s AND key = ANY(%s)",
                            (self.space, keys))
            cur.execute(POSTINGS, (self.space, keys))
            pg_postings.note_stale(cur, self.space, keys)
            cur.executemany("INSERT INTO wiki_names(space, key, name, kind) VALUES "
                            "(%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                            [(self.space, row["key"], name, kind) for row in rows
                             for name, kind in _names(row)])
            self.vectors.replace_many([(row["key"], row["chunks"], row["sentences"])
                                       for row in rows])
        return len(rows)

    def _row(self, doc: Document) -> dict:
        extra = dict(doc.extra)
        extra["tags"], extra["aliases"] = list(doc.tags), list(doc.aliases)
        row = {"space": self.space, "key": doc.key, "doc_id": doc.doc_id,
               "title": normalize(doc.title), "aliases": normalize("\n".join(doc.aliases)),
               "tags": normalize(" ".join(doc.tags)), "summary": normalize(doc.summary),
               "body": normalize(doc.body), "status": doc.status, "category": doc.category,
               "doc_type": doc.doc_type, "content_hash": doc.content_hash, "scope": doc.scope,
               "valid_until": doc.valid_until, "dated": doc.dated,
               "extra": ranking.dumps(extra), "tag_list": list(doc.tags), "cfg": TS_CONFIG}
        for column in ("title", "aliases", "tags", "summary", "body"):
            row[f"{column}_fts"] = fts_input(row[column])
        row["title"] = row["title"]
        row["doc_len"] = word_count(*(row[f"{c}_fts"] for c in ("title", "aliases", "tags",
                                                                "summary", "body")))
        row["chunks"] = chunk_texts(row["title"], row["summary"], row["body"],
                                    words=self.chunk_words,
                                    overlap=min(OVERLAP_WORDS, self.chunk_words // 4))
        row["sentences"] = list(doc.sentences)
        row["alias_list"] = list(doc.aliases)
        return row

    def delete(self, keys: Iterable[str]) -> int:
        """Delete documents by ``key``; returns how many were asked for."""
        keys = list(keys)
        if keys:
            with self.transaction():
                removed = [r[0] for r in self.conn.execute(
                    "DELETE FROM wiki_docs WHERE space = %s AND key = ANY(%s) RETURNING key",
                    (self.space, keys))]
                for table in ("wiki_names", "wiki_terms", "wiki_revalidate"):
                    self.conn.execute(f"DELETE FROM {table} WHERE space = %s AND "
                                      "key = ANY(%s)", (self.space, keys))
                pg_postings.note_stale(self.conn, self.space, removed)
                self.vectors.delete(keys)
        return len(keys)

    def clear(self) -> None:
        """Delete every document and metadata value of this space (embeddings stay)."""
        with self.transaction():
            for table in SPACE_TABLES:
                self.conn.execute(f"DELETE FROM {table} WHERE space = %s", (self.space,))

    def settle(self) -> bool:
        """After a batch of writes: build the space's packed postings
        (:mod:`indexes.pg.postings`) when the space holds at least :attr:`postings_from`
        documents and they are missing, built with other weights or more than
        :data:`~indexes.pg.postings.REBUILD_STALE` stale; drop them below that size.
        Returns whether they were built (inside PostgreSQL: ~10 s at 100,000 entries)."""
        with self.transaction():
            docs = pg_bm25.space_stats(self.conn, self.space).docs
            return pg_postings.settle(self.conn, self.space,
                                      ranking.class_weights(self.weights), docs,
                                      postings_from=self.postings_from)

    def get(self, key: str) -> dict | None:
        """The stored row of one document as a dict (``extra`` decoded), or ``None``."""
        with self.conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
            record = cur.execute(
                "SELECT key, doc_id, title, aliases, tags, summary, body, status, category, "
                "doc_type, content_hash, scope, valid_until, dated, extra FROM wiki_docs "
                "WHERE space = %s AND key = %s", (self.space, key)).fetchone()
        return dict(record) if record else None

    def extras(self, keys: Iterable[str]) -> dict[str, dict]:
        """``key -> extra`` for the given keys, one query."""
        return {key: row.extra for key, row in self.docs.attributes(keys).items()}

    def keys_for_doc_id(self, doc_id: str) -> list[str]:
        """Keys of the documents whose ``doc_id`` is ``doc_id``."""
        return [r[0] for r in self.conn.execute(
            "SELECT key FROM wiki_docs WHERE space = %s AND doc_id = %s ORDER BY key",
            (self.space, doc_id))]

    # -- marks and relations -------------------------------------------------------------
    def mark_sources(self, uris: Iterable[str], commit: str, when: str) -> list[str]:
        """Mark the documents citing any of ``uris``; returns their keys."""
        uris = sorted(set(uris))
        if not uris:
            return []
        rows = self.conn.execute(
            "SELECT DISTINCT d.key, s->>'uri' FROM wiki_docs d, jsonb_array_elements(CASE "
            "jsonb_typeof(d.extra->'sources') WHEN 'array' THEN d.extra->'sources' ELSE "
            "'[]' END) s WHERE d.space = %s AND s->>'uri' = ANY(%s)",
            (self.space, uris)).fetchall()
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wiki_revalidate(space, key, uri, commit_sha, marked_at) VALUES "
                "(%s, %s, %s, %s, %s) ON CONFLICT (space, key, uri) DO UPDATE SET "
                "commit_sha = excluded.commit_sha, marked_at = excluded.marked_at",
                [(self.space, key, uri, commit, when) for key, uri in rows])
        return sorted({key for key, _ in rows})

    def marks(self, keys: Iterable[str] | None = None) -> dict[str, list[dict]]:
        """``key -> [{uri, commit, marked_at}]`` of marked documents (all, or ``keys``)."""
        wanted = None if keys is None else set(keys)
        out: dict[str, list[dict]] = {}
        for key, uri, commit, when in self.conn.execute(
                "SELECT key, uri, commit_sha, marked_at FROM wiki_revalidate WHERE space = %s "
                "ORDER BY key, uri", (self.space,)):
            if wanted is None or key in wanted:
                out.setdefault(key, []).append({"uri": uri, "commit": commit,
                                                "marked_at": when})
        return out

    def expand(self, seeds: dict[str, float], kinds: Iterable[str], *, depth: int = 2,
               decay: float = 0.5,
               allowed: set[str] | None = None) -> dict[str, tuple[float, int, str]]:
        """Documents reached from ``seeds`` along ``kinds``
        (:func:`indexes.retrieval.graph.expand`)."""
        return expand((self.conn, self.space), seeds, kinds, depth=depth, decay=decay,
                      allowed=allowed, edges_of=ranking.edges)

    # -- search ----------------------------------------------------------------------------
    def search_bm25(self, query: str, *, limit: int = 10,
                    filters: Filters | None = None) -> list[Hit]:
        """Full-text ranking over the weighted tsvector (:mod:`indexes.pg.ranking`);
        raises ``EmptyQueryError`` for an empty query."""
        where, params = pg_sql(filters)
        return ranking.search_fulltext(self.conn, self.space, query, where, params,
                                       limit=limit, weights=self.weights, rank=self.rank,
                                       frequencies=self._frequencies,
                                       narrow=(filters or Filters()).narrow,
                                       idle=not self._depth, mask=mask_filter(filters))

    def _frequencies(self, version: int) -> Callable[[list[str]], dict[str, int]]:
        """The lexemes' document frequencies at the space's write counter ``version``, from
        :attr:`memo`."""
        return lambda terms: self.memo.lookup(self.conn, self.space, version, terms,
                                              in_write=bool(self._depth))

    def search_trigram(self, query: str, *, limit: int = 10, filters: Filters | None = None,
                       include_latin: bool = False) -> list[Hit]:
        """Substring search (:func:`indexes.pg.ranking.search_substrings`)."""
        where, params = pg_sql(filters)
        return ranking.search_substrings(self.conn, self.space, query, where, params,
                                         limit=limit, include_latin=include_latin)

    def _keys(self, condition: str, params: list) -> set[str]:
        return {r[0] for r in self.conn.execute(
            f"SELECT d.key FROM wiki_docs d WHERE d.space = %s AND {condition}",
            [self.space, *params])}

    def allowed_keys(self, filters: Filters | None) -> set[str] | None:
        """Keys passing ``filters`` (``None``: no restriction at all)."""
        if (filters or Filters()) == Filters(statuses=None):
            return None
        return self._keys(*pg_sql(filters))

    def excluded_keys(self, filters: Filters | None) -> set[str]:
        """Keys ``filters`` leave out."""
        where, params = pg_sql(filters)
        return self._keys(f"NOT coalesce(({where}), FALSE)", params)

    def search_names(self, query: str, *, limit: int = 10,
                     filters: Filters | None = None) -> list[Hit]:
        """The alias/title leg."""
        where, params = pg_sql(filters)
        return ranking.search_names(self.conn, self.space, query, where, params, limit=limit)

    def search_vector(self, query_vector, model: str, *, limit: int = 10,
                      filters: Filters | None = None, ask_server: bool = True) -> list[Hit]:
        """Documents by the cosine of their best chunk to ``query_vector``
        (:meth:`indexes.pg.vectors.PgVectorStore.search`: HNSW or exact in the database,
        or over the kept matrix in a long-running process). A one-shot process whose query
        the embedding server encoded lets that server rank over the matrix it keeps
        (:meth:`~indexes.pg.vectors.PgVectorStore.server_ranking`) unless ``ask_server`` is
        False, as ``wiki serve`` ranks; the database when the server cannot."""
        if ask_server and getattr(query_vector, "searcher", None) is not None:
            ask = self.vectors.server_ranking(model, limit=limit, filters=filters)
            found = ask(query_vector) if ask is not None else None
            if found is not None:
                return self._served_hits(found, filters)
        where, params = pg_sql(filters)
        found = self.vectors.search(query_vector, model, where=where, params=params,
                                    limit=limit, mask=mask_filter(filters))
        return scored_hits(found, self.docs.hits(k for k, _ in found))

    def start_vector(self, query_vector, model: str, *, limit: int = 10,
                     filters: Filters | None = None) -> Callable[[], list[Hit]]:
        """The vector leg begun: in a long-running process with this space's matrix kept
        (:meth:`indexes.pg.vectors.PgVectorStore.current`), the filter's documents are read
        here and a worker thread ranks (:func:`indexes.sqlite.vectors.rank_vector`, no
        SQL: the connection stays this thread's) while the lexical legs run; otherwise the
        leg is deferred. The returned call waits for ``query_vector`` (a vector or a
        Future of one, whose exception it raises) and gives :meth:`search_vector`'s hits."""
        matrix = self.vectors.current(model)
        if matrix is None:
            return self._start_served(query_vector, model, limit=limit, filters=filters)
        where, params = pg_sql(filters)
        rows = self.vectors.row_filter(matrix, where, params, mask_filter(filters))
        work = vector_workers().submit(
            contextvars.copy_context().run, rank_vector, query_vector, model, rows=rows,
            limit=limit, path=None, stamp=None, matrix=matrix)

        def hits() -> list[Hit]:
            found, vector = work.result()
            if found is None:  # a vector of another dimension: the database path says so
                return self.search_vector(vector, model, limit=limit, filters=filters)
            return scored_hits(found, self.docs.hits(k for k, _ in found))

        return hits

    def _start_served(self, query_vector, model: str, *, limit: int,
                      filters: Filters | None) -> Callable[[], list[Hit]]:
        """:meth:`start_vector` in a one-shot process: when the query may come from the
        embedding server (a pending encoding or a served vector), a worker thread waits
        for it and asks that server to rank (no SQL there) while the lexical legs run;
        the database ranks when it cannot (:meth:`search_vector`)."""
        served = isinstance(query_vector, Future) or \
            getattr(query_vector, "searcher", None) is not None
        ask = self.vectors.server_ranking(model, limit=limit, filters=filters) \
            if served else None
        if ask is None:
            return lambda: self.search_vector(resolved(query_vector), model, limit=limit,
                                              filters=filters, ask_server=False)

        def ranked() -> tuple[list[tuple[str, float]] | None, object]:
            vector = resolved(query_vector)
            return ask(vector), vector

        work = vector_workers().submit(contextvars.copy_context().run, ranked)

        def hits() -> list[Hit]:
            found, vector = work.result()
            if found is None:
                return self.search_vector(vector, model, limit=limit, filters=filters,
                                          ask_server=False)
            return self._served_hits(found, filters)

        return hits

    def _served_hits(self, found: list[tuple[str, float]],
                     filters: Filters | None) -> list[Hit]:
        """The hits of the embedding server's ranking, each checked against ``filters``
        again as its row is read (one statement either way): whatever answers on the
        socket never shows a document the filters leave out."""
        where, params = pg_sql(filters)
        return scored_hits(found, self.docs.hits((k for k, _ in found), where, params))

    def search_lexical(self, query: str, *, limit: int = 10,
                       filters: Filters | None = None) -> list[Hit]:
        """The lexical leg: full text, plus the substring path for space-less scripts (and
        when full text finds nothing), fused by RRF when both return hits."""
        lexical = with_leg(self.search_bm25(query, limit=limit, filters=filters), "bm25")
        if not no_space_runs(normalize(query)) and lexical:
            return lexical
        trigram = self.search_trigram(query, limit=limit, filters=filters,
                                      include_latin=not lexical)
        if not trigram:
            return lexical
        if not lexical:
            return with_leg(trigram, "trigram")
        return rrf({"bm25": lexical, "trigram": trigram}, limit=limit)

    def word_matches(self, word: str, key: str | None = None) -> tuple[int, bool]:
        """``(document frequency, found in document key)`` of one query word
        (:func:`indexes.pg.ranking.word_matches`)."""
        return ranking.word_matches(
            self.conn, self.space, word, key,
            self._frequencies(pg_bm25.space_stats(self.conn, self.space).version))

    def words_matched(self, words: list[str], key: str | None = None
                      ) -> list[tuple[int, bool]]:
        """:meth:`word_matches` of each of ``words``, in order, in a few statements
        (:func:`indexes.pg.ranking.words_matched`)."""
        return ranking.words_matched(
            self.conn, self.space, words, key,
            self._frequencies(pg_bm25.space_stats(self.conn, self.space).version))

    def hits_for(self, keys: list[str], filters: Filters | None) -> dict[str, tuple]:
        """``key -> (key, doc_id, title, summary, category, status)`` of ``keys`` passing
        ``filters`` (:func:`indexes.retrieval.ranked.hits_for`)."""
        where, params = pg_sql(filters)
        return {r[0]: r for r in self.conn.execute(
            f"SELECT {HIT_COLUMNS} FROM wiki_docs d WHERE d.space = %s AND d.key = ANY(%s) "
            f"AND {where}", [self.space, keys, *params])}

    def check_mark(self, fact: str) -> CheckMark:
        """Whether ``fact`` was recorded for this space as it is now: the mark
        (``checked:<fact>`` in ``wiki_meta``, shared by every process and replica) holds
        the space's stamp when it was recorded, the write counter of its documents
        (``wiki_stats.version``, moved by triggers whoever writes) and of its chunks and
        vectors (the vector store's version). ``record()`` stores the stamp read here, and
        only while the space still has it, so a mark never speaks for a later state. One
        statement each."""
        key = MARK_PREFIX + fact
        stamp, recorded = self.conn.execute(
            f"SELECT {_STAMP}, (SELECT value FROM wiki_meta WHERE space = %(space)s AND "
            "key = %(key)s)", {"space": self.space, "key": key, "vkey": VERSION_KEY,
                               "shared": SHARED_SPACE, "dropped": DROPPED_KEY}
        ).fetchone()

        def record() -> None:
            # a mark is a cache written by reads: it never waits for a writer that holds
            # its row (a rebuild's transaction) and never fails the read; inside a
            # transaction it is left for the next read
            if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                return
            try:
                with self.conn.transaction():
                    self.conn.execute(f"SET LOCAL lock_timeout = '{MARK_WAIT_MS}ms'")
                    self.conn.execute(
                        "INSERT INTO wiki_meta(space, key, value) SELECT %(space)s, %(key)s, "
                        f"%(stamp)s WHERE {_STAMP} = %(stamp)s ON CONFLICT (space, key) DO "
                        "UPDATE SET value = excluded.value",
                        {"space": self.space, "key": key, "vkey": VERSION_KEY,
                         "shared": SHARED_SPACE, "dropped": DROPPED_KEY, "stamp": stamp})
            except psycopg.Error:
                return

        return CheckMark(recorded == stamp, record)


def _names(row: dict) -> list[tuple[str, str]]:
    found = {(fold_name(row["title"]), "title")}
    found |= {(fold_name(a), "alias") for a in row["alias_list"]}
    return sorted((name, kind) for name, kind in found if name)
