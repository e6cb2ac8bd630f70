"""The embedding server's ``nearest`` request: rank an index file's chunk vectors.

A ``wiki search`` process that let the server encode its query also lets it rank the
vectors, so the process never imports numpy nor reads every vector out of SQLite (~80 ms
and ~10 ms of a ~0.25 s search on the handbook wiki). The server keeps the
:class:`~indexes.sqlite.vectors.Matrix` of the last :data:`KEEP` index files it was asked about,
keyed by the file's path, its vectors' :meth:`~indexes.sqlite.vectors.VectorStore.stamp` and the
model. A stamp is a random token written anew with every change of the vectors, so a kept
matrix of that stamp is the file's matrix as the client sees it; without one kept, the
file (a regular file with its ``-wal`` beside it: one a client holds open) is opened
read-only and its matrix used only when its stamp, read in the same transaction, is the
one the client sent (else the reply says ``"hits": null`` and the client ranks the
vectors itself).

Request: ``{"op": "nearest", "model": m, "index": absolute path, "stamp": s,
"vector": base64(float32 LE), "limit": n, "rows": null | {"keep": bool, "ids":
base64(int64 LE docs rowids)}}`` (a :class:`~indexes.sqlite.vectors.RowFilter`: the
rowids are matched against the ones the server read with the matrix, in the snapshot of
the same stamp); reply:
``{"ok": true, "hits": [[key, cosine], ...] | null}``.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import stat
import sys
import threading
import urllib.parse
from array import array
from collections import OrderedDict

from indexes.sqlite.vectors import Matrix, RowFilter, VectorStore, nearest

KEEP = 2
"""Matrices kept (one per index file): a 100,000-entry wiki's is ~400 MB."""
MAX_LIMIT = 10_000
MAX_ROWIDS = 6_000_000
"""Rowids one request may name: what fits the server's 64 MiB request line as base64
(a larger filter is ranked by the client itself)."""


class MatrixCache:
    """The matrices of the last :data:`KEEP` index files, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str, str], Matrix] = OrderedDict()

    def get(self, path: str, stamp: str, model: str, dim: int) -> Matrix | None:
        """The matrix of ``model``'s vectors in the index file ``path`` when its stamp is
        ``stamp``; ``None`` when it is another (changed since the client read it), has
        none, or no ``-wal`` beside it (no client holds it open: not read, see the code).
        Raises ``OSError`` when ``path`` cannot be stat'ed, ``ValueError`` when it is not a
        regular file or (from :meth:`VectorStore.matrix`) a stored vector is not ``dim``
        wide, and ``sqlite3.Error`` when the file cannot be read."""
        key = (path, stamp, model)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block open() for good
            raise ValueError("index is not a regular file")
        if not os.path.exists(path + "-wal"):
            # an index in use is in WAL mode, its -wal there while the client holds it;
            # SQLite's read-only open of a WAL file nobody holds would create (and leave)
            # its -wal and -shm: the client ranks such a file itself
            return None
        uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, timeout=5, isolation_level=None)
        try:
            conn.execute("BEGIN")  # the stamp and the rows from one snapshot

            def get_meta(name: str) -> str | None:
                row = conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
                return row[0] if row else None

            vectors = VectorStore(conn, get_meta, None)
            if vectors.stamp() != stamp:
                return None
            matrix = vectors.matrix(model, dim)
        finally:
            conn.close()
        with self._lock:
            self._kept[key] = matrix
            while len(self._kept) > KEEP:
                self._kept.popitem(last=False)
        return matrix


def answer(request: dict, model: str, cache: MatrixCache) -> dict:
    """The reply to a ``nearest`` request (see the module) for the server of ``model``.
    Raises ``ValueError`` for a malformed request, ``sqlite3.Error`` for an unreadable
    file (the server turns either into ``{"ok": false, "error": ...}``)."""
    query, limit = checked_query(request, model)
    path, stamp = request.get("index"), request.get("stamp")
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        raise ValueError("index must be an absolute path")
    if not isinstance(stamp, str):
        raise ValueError("stamp must be a string")
    rows = rows_from_request(request.get("rows"))
    matrix = cache.get(path, stamp, model, int(query.size))
    if matrix is None:
        return {"ok": True, "hits": None}
    found = nearest(matrix, query, rows=rows, limit=limit)
    return {"ok": True, "hits": [[key, score] for key, score in found]}


def checked_query(request: dict, model: str):
    """The ``(query vector, limit)`` of a ranking request to the server of ``model``: the
    vector as a float32 numpy array. Raises ``ValueError`` for another model, a limit
    outside 1..:data:`MAX_LIMIT` or a vector that is not finite float32 numbers."""
    import numpy as np

    if request.get("model") != model:
        raise ValueError(f"this server serves {model!r}, not {request.get('model')!r}")
    limit = request.get("limit")
    if type(limit) is not int or not 0 < limit <= MAX_LIMIT:
        raise ValueError(f"limit must be an integer in 1..{MAX_LIMIT}")
    vector = request.get("vector")
    query = np.frombuffer(base64.b64decode(vector if isinstance(vector, str) else "",
                                           validate=True), dtype="<f4").astype(np.float32)
    if not query.size or not np.isfinite(query).all():
        raise ValueError("vector must be finite float32 numbers")
    return query, limit


def rows_request(rows: RowFilter | None) -> dict | None:
    """``rows`` as the request's ``"rows"`` field (see the module)."""
    if rows is None:
        return None
    ids = array("q", rows.rowids)
    if sys.byteorder != "little":
        ids.byteswap()
    return {"keep": rows.keep, "ids": base64.b64encode(ids.tobytes()).decode("ascii")}


def rows_from_request(field) -> RowFilter | None:
    """The :class:`RowFilter` a request's ``"rows"`` field names. Raises ``ValueError``
    when it is malformed (not null nor ``{"keep": bool, "ids": base64}``, a length that is
    not whole int64s, more than :data:`MAX_ROWIDS`)."""
    if field is None:
        return None
    if not isinstance(field, dict) or not isinstance(field.get("keep"), bool) \
            or not isinstance(field.get("ids"), str):
        raise ValueError("rows must be null or {keep, ids}")
    data = base64.b64decode(field["ids"], validate=True)
    if len(data) % 8 or len(data) // 8 > MAX_ROWIDS:
        raise ValueError("rows.ids must be int64 rowids")
    ids = array("q")
    ids.frombytes(data)
    if sys.byteorder != "little":
        ids.byteswap()
    return RowFilter(ids, field["keep"])
