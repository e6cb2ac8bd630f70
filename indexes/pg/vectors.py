"""The vector leg on pgvector: chunk and sentence texts per space, embeddings shared by
every space (keyed by text hash and model, like :mod:`indexes.sqlite.vectors`), and a partial
HNSW index (``vector_cosine_ops``) per model and dimension, made when a model is first
prepared. A document scores the cosine of its best chunk; the HNSW scan runs with
``hnsw.iterative_scan`` so the space and filter conditions never starve the result. A
long-running process (``wiki serve``) ranks over a chunk matrix it keeps instead
(:meth:`PgVectorStore.search`)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import psycopg
from psycopg import sql

from indexes.pg.bm25 import space_stats
from indexes.pg.filters import MaskFilter, can_expire_keys, expired_keys
from indexes.retrieval.filters import Filters
from indexes.sqlite.engine import FEW_LEFT_OUT
from indexes.sqlite.vectors import (
    MAX_SENTENCES,
    MODEL_KEY,
    NONCE_KEY,
    SHARED_MATRICES,
    VERSION_KEY,
    Matrix,
    RowFilter,
    nearest,
    text_hash,
)

SHARED_SPACE = ""
"""The ``wiki_meta`` space of values about the whole database (no index space is named
``""``)."""
DROPPED_KEY = "embeddings_dropped"
"""How many times vectors were deleted from the shared embeddings table (part of every
space's check-mark stamp)."""
EF_SEARCH = 200
"""HNSW candidate list per scan (pgvector's default is 40)."""
CHUNKS_PER_DOC = 8
"""Nearest chunks fetched per wanted document before grouping by document."""
EXACT_DOCS = 5_000
"""At most this many reachable documents: exact distances, no HNSW scan."""
EXACT_SHARE = 0.25
"""Reachable documents under this share of all stored vectors: exact distances too."""


CLIENT_SIDE = frozenset({"connect_timeout", "application_name", "fallback_application_name"})
"""Connection parameters that say how a client connects, not where: left out of
:func:`connection_address`, so every connection to one database has one address."""


def connection_address(conn) -> str:
    """Where ``conn`` is connected, as a connection string another process of this user
    can use to reach the same database: libpq's resolved parameters (host, port, database,
    user, TLS settings; values from the environment and the service file included) and the
    password the connection used (from the URL, ``PGPASSWORD`` or the password file), so
    the other process's own environment plays no part. It holds the password: send it only
    where this user alone can read it (the embedding server's socket)."""
    from psycopg.conninfo import make_conninfo

    params = {name: value for name, value in conn.info.get_parameters().items()
              if name not in CLIENT_SIDE}
    if conn.info.password:
        params["password"] = conn.info.password
    return make_conninfo("", **params)


def as_array(value) -> np.ndarray:
    """A ``vector`` column's value as a float32 array of its dimension. pgvector's psycopg
    loader gives its own ``Vector`` object (0.5+), which numpy cannot read directly."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.array(to_numpy() if to_numpy is not None else value, dtype=np.float32)


class PgVectorStore:
    """Chunks, sentences and embeddings of one ``space`` over a psycopg connection (made by
    :class:`indexes.pg.engine.PgIndex` as ``index.vectors``; same methods as
    :class:`indexes.sqlite.vectors.VectorStore`)."""

    def __init__(self, conn, space: str, get_meta, set_meta, *, kept: tuple | None = None,
                 shared: bool = True):
        """``kept``: where this process keeps chunk matrices between opens (the database
        URL, under a long-running process: :func:`indexes.backend.keep_connections`);
        then :meth:`search` ranks in this process over the kept matrix (see there).
        ``shared``: False for a throwaway space, which the embedding server is never asked
        to keep (:meth:`server_ranking`)."""
        self.conn, self.space = conn, space
        self.get_meta, self.set_meta = get_meta, set_meta
        self.kept, self.shared = kept, shared
        self._matrix: dict[str, Matrix] = {}
        self._counted: dict[tuple, tuple[int, int]] = {}

    def _bump(self) -> None:
        self.set_meta(VERSION_KEY, str(int(self.get_meta(VERSION_KEY) or 0) + 1))
        self.set_meta(NONCE_KEY, secrets.token_hex(8))

    def stamp(self) -> str | None:
        """``nonce:version`` of this space's chunks and vectors, in one statement: changes
        with every write through this store, and the nonce tells a space dropped and made
        again under the same name from the old one. ``None`` when no nonce was written
        (vectors last written by a release before nonces)."""
        values = dict(self.conn.execute(
            "SELECT key, value FROM wiki_meta WHERE space = %s AND key IN (%s, %s)",
            (self.space, NONCE_KEY, VERSION_KEY)).fetchall())
        if not values.get(NONCE_KEY):
            return None
        return f"{values[NONCE_KEY]}:{values.get(VERSION_KEY) or 0}"

    def replace_many(self, items: Sequence[tuple[str, Sequence[str], Sequence[str]]]) -> None:
        """Store ``(key, chunk texts, sentence texts)`` of many documents in one batch."""
        keys = [key for key, _, _ in items]
        if not keys:
            return
        self.conn.execute("DELETE FROM wiki_chunks WHERE space = %s AND key = ANY(%s)",
                          (self.space, keys))
        self.conn.execute("DELETE FROM wiki_sentences WHERE space = %s AND key = ANY(%s)",
                          (self.space, keys))
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wiki_chunks(space, key, chunk, text_hash, text) "
                "VALUES (%s, %s, %s, %s, %s)",
                [(self.space, key, i, text_hash(t), t) for key, chunks, _ in items
                 for i, t in enumerate(chunks)])
            cur.executemany(
                "INSERT INTO wiki_sentences(space, key, n, text_hash, text) "
                "VALUES (%s, %s, %s, %s, %s)",
                [(self.space, key, i, text_hash(t), t) for key, _, texts in items
                 for i, t in enumerate(texts[:MAX_SENTENCES])])
        self._bump()

    def replace_chunks(self, key: str, chunks: Sequence[str]) -> None:
        """Store the chunk texts of document ``key`` (embeddings are added later)."""
        self.conn.execute("DELETE FROM wiki_chunks WHERE space = %s AND key = %s",
                          (self.space, key))
        with self.conn.cursor() as cur:
            cur.executemany("INSERT INTO wiki_chunks(space, key, chunk, text_hash, text) "
                            "VALUES (%s, %s, %s, %s, %s)",
                            [(self.space, key, i, text_hash(t), t) for i, t in enumerate(chunks)])
        self._bump()

    def chunk_keys(self) -> list[tuple[str, str]]:
        """``(document key, text hash)`` of every stored chunk, by key and position."""
        return [tuple(row) for row in self.conn.execute(
            "SELECT key, text_hash FROM wiki_chunks WHERE space = %s ORDER BY key, chunk",
            (self.space,)).fetchall()]

    def sentence_vectors(self, keys: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """``text_hash -> vector`` of the stored sentences of documents ``keys``."""
        keys = list(keys)
        if not keys:
            return {}
        rows = self.conn.execute(
            "SELECT DISTINCT s.text_hash, e.vector FROM wiki_sentences s JOIN "
            "wiki_embeddings e ON e.text_hash = s.text_hash AND e.model = %s "
            "WHERE s.space = %s AND s.key = ANY(%s)", (model, self.space, keys), binary=True)
        return {h: as_array(v) for h, v in rows}

    def delete(self, keys: Iterable[str]) -> None:
        """Forget the chunks and sentences of these documents (embeddings stay)."""
        keys = list(keys)
        if keys:
            for table in ("wiki_chunks", "wiki_sentences"):
                self.conn.execute(sql.SQL("DELETE FROM {} WHERE space = %s AND key = ANY(%s)")
                                  .format(sql.Identifier(table)), (self.space, keys))
            self._bump()

    def pending(self, model: str) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of this space's chunks with no vector for ``model``,
        shortest first (answer sentences are embedded when an answer reads them)."""
        return [tuple(row) for row in self.conn.execute(
            "SELECT c.text_hash, min(c.text) FROM wiki_chunks c WHERE c.space = %(space)s "
            "AND NOT EXISTS (SELECT 1 FROM wiki_embeddings e WHERE e.text_hash = c.text_hash "
            "AND e.model = %(model)s) GROUP BY c.text_hash ORDER BY length(min(c.text)), "
            "c.text_hash", {"space": self.space, "model": model}).fetchall()]

    def pending_count(self, model: str) -> int:
        """How many distinct chunk texts of this space have no vector for ``model``."""
        return int(self.conn.execute(
            "SELECT count(DISTINCT c.text_hash) FROM wiki_chunks c WHERE c.space = %s AND "
            "NOT EXISTS (SELECT 1 FROM wiki_embeddings e WHERE e.text_hash = c.text_hash AND "
            "e.model = %s)", (self.space, model)).fetchone()[0])

    def add_sentence_vectors(self, model: str, hashes: Sequence[str],
                             vectors: np.ndarray) -> None:
        """Keep answer-sentence vectors embedded at ask time (``(len(hashes), dim)``
        float32, keyed by text hash); one already stored is left as it is. The version
        changes only when one of the texts is also a chunk of this space."""
        vectors = np.asarray(vectors, dtype=np.float32)
        hashes = list(hashes)
        if not hashes:
            return
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wiki_embeddings(text_hash, model, dim, vector) VALUES "
                "(%s, %s, %s, %s) ON CONFLICT (text_hash, model) DO NOTHING",
                [(h, model, int(vectors.shape[1]), v)
                 for h, v in zip(hashes, vectors, strict=True)])
        if self.conn.execute("SELECT 1 FROM wiki_chunks WHERE space = %s AND "
                             "text_hash = ANY(%s) LIMIT 1", (self.space, hashes)).fetchone():
            self._bump()

    def _count(self, table: str, model: str) -> tuple[int, int]:
        row = self.conn.execute(sql.SQL(
            "SELECT count(*), count(e.text_hash) FROM {} c LEFT JOIN wiki_embeddings e ON "
            "e.text_hash = c.text_hash AND e.model = %s WHERE c.space = %s").format(
                sql.Identifier(table)), (model, self.space)).fetchone()
        return int(row[0]), int(row[1])

    def counts(self, model: str) -> tuple[int, int]:
        """``(chunks, chunks with a vector for model)``."""
        return self._count("wiki_chunks", model)

    def sentence_counts(self, model: str) -> tuple[int, int]:
        """``(answer sentences, answer sentences with a vector for model)``."""
        return self._count("wiki_sentences", model)

    def prepare_model(self, model: str, dim: int) -> bool:
        """Record ``model:dim`` for this space and make sure its HNSW index exists; returns
        True when the recorded model changed. Other models' vectors stay (other spaces
        may use them); searches only ever read ``model``'s."""
        label = f"{model}:{dim}"
        if self.get_meta(MODEL_KEY) == label:
            return False
        name = "wiki_emb_hnsw_" + hashlib.sha256(label.encode()).hexdigest()[:12]
        self.conn.execute(sql.SQL(
            "CREATE INDEX IF NOT EXISTS {} ON wiki_embeddings USING hnsw "
            "((vector::vector({})) vector_cosine_ops) WHERE model = {} AND dim = {}").format(
                sql.Identifier(name), sql.Literal(int(dim)), sql.Literal(model),
                sql.Literal(int(dim))))
        self.set_meta(MODEL_KEY, label)
        self._bump()
        return True

    def drop_damaged(self, model: str, dim: int) -> int:
        """Delete the vectors of ``model`` whose dimension is not ``dim``; returns how many."""
        deleted = self.conn.execute(
            "DELETE FROM wiki_embeddings WHERE model = %s AND (dim <> %s OR "
            "vector_dims(vector) <> %s)", (model, dim, dim)).rowcount
        if deleted:
            self._bump()
            self.conn.execute(  # every space's marks: the table is shared
                "INSERT INTO wiki_meta(space, key, value) VALUES (%s, %s, '1') ON CONFLICT "
                "(space, key) DO UPDATE SET value = (wiki_meta.value::bigint + 1)::text",
                (SHARED_SPACE, DROPPED_KEY))
        return deleted

    def save(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Save one vector per text hash (``vectors``: ``(len(hashes), dim)`` float32)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        with self.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO wiki_embeddings(text_hash, model, dim, vector) VALUES "
                "(%s, %s, %s, %s) ON CONFLICT (text_hash, model) DO UPDATE SET "
                "dim = excluded.dim, vector = excluded.vector",
                [(h, model, int(vectors.shape[1]), v)
                 for h, v in zip(hashes, vectors, strict=True)])
        self._bump()

    def current(self, model: str, *, stamp: str | None = None) -> Matrix | None:
        """With :attr:`kept`: the kept matrix of ``model`` at this space's :meth:`stamp`
        (one statement, never the vectors; none when the caller read the ``stamp``
        itself), else ``None`` (also when none is kept yet or inside a transaction)."""
        if self.kept is None:
            return None
        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return None
        stamp = stamp or self.stamp()
        if stamp is None:
            return None
        return SHARED_MATRICES.get((*self.kept, self.space, model), f"{stamp}:{model}")

    def server_ranking(self, model: str, *, limit: int, filters: Filters | None
                       ) -> Callable[[object], list[tuple[str, float]] | None] | None:
        """For a one-shot process (no :attr:`kept`), outside a transaction: a call that asks
        the embedding server that encoded a query vector to rank this space for it over
        the matrix the server keeps (``searcher.nearest_space``,
        :mod:`indexes.embedding.embed_nearest_pg`), with this space's :meth:`stamp` and
        connection read now, in the caller's thread (the call makes no SQL, so a worker
        thread may run it). The call returns ``(key, cosine)`` pairs, or ``None`` when the
        vector came from no server or the server could not answer (then rank here:
        :meth:`search`). ``None`` instead of a call when the space has no stamp or is a
        throwaway one (not :attr:`shared`)."""
        if self.kept is not None or not self.shared or \
                self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return None
        stamp = self.stamp()
        if stamp is None:
            return None
        address, space = connection_address(self.conn), self.space

        def ask(vector) -> list[tuple[str, float]] | None:
            searcher = getattr(vector, "searcher", None)
            if searcher is None or not hasattr(searcher, "nearest_space"):
                return None
            return searcher.nearest_space(vector, address, space, stamp, model, limit=limit,
                                          filters=filters)

        return ask

    def matrix(self, model: str, dim: int) -> Matrix:
        """Every chunk vector of ``model`` in this space, grouped by document (cached until
        the store changes; with :attr:`kept`, shared by every open of this space in the
        process while its :meth:`stamp` is unchanged, never read inside a transaction, nor
        while a chunk waits for its vector: the embeddings table is shared, and another
        space saving that vector does not move this space's stamp); raises ``ValueError``
        for a vector of another dimension."""
        stamp = self.stamp() if self.kept is not None else None
        version = f"{stamp or self.get_meta(VERSION_KEY) or 0}:{model}"
        cached = self._matrix.get(model)
        if cached is not None and cached.version == version:
            return cached
        idle = self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        shared = (*self.kept, self.space, model) if stamp and idle else None
        kept = SHARED_MATRICES.get(shared, version) if shared is not None else None
        if kept is not None:
            self._matrix = {model: kept}
            return kept
        rows = self.conn.execute(
            "SELECT c.key, e.dim, e.vector FROM wiki_chunks c LEFT JOIN wiki_embeddings e "
            "ON e.text_hash = c.text_hash AND e.model = %s WHERE c.space = %s "
            "ORDER BY c.key, c.chunk", (model, self.space), binary=True).fetchall()
        # a chunk without a vector yet: the embeddings table is shared by every space, so
        # another space may save it without this space's stamp moving; a matrix read
        # without it is used by this store only, never kept for others
        complete = all(row_dim is not None for _, row_dim, _ in rows)
        rows = [row for row in rows if row[1] is not None]
        keys: list[str] = []
        starts: list[int] = []
        vectors = []
        for number, (key, row_dim, vector) in enumerate(rows):
            if row_dim != dim:
                raise ValueError(f"stored vector of {key} has {row_dim} dimensions, the "
                                 f"model {model} gives {dim}; rebuild the index")
            if not keys or keys[-1] != key:
                keys.append(key)
                starts.append(number)
            vectors.append(as_array(vector))
        array = np.vstack(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
        matrix = Matrix(keys, np.array(starts + [len(vectors)], dtype=np.int64), array, version,
                        rowids=np.arange(len(keys), dtype=np.int64))
        self._matrix = {model: matrix}
        if shared is not None and complete:
            SHARED_MATRICES.put(shared, matrix)
        return matrix

    def row_filter(self, matrix: Matrix, where: str, params: list,
                   mask: MaskFilter | None = None) -> RowFilter | None:
        """The documents of ``matrix`` passing ``where`` (over ``wiki_docs d``) as a
        :class:`~indexes.sqlite.vectors.RowFilter` of matrix positions, the shorter list as
        SQLite's engine picks it (``None``: nothing left out). ``mask``: the same filter
        split (:class:`~indexes.pg.filters.MaskFilter`): its part without expiry is kept
        with the matrix per condition until the space's documents change
        (``wiki_stats.version``; read anew inside a transaction), and the documents
        expired now are taken out each search (a search's ``valid_at`` is the current
        second: a cache keyed by it never served twice)."""
        mask = mask or MaskFilter(where, params)
        idle = self.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        version = space_stats(self.conn, self.space).version
        kept = matrix.derived.setdefault("pg_filters", {})
        positions = matrix.derived.get("pg_positions")
        if positions is None:
            positions = matrix.derived["pg_positions"] = {
                key: i for i, key in enumerate(matrix.keys)}
        key = (mask.where, repr(mask.params))
        if idle and kept.get(key, (None,))[0] == version:
            found = kept[key][1]
        else:
            found = self._timeless_rows(positions, mask)
            if idle:
                if len(kept) > 256:
                    kept.clear()
                kept[key] = (version, found)
        if mask.expiry is None:
            return found
        expiring = ("can expire", mask.expiring_types)
        if idle and kept.get(expiring, (None,))[0] == version:
            can = kept[expiring][1]
        else:
            can = can_expire_keys(self.conn, self.space, mask.expiring_types)
            if idle:
                kept[expiring] = (version, can)
        expired = expired_keys(self.conn, self.space, mask.expiry, can)
        return RowFilter.without(found, (positions[k] for k in expired if k in positions))

    def _timeless_rows(self, positions: dict[str, int], mask: MaskFilter) -> RowFilter | None:
        left_out = [r[0] for r in self.conn.execute(
            "SELECT d.key FROM wiki_docs d WHERE d.space = %s AND NOT coalesce((" +
            mask.where + "), false) LIMIT %s", [self.space, *mask.params, FEW_LEFT_OUT])]
        if len(left_out) < FEW_LEFT_OUT:
            return RowFilter.of((positions[k] for k in left_out if k in positions),
                                keep=False) if left_out else None
        return RowFilter.of((positions[r[0]] for r in self.conn.execute(
            "SELECT d.key FROM wiki_docs d WHERE d.space = %s AND " + mask.where,
            [self.space, *mask.params]) if r[0] in positions), keep=True)

    def _reachable(self, where: str, params: list) -> int:
        """How many of the space's documents pass ``where``: counted once per write
        counter of the space (``wiki_stats.version``), not for every query."""
        def count() -> int:
            return self.conn.execute(
                "SELECT count(*) FROM wiki_docs d WHERE d.space = %s AND " + where,
                [self.space, *params]).fetchone()[0]

        if self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            return count()  # inside a write: what it reads may be rolled back
        version = space_stats(self.conn, self.space).version
        key = (where, repr(params))
        if self._counted.get(key, (None, 0))[0] != version:
            if len(self._counted) > 256:
                self._counted = {}
            self._counted[key] = (version, count())
        return self._counted[key][1]

    def search(self, query_vector, model: str, *, where: str, params: list,
               limit: int, mask: MaskFilter | None = None) -> list[tuple[str, float]]:
        """``(key, cosine of the best chunk)`` of the ``limit`` nearest documents of this
        space passing the condition ``where`` over ``wiki_docs d``, best first.

        The HNSW index covers every space's embeddings, so a search that may reach only
        a small part of them (one space of many, or a narrow filter) would make the
        iterative scan walk most of the graph: when the documents it may reach are at most
        :data:`EXACT_DOCS`, or under :data:`EXACT_SHARE` of the stored vectors, the
        distances are computed exactly over those documents' chunks instead (pgvector's
        advice for selective filters).

        In a long-running process (:attr:`kept`: ``wiki serve``) the space's chunk matrix
        is read once per stamp and kept, and the leg ranks here as SQLite's does
        (:func:`indexes.sqlite.vectors.nearest`: exact, sign bits from 50,000 chunks) with
        the filter's documents kept per condition: no distance is computed in the
        database, whose CPU the replicas share, and a scope costs no more than no filter
        (``mask``: the filter split so, :meth:`row_filter`)."""
        query_vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        dim = int(query_vector.shape[0])
        if self.kept is not None:
            matrix = self.matrix(model, dim)
            return nearest(matrix, query_vector, limit=limit,
                           rows=self.row_filter(matrix, where, params, mask))
        wanted = max(limit * CHUNKS_PER_DOC, 100)
        reachable = self._reachable(where, params)
        stored = self.conn.execute(
            "SELECT greatest(reltuples, 0) FROM pg_class WHERE relname = 'wiki_embeddings'"
        ).fetchone()
        exact = reachable <= EXACT_DOCS or reachable < EXACT_SHARE * float(stored[0] or 0)
        # "+ 0" keeps the planner off the HNSW index: an exact scan of the reachable rows
        order = "(e.vector::vector({dim}) <=> %s::vector({dim})) + 0" if exact else \
            "e.vector::vector({dim}) <=> %s::vector({dim})"
        with self.conn.transaction():
            if not exact:
                self.conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, wanted)}")
                self.conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = self.conn.execute(sql.SQL(
                "SELECT key, min(dist) AS best FROM (SELECT c.key, "
                "e.vector::vector({dim}) <=> %s::vector({dim}) AS dist "
                "FROM wiki_embeddings e JOIN wiki_chunks c ON c.text_hash = e.text_hash "
                "AND c.space = %s JOIN wiki_docs d ON d.space = c.space AND d.key = c.key "
                "WHERE e.model = %s AND e.dim = {dim} AND " + where +
                " ORDER BY " + order + " LIMIT %s) near "
                "GROUP BY key ORDER BY best, key LIMIT %s").format(dim=sql.Literal(dim)),
                [query_vector, self.space, model, *params, query_vector, wanted, limit]).fetchall()
        return [(key, 1.0 - float(dist)) for key, dist in rows]
