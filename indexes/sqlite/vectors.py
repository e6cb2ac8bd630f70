"""The vector sidecar: chunk embeddings in SQLite, cosine over an in-memory numpy matrix.

Each document's ``title. summary`` + body is cut into chunks of :data:`CHUNK_WORDS` words
(:data:`OVERLAP_WORDS` shared between neighbours, the title line repeated in each so every
chunk knows its subject). A chunk is embedded once per model: vectors are keyed by
``(sha256 of the chunk text, model)``, so an unchanged entry is never re-embedded, and a
changed one only for the chunks whose text changed. The model's name and dimension are
recorded; vectors of another model or dimension are dropped and rebuilt, never mixed
(docs/robustness.md, I3). A document scores the cosine of its best chunk.

numpy is imported by the functions that compute, not by this module: a ``wiki search``
whose vector leg the embedding server answers (:func:`nearest` runs there, over the
server's cached :class:`Matrix`) never loads it (~50-80 ms of its start).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from indexes.backend import resolved

if TYPE_CHECKING:
    import numpy as np

    from indexes.retrieval.sign_bits import SignBits

CHUNK_WORDS = 180
"""all-MiniLM-L6-v2 reads at most 256 word pieces; 180 words fit in that for English."""
OVERLAP_WORDS = 30
MAX_CHUNKS = 24
"""Per document; the rest of a very long entry is left to the lexical legs."""
BATCH = 64
BULK = 256
"""More pending texts than this is a build, not a query's top-up (see :func:`embed_pending`)."""
SENTENCES_TABLE = """
    CREATE TABLE sentences (
        key TEXT NOT NULL, n INTEGER NOT NULL, text_hash TEXT NOT NULL, text TEXT NOT NULL,
        PRIMARY KEY (key, n)
    );
    CREATE INDEX sentences_hash ON sentences(text_hash);
    UPDATE docs SET content_hash = '';
    DELETE FROM meta;
"""
"""Schema migration 7 of :mod:`indexes.sqlite.engine`: each document's answer sentences (given by
the caller in :attr:`indexes.documents.Document.sentences`), embedded into ``embeddings``
like the chunks (keyed by text hash, so an unchanged sentence is never re-embedded); the
content hashes are cleared so the next sync stores every entry's sentences."""
MAX_SENTENCES = 400
"""Per document; a longer entry's later sentences are embedded at ask time if picked."""
MODEL_KEY = "embedding_model"
VERSION_KEY = "vectors_version"
NONCE_KEY = "vectors_nonce"
NONCE_MIGRATION = """
    INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors_nonce', lower(hex(randomblob(8))));
"""
"""Schema migration 8 of :mod:`indexes.sqlite.engine`: a nonce for a file whose vectors were last
written before nonces existed, so its :meth:`VectorStore.stamp` names it at once (the
embedding server can rank its vectors) rather than after its next write."""
"""Random hex written anew with every version bump: two files (or two states of one file)
share a :meth:`VectorStore.stamp` only when they hold the same write, even when one was
rebuilt to the same counter under a reused inode, or a copy of the file was restored over
it after both took other writes."""

Progress = Callable[[int, int], None]
"""``progress(done, total)`` while embedding."""


def chunk_texts(title: str, summary: str, body: str, *, words: int = CHUNK_WORDS,
                overlap: int = OVERLAP_WORDS) -> list[str]:
    """The texts embedded for one document (at least one, at most :data:`MAX_CHUNKS`)."""
    head = ". ".join(part.strip() for part in (title, summary) if part.strip())
    tokens = body.split()
    if len(tokens) <= words:
        return [f"{head}\n{' '.join(tokens)}".strip()]
    step = max(words - overlap, 1)
    chunks = []
    for start in range(0, len(tokens), step):
        chunks.append(f"{head}\n{' '.join(tokens[start:start + words])}")
        if start + words >= len(tokens) or len(chunks) == MAX_CHUNKS:
            break
    return chunks


def text_hash(text: str) -> str:
    """sha256 hex of ``text`` in UTF-8: the key of its embedding."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Matrix:
    """All chunk vectors of one model: ``keys[i]`` owns rows ``starts[i]:starts[i+1]``;
    ``rowids[i]`` is that document's ``docs`` rowid (-1 when it has no row), read in the
    same snapshot as the vectors, what a :class:`RowFilter` is matched against."""

    keys: list[str]
    starts: np.ndarray
    vectors: np.ndarray
    version: str
    rowids: np.ndarray | None = None
    derived: dict = field(default_factory=dict, repr=False)
    """What callers compute from this matrix and its documents (routing's folder of each
    row), dropped with it when the vector store changes."""

    @cached_property
    def owners(self) -> np.ndarray:
        """``(n_chunks,)`` int64: the index in :attr:`keys` of each row's document."""
        import numpy as np

        return np.repeat(np.arange(len(self.keys), dtype=np.int64), np.diff(self.starts))

    @cached_property
    def signs(self) -> np.ndarray:
        """The rows' sign bits (:func:`indexes.retrieval.sign_bits.pack_signs`), made on
        first use (~0.2 s at 151,449 x 384) and kept with the matrix."""
        from indexes.retrieval.sign_bits import pack_signs

        return pack_signs(self.vectors)

    @cached_property
    def positions(self) -> dict[str, int]:
        """``key -> i`` (its index in :attr:`keys`)."""
        return {key: i for i, key in enumerate(self.keys)}


@dataclass(frozen=True)
class RowFilter:
    """The documents the vector leg may rank, named by ``docs`` rowid: with ``keep`` only
    ``rowids`` are ranked, without it every document but ``rowids``. The engine picks the
    shorter list (a scope keeps few, the default filter leaves out few), so a filter costs
    one membership test over the matrix's documents (``numpy.isin``), never a Python loop
    over keys; the rowids are a stdlib ``array`` so a client whose vector leg the
    embedding server ranks never imports numpy."""

    rowids: array
    """Rowids, ``array('q')`` (int64), in any order."""
    keep: bool

    @classmethod
    def of(cls, rowids: Iterable[int], *, keep: bool) -> RowFilter:
        """The filter of these rowids (any order, repeats allowed)."""
        return cls(array("q", rowids), keep)

    @classmethod
    def without(cls, base: RowFilter | None, dropped: Iterable[int]) -> RowFilter | None:
        """``base`` (``None``: everything) with the rowids ``dropped`` left out too."""
        dropped = set(dropped)
        if not dropped:
            return base
        if base is None:
            return cls.of(sorted(dropped), keep=False)
        if base.keep:
            return cls.of((r for r in base.rowids if r not in dropped), keep=True)
        return cls.of(sorted(dropped.union(base.rowids)), keep=False)

    def mask(self, matrix: Matrix) -> np.ndarray:
        """A bool per document of ``matrix``: may it be ranked. Raises ``ValueError``
        when ``matrix`` was made without rowids."""
        import numpy as np

        if matrix.rowids is None:
            raise ValueError("this matrix was read without document rowids")
        found = np.isin(matrix.rowids, np.frombuffer(self.rowids, dtype=np.int64))
        return found if self.keep else ~found


class SharedMatrices:
    """The last matrix read of each database file and model, shared by every
    :class:`VectorStore` of the process: a server opens the index anew for each call, and
    reading the matrix again was its largest cost (2.5 MB of vectors per call on the
    handbook). A matrix is used only while the file (device, inode) and its :meth:`stamp`
    (a nonce renewed by every change) are the ones it was read under; a file without a
    nonce shares nothing, and nothing read inside a transaction is kept. At most
    :attr:`FILES` files, the least recently used let go first (each matrix is
    ``chunks x dim x 4`` bytes: 232 MB at 151,449 chunks). Thread-safe; a kept matrix is
    only read."""

    FILES = 8

    def __init__(self) -> None:
        self._kept: dict[tuple, Matrix] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple, version: str) -> Matrix | None:
        """The kept matrix of ``key`` when it is at ``version``, else ``None``; one used is
        the last to go (least recently used first)."""
        with self._lock:
            found = self._kept.get(key)
            if found is None or found.version != version:
                return None
            self._kept[key] = self._kept.pop(key)
        return found

    def put(self, key: tuple, matrix: Matrix) -> None:
        """Keep ``matrix`` for ``key`` (replacing that file's older one)."""
        with self._lock:
            self._kept.pop(key, None)
            self._kept[key] = matrix
            while len(self._kept) > self.FILES:
                self._kept.pop(next(iter(self._kept)))


SHARED_MATRICES = SharedMatrices()


class VectorStore:
    """Chunks and embeddings stored in the search database's connection ``conn``."""

    def __init__(self, conn: sqlite3.Connection, get_meta, set_meta):
        self.conn = conn
        self.get_meta, self.set_meta = get_meta, set_meta
        self._matrix: dict[str, Matrix] = {}
        self.sign_bits: SignBits | None = None
        """When :func:`nearest` ranks through sign bits (``None``: the product's
        :data:`~indexes.retrieval.sign_bits.SIGN_BITS`; an evaluation sets its own)."""

    def _bump(self) -> None:
        self.set_meta(VERSION_KEY, str(int(self.get_meta(VERSION_KEY) or 0) + 1))
        self.set_meta(NONCE_KEY, secrets.token_hex(8))

    def changed(self) -> None:
        """Record that chunks or vectors were written behind this vector store's back (an
        ``INSERT`` into ``embeddings`` by another module): a new :meth:`stamp`. Call it in
        the same transaction as the write."""
        self._bump()

    def stamp(self) -> str | None:
        """``nonce:version`` of the stored vectors, read in one statement: changes whenever
        a chunk or vector does (:data:`NONCE_KEY`); what the embedding server's cached
        matrix of this file is checked against. ``None`` when the file has no nonce (its
        vectors last written by a release before nonces, or ``meta`` cleared by a
        migration): such a stamp cannot tell two files apart, so nothing is checked
        against it."""
        values = dict(self.conn.execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (NONCE_KEY, VERSION_KEY)))
        if not values.get(NONCE_KEY):
            return None
        return f"{values[NONCE_KEY]}:{values.get(VERSION_KEY) or 0}"

    def replace_chunks(self, key: str, chunks: Sequence[str]) -> None:
        """Store the chunk texts of document ``key`` (embeddings are added later)."""
        self.conn.execute("DELETE FROM chunks WHERE key = ?", (key,))
        self.conn.executemany(
            "INSERT INTO chunks(key, chunk, text_hash, text) VALUES (?, ?, ?, ?)",
            [(key, i, text_hash(t), t) for i, t in enumerate(chunks)])
        self._bump()

    def chunk_keys(self) -> list[tuple[str, str]]:
        """``(document key, text hash)`` of every stored chunk, by key and position."""
        return self.conn.execute(
            "SELECT key, text_hash FROM chunks ORDER BY key, chunk").fetchall()

    def replace_sentences(self, key: str, texts: Sequence[str]) -> None:
        """Store the answer sentences of document ``key`` (embedded with the chunks)."""
        self.conn.execute("DELETE FROM sentences WHERE key = ?", (key,))
        self.conn.executemany(
            "INSERT INTO sentences(key, n, text_hash, text) VALUES (?, ?, ?, ?)",
            [(key, i, text_hash(t), t) for i, t in enumerate(texts[:MAX_SENTENCES])])

    def sentence_vectors(self, keys: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """``text_hash -> vector`` of the stored sentences of documents ``keys`` that have
        a vector for ``model`` (one query; the caller hashes its sentences with
        :func:`text_hash` to look them up)."""
        import numpy as np

        keys = list(keys)
        if not keys:
            return {}
        rows = self.conn.execute(
            "SELECT DISTINCT s.text_hash, e.vector FROM sentences s JOIN embeddings e ON "
            "e.text_hash = s.text_hash AND e.model = ? "
            "WHERE s.key IN (SELECT value FROM json_each(?))",
            [model, json.dumps(keys, ensure_ascii=False)])
        return {h: np.frombuffer(blob, dtype=np.float32) for h, blob in rows}

    def delete(self, keys: Iterable[str]) -> None:
        """Forget the chunks and sentences of these documents (embeddings stay for reuse)."""
        keys = list(keys)
        if keys:
            for table in ("chunks", "sentences"):
                self.conn.execute(f"DELETE FROM {table} WHERE key IN "
                                  "(SELECT value FROM json_each(?))",
                                  [json.dumps(keys, ensure_ascii=False)])
            self._bump()

    def pending(self, model: str) -> list[tuple[str, str]]:
        """``(text_hash, text)`` of the chunks that have no vector for ``model`` yet,
        shortest first (ties by hash): batches cut from this list hold texts of about one
        length, so the model pads little (:func:`embed_pending`). Answer sentences are not
        pending: they are embedded when an answer reads them (:meth:`add_sentence_vectors`)."""
        return self.conn.execute(
            "SELECT DISTINCT c.text_hash, c.text FROM chunks c LEFT JOIN embeddings e "
            "ON e.text_hash = c.text_hash AND e.model = ? WHERE e.text_hash IS NULL "
            "ORDER BY length(c.text), c.text_hash", (model,)).fetchall()

    def pending_count(self, model: str) -> int:
        """How many distinct chunk texts have no vector for ``model`` yet (what
        :meth:`pending` would return, counted without reading the texts)."""
        return int(self.conn.execute(
            "SELECT count(DISTINCT c.text_hash) FROM chunks c LEFT JOIN embeddings e "
            "ON e.text_hash = c.text_hash AND e.model = ? WHERE e.text_hash IS NULL",
            (model,)).fetchone()[0])

    def add_sentence_vectors(self, model: str, hashes: Sequence[str],
                             vectors: np.ndarray) -> None:
        """Keep the vectors of answer sentences embedded at ask time (``vectors``:
        ``(len(hashes), dim)`` float32, keyed by :func:`text_hash` of the embedded text),
        so the next answer that reads them finds them (:meth:`sentence_vectors`). A vector
        already stored is left as it is; the :meth:`stamp` changes only when one of the
        texts is also a chunk (the vector leg's matrix is otherwise unchanged)."""
        import numpy as np

        vectors = np.asarray(vectors, dtype=np.float32)
        if not len(hashes):
            return
        self.conn.executemany(
            "INSERT OR IGNORE INTO embeddings(text_hash, model, dim, vector) VALUES (?,?,?,?)",
            [(h, model, int(vectors.shape[1]), v.tobytes()) for h, v in zip(hashes, vectors,
                                                                              strict=True)])
        if self.conn.execute("SELECT 1 FROM chunks WHERE text_hash IN (SELECT value FROM "
                             "json_each(?)) LIMIT 1", [json.dumps(list(hashes))]).fetchone():
            self._bump()

    def sentence_counts(self, model: str) -> tuple[int, int]:
        """``(answer sentences, answer sentences with a vector for model)``, the sentences
        stored for the answer picker (counted like :meth:`counts` counts chunks)."""
        total = self.conn.execute("SELECT count(*) FROM sentences").fetchone()[0]
        done = self.conn.execute(
            "SELECT count(*) FROM sentences s JOIN embeddings e ON e.text_hash = s.text_hash "
            "AND e.model = ?", (model,)).fetchone()[0]
        return total, done

    def prepare_model(self, model: str, dim: int) -> bool:
        """Record ``model:dim`` as the model in use; returns True when it differs from the
        recorded one. Other models' vectors stay, as on PostgreSQL: every read names its
        model, and a switch back (another user's setting, ``WIKI_EMBED_RUNTIME=torch``
        picking the float model) finds its vectors still there instead of none. The
        model's vectors of another dimension go with :meth:`drop_damaged`."""
        label = f"{model}:{dim}"
        if self.get_meta(MODEL_KEY) == label:
            return False
        self.set_meta(MODEL_KEY, label)
        self._bump()
        return True

    def drop_damaged(self, model: str, dim: int) -> int:
        """Delete the vectors of ``model`` that cannot be read as ``dim`` float32 numbers
        (another dimension, a truncated or non-blob value: a damaged row); their chunks
        become pending and are embedded again. Returns how many were deleted. Looks first
        and writes only when one is found, so a read of a sound index never writes (a
        read-only file stays usable)."""
        damaged = ("model = ? AND (dim != ? OR typeof(vector) != 'blob' "
                   "OR length(vector) != ? * 4)")
        if not self.conn.execute(f"SELECT EXISTS (SELECT 1 FROM embeddings WHERE {damaged})",
                                 (model, dim, dim)).fetchone()[0]:
            return 0
        deleted = self.conn.execute(f"DELETE FROM embeddings WHERE {damaged}",
                                    (model, dim, dim)).rowcount
        if deleted:
            self._bump()
        return deleted

    def save(self, model: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Save one vector per chunk hash (``vectors``: ``(len(hashes), dim)`` float32)."""
        import numpy as np

        vectors = np.asarray(vectors, dtype=np.float32)
        self.conn.executemany(
            "INSERT OR REPLACE INTO embeddings(text_hash, model, dim, vector) VALUES (?,?,?,?)",
            [(h, model, int(vectors.shape[1]), v.tobytes()) for h, v in zip(hashes, vectors,
                                                                              strict=True)])
        self._bump()

    def counts(self, model: str) -> tuple[int, int]:
        """``(chunks, chunks with a vector for model)``."""
        total = self.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        done = self.conn.execute(
            "SELECT count(*) FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash "
            "AND e.model = ?", (model,)).fetchone()[0]
        return total, done

    def _version(self, model: str) -> str:
        return f"{self.stamp() or self.get_meta(VERSION_KEY) or 0}:{model}"  # nonce too

    def current(self, model: str) -> Matrix | None:
        """The matrix of ``model`` already read and still current (the vector store has
        not changed since), else ``None``; reads two ``meta`` rows, never the vectors."""
        version = self._version(model)
        cached = self._matrix.get(model)
        if cached is not None and cached.version == version:
            return cached
        shared = self._shared_key(model)
        return SHARED_MATRICES.get(shared, version) if shared is not None else None

    def _shared_key(self, model: str) -> tuple | None:
        """The key of this file's matrix of ``model`` in :data:`SHARED_MATRICES`, or
        ``None`` when it may not be shared (no nonce, an in-memory or vanished file)."""
        import os

        if self.stamp() is None:
            return None
        try:
            path = next((row[2] for row in self.conn.execute("PRAGMA database_list")
                         if row[1] == "main"), "")
            info = os.stat(path) if path else None
        except OSError:
            return None
        return None if info is None else (info.st_dev, info.st_ino, model)

    def matrix(self, model: str, dim: int) -> Matrix:
        """Every chunk vector of ``model``, grouped by document; cached until the
        vector store changes, in this store and for the process (:class:`SharedMatrices`).
        Raises ``ValueError`` if a stored vector has another dimension."""
        import numpy as np

        version = self._version(model)
        cached = self._matrix.get(model)
        if cached is not None and cached.version == version:
            return cached
        shared = self._shared_key(model)
        kept = SHARED_MATRICES.get(shared, version) if shared is not None else None
        if kept is not None:
            self._matrix = {model: kept}
            return kept
        rows = self.conn.execute(
            "SELECT c.key, e.dim, e.vector FROM chunks c JOIN embeddings e "
            "ON e.text_hash = c.text_hash AND e.model = ? ORDER BY c.key, c.chunk",
            (model,)).fetchall()
        rowid_of = dict(self.conn.execute("SELECT key, rowid FROM docs"))
        keys: list[str] = []
        starts: list[int] = []
        blobs = []
        for row_number, (key, row_dim, blob) in enumerate(rows):
            if row_dim != dim:
                raise ValueError(f"stored vector of {key} has {row_dim} dimensions, the "
                                 f"model {model} gives {dim}; rebuild the index")
            if not keys or keys[-1] != key:
                keys.append(key)
                starts.append(row_number)
            blobs.append(blob)
        vectors = (np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dim)
                   if blobs else np.zeros((0, dim), dtype=np.float32))
        rowids = np.fromiter((rowid_of.get(k, -1) for k in keys), dtype=np.int64,
                             count=len(keys))
        matrix = Matrix(keys, np.array(starts + [len(blobs)], dtype=np.int64), vectors,
                        version, rowids)
        self._matrix = {model: matrix}
        if shared is not None and not self.conn.in_transaction:
            SHARED_MATRICES.put(shared, matrix)
        return matrix

    def search(self, query_vector, model: str, *, rows: RowFilter | None, limit: int,
               path: str | None = None) -> list[tuple[str, float]]:
        """``(key, cosine of the best chunk)`` for the ``limit`` nearest documents that
        ``rows`` lets through (all when ``None``), best first. ``query_vector``: a unit
        vector (numpy, or a :class:`~indexes.embedding.query_vector.QueryVector`). A
        ``QueryVector`` from the embedding server, with ``path`` (this database's file)
        given, is searched by that server over its cached matrix of the file when the
        server's copy has this :meth:`stamp` (and the file has one); otherwise (no server,
        another stamp, a failed or malformed reply) here, the same :func:`nearest`."""
        if getattr(query_vector, "searcher", None) is not None and path is not None:
            found = ask_server(query_vector, model, rows=rows, limit=limit, path=path,
                               stamp=self.stamp())
            if found is not None:
                return found
        return self.rank_here(query_vector, model, rows=rows, limit=limit)

    def rank_here(self, query_vector, model: str, *, rows: RowFilter | None,
                  limit: int) -> list[tuple[str, float]]:
        """:meth:`search` in this process, never asking the embedding server."""
        import numpy as np

        query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        return nearest(self.matrix(model, int(query.shape[0])), query, rows=rows,
                       limit=limit, sign_bits=self.sign_bits)


def ask_server(query_vector, model: str, *, rows: RowFilter | None, limit: int,
               path: str | None, stamp: str | None) -> list[tuple[str, float]] | None:
    """The embedding server's :func:`nearest` over its cached matrix of the file at
    ``path`` with ``stamp``, when ``query_vector`` came from a server; ``None`` when it
    did not, the file has no path or stamp, or the server could not answer."""
    searcher = getattr(query_vector, "searcher", None)
    if searcher is None or path is None or stamp is None:
        return None
    return searcher.nearest(query_vector, path, stamp, model, limit=limit, rows=rows)


_BLAS_LIMITED: list[bool] = []
_BLAS_LOCK = threading.Lock()


def one_blas_thread() -> None:
    """Limit numpy's OpenBLAS to one thread for the rest of the process (``threadpoolctl``),
    once: called where a worker ranks the vector leg beside the lexical legs, so it ranks
    on one core while SQLite ranks on the other. With OpenBLAS's two spinning threads on
    the same two cores the legs together took 33.8 ms p50 at 100,000 entries, against 23.8
    ms on one thread each (docs/decisions.md, "Hybrid search at 100,000 entries").
    PyTorch and ONNX Runtime keep their own threads."""
    with _BLAS_LOCK:
        if not _BLAS_LIMITED:
            from threadpoolctl import ThreadpoolController

            ThreadpoolController().select(internal_api="openblas").limit(limits=1)
            _BLAS_LIMITED.append(True)


def rank_vector(query_vector, model: str, *, rows: RowFilter | None, limit: int,
                path: str | None, stamp: str | None, matrix: Matrix | None,
                sign_bits: SignBits | None = None):
    """The vector leg's work that needs no database, for a worker thread: waits for
    ``query_vector`` (a vector or a Future of one, whose exception it raises), asks the
    embedding server (:func:`ask_server`), else ranks over ``matrix`` (:func:`nearest`
    with ``sign_bits``).
    Returns ``(found, vector)``; ``found`` is ``None`` when neither could rank (no
    matrix read yet, or one of another dimension): the caller then ranks with
    :meth:`VectorStore.rank_here`."""
    vector = resolved(query_vector)
    found = ask_server(vector, model, rows=rows, limit=limit, path=path, stamp=stamp)
    if found is not None or matrix is None:
        return found, vector
    import numpy as np  # here: a client the server ranks for never imports numpy

    one_blas_thread()
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != matrix.vectors.shape[1]:
        return None, vector
    return nearest(matrix, query, rows=rows, limit=limit, sign_bits=sign_bits), vector


def nearest(matrix: Matrix, query: np.ndarray, *, rows: RowFilter | None,
            limit: int, sign_bits: SignBits | None = None) -> list[tuple[str, float]]:
    """``(key, cosine of the best chunk)`` of the ``limit`` documents of ``matrix`` nearest
    to ``query`` (a ``(dim,)`` float32 unit vector) that ``rows`` lets through (all when
    ``None``); best first, ties by key. Below ``sign_bits.from_rows`` chunks (default
    :data:`~indexes.retrieval.sign_bits.SIGN_BITS`): one matrix-vector product
    (``n_chunks x dim`` multiply-adds) and a per-document max (``numpy.maximum.reduceat``);
    from there on, only the chunks nearest by their sign bits are scored
    (:mod:`indexes.retrieval.sign_bits`: every score exact, a chunk the bits rank too low
    missed). Then a partial sort."""
    import numpy as np

    from indexes.retrieval.sign_bits import SIGN_BITS, candidate_rows

    sign_bits = sign_bits or SIGN_BITS
    if not matrix.keys:
        return []
    allowed = None if rows is None else rows.mask(matrix)
    if not sign_bits.applies(len(matrix.vectors)):
        best = np.maximum.reduceat(matrix.vectors @ query, matrix.starts[:-1])
        if allowed is not None:
            best[~allowed] = -np.inf
    else:
        chunks_allowed = None if allowed is None else allowed[matrix.owners]
        count = sign_bits.scored(len(matrix.vectors) if chunks_allowed is None
                                 else int(chunks_allowed.sum()))
        picked = candidate_rows(matrix.signs, query, count, chunks_allowed)
        best = np.full(len(matrix.keys), -np.inf, dtype=np.float32)
        np.maximum.at(best, matrix.owners[picked], matrix.vectors[picked] @ query)
    count = min(limit, int(np.isfinite(best).sum()))
    if count <= 0:
        return []
    top = np.argpartition(-best, count - 1)[:count]
    top = top[np.lexsort((np.array([matrix.keys[i] for i in top]), -best[top]))]
    return [(matrix.keys[i], float(best[i])) for i in top]


def embed_pending(vector_store: VectorStore, embedder, *, progress: Progress | None = None,
                  commit: Callable[[], None] | None = None,
                  bulk: Callable[[], Any] | None = None, checked: bool = False) -> int:
    """Embed every chunk without a vector for ``embedder`` in batches of :data:`BATCH`,
    shortest texts first (:meth:`VectorStore.pending`: each batch holds texts of about one
    length, so little of the model's work is padding); ``commit`` (if given) runs after
    each batch. ``checked``: the caller has just run
    :meth:`VectorStore.prepare_model` and :meth:`VectorStore.drop_damaged` itself. When
    more than :data:`BULK` are pending and ``bulk`` is given, the embedder ``bulk()``
    returns (same name, same vectors: the model in this process rather than a shared
    server) does the work. Returns the number of chunks embedded."""
    if not checked:
        vector_store.prepare_model(embedder.name, embedder.dim)
        vector_store.drop_damaged(embedder.name, embedder.dim)
    todo = vector_store.pending(embedder.name)
    if bulk is not None and len(todo) > BULK:
        embedder = bulk()
    if progress and todo:  # the model is loaded: the rate counts from here
        progress(0, len(todo))
    for start in range(0, len(todo), BATCH):
        batch = todo[start:start + BATCH]
        vectors = embedder.encode([text for _, text in batch])
        if vectors.shape != (len(batch), embedder.dim):
            raise ValueError(f"embedder {embedder.name} returned shape {vectors.shape}, "
                             f"expected ({len(batch)}, {embedder.dim})")
        vector_store.save(embedder.name, [h for h, _ in batch], vectors)
        if commit:
            commit()
        if progress:
            progress(min(start + BATCH, len(todo)), len(todo))
    return len(todo)
