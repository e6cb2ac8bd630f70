"""A warm local embedding server, started on demand and shared by the ``wiki`` processes
of one install (its socket is keyed by install, version, model and runtime:
:mod:`indexes.embedding.embed_socket`).

Importing torch + sentence-transformers costs ~5 s, too much for each ``wiki ask``. The
first :class:`RemoteEmbedder` call spawns ``python -m indexes.embedding.embed_server`` as a detached
process that loads the model once and serves encodings over a Unix stream socket; later
processes connect and get vectors in milliseconds. The server exits after ``idle_seconds``
without requests and removes its socket. It is for queries: a bulk build embeds in its own
process (:meth:`AutoEmbedder.in_process`), and within the server a short request goes
before the waiting batches of a long one, so a query never waits behind a build.

Protocol, one JSON line each way per request (several requests may share a connection):
``{"op": "encode", "model": m, "texts": [...]}`` -> ``{"ok": true, "model": m, "dim": d,
"n": n, "vectors": base64(float32 little-endian, row-major)}``; ``{"op": "ping"}`` ->
``{"ok": true, "model": m, "dim": d, "pid": p}``; ``{"op": "nearest", ...}`` ranks an index
file's vectors for a query vector (:mod:`indexes.embedding.embed_nearest`),
``{"op": "nearest_space", ...}`` a PostgreSQL space's (:mod:`indexes.embedding.embed_nearest_pg`);
failures ->
``{"ok": false, "error": s}``.

This module imports only the stdlib (numpy when vectors are decoded or computed: a
``wiki search`` whose vector leg this server answers never loads it,
:mod:`indexes.embedding.query_vector`); the model's libraries load in the server.
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from indexes.embedding import embedders
from indexes.embedding.embed_nearest import rows_request
from indexes.embedding.embed_reply import (
    read_reply,
    reply_dim,
    reply_hits,
    reply_vector,
    reply_vectors,
)
from indexes.embedding.embed_socket import PACKAGE_ROOT, default_socket_path
from indexes.embedding.embed_spec import SERVER_MODES, EmbedderSpec
from indexes.embedding.embedders import Embedder, EmbedderUnavailableError
from indexes.embedding.query_vector import QueryVector

NEAREST_TIMEOUT_S = 30.0
"""How long a client waits for a ``nearest`` or ``nearest_space`` answer (seconds) before
it ranks itself: the server ranks in milliseconds, and reads an SQLite file's matrix in
seconds at 100,000 entries; a server stuck on its database must not hold a command for
the request timeout of an encoding batch."""

if TYPE_CHECKING:
    import numpy as np

    from indexes.retrieval.filters import Filters
    from indexes.sqlite.vectors import RowFilter

__all__ = ["AutoEmbedder", "RemoteEmbedder", "default_socket_path", "get_embedder"]
BATCH = 64
SHORT = 8
"""A request of at most this many texts is a query's: it goes before waiting long ones."""
MAX_REQUEST_BYTES = 64 * 1024 * 1024
_FALLBACK: set[str] = set()
log = logging.getLogger("indexes.embedding.embed_server")
log.addHandler(logging.NullHandler())  # library code stays silent unless the app logs


def _sibling(socket_path: Path, suffix: str) -> Path:
    return socket_path.with_name(socket_path.stem + suffix)


def _try_connect(socket_path: Path, timeout: float) -> socket.socket | None:
    """A connected socket, or None when nothing listens on ``socket_path``."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(socket_path))
    except OSError:
        sock.close()
        return None
    return sock


class RemoteEmbedder:
    """An :class:`~indexes.embedding.embedders.Embedder` whose model runs in the shared server.

    ``encode(texts)`` returns ``(len(texts), dim)`` float32 unit rows. When nothing listens
    on ``socket_path`` (default :func:`default_socket_path` of ``spec.runtime``) and
    ``start`` is true, a
    detached server is spawned (one per socket, even under concurrent callers: an exclusive
    ``flock`` on ``<socket stem>.lock`` guards it; its log is ``<socket stem>.log``) and
    awaited for up to ``timeout`` seconds; the server loads the model on ``spec.runtime``,
    and a first start that must prepare the ONNX copy says so through ``spec.notify``.
    ``request_timeout`` bounds one reply. Raises
    :class:`EmbedderUnavailableError` when no server can be reached or started, or the
    server reports an error.
    """

    def __init__(self, model_name: str, *, socket_path: Path | None = None, start: bool = True,
                 timeout: float = 60.0, request_timeout: float = 300.0,
                 idle_seconds: float = 900.0, spec: EmbedderSpec | None = None) -> None:
        self.name = model_name
        self.spec = spec or EmbedderSpec(model=model_name)
        self.socket_path = Path(socket_path or default_socket_path(model_name,
                                                                   self.spec.runtime))
        self.start, self.timeout = start, timeout
        self.request_timeout, self.idle_seconds = request_timeout, idle_seconds
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector width, learned from the server's ping (starting it if needed)."""
        if self._dim is None:
            self._dim = reply_dim(self.ping(), self.socket_path)
        return self._dim

    def ping(self) -> dict:
        """The server's ``{"ok", "model", "dim", "pid"}`` reply."""
        with self._connect() as sock:
            return self._request(sock, {"op": "ping"})

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), dim)`` float32 unit rows, sent in batches of :data:`BATCH`."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        with self._connect() as sock:
            for i in range(0, len(texts), BATCH):
                batch = texts[i:i + BATCH]
                reply = self._request(sock, {"op": "encode", "model": self.name,
                                             "texts": batch})
                parts.append(reply_vectors(reply, len(batch), self.socket_path,
                                           parts[0].shape[1] if parts else self._dim))
        vectors = np.concatenate(parts).astype(np.float32)
        self._dim = vectors.shape[1]
        return vectors

    def encode_query(self, text: str) -> QueryVector:
        """``text``'s unit vector as a :class:`QueryVector` (bytes, no numpy) that this
        server can also rank an index's vectors for (:meth:`nearest`)."""
        with self._connect() as sock:
            reply = self._request(sock, {"op": "encode", "model": self.name, "texts": [text]})
        data, self._dim = reply_vector(reply, self.socket_path, self._dim)
        return QueryVector(data, self._dim, searcher=self)

    def nearest(self, vector: QueryVector, path: str | Path, stamp: str, model: str, *,
                limit: int, rows: RowFilter | None) -> list[tuple[str, float]] | None:
        """The ``limit`` documents of the index file ``path`` nearest to ``vector``
        (``(key, cosine)``, best first; only those ``rows`` lets through), ranked by the
        server over its cached matrix (:mod:`indexes.embedding.embed_nearest`). ``None``
        when the server's copy is not at ``stamp``, cannot read the file, fails or answers
        out of protocol: the caller ranks the vectors itself then (never a server that is
        not already running: this does not start one)."""
        if model != self.name:
            return None
        return self._nearest({"op": "nearest", "model": model, "index": str(path),
                              "stamp": stamp, "rows": rows_request(rows)}, vector, limit)

    def nearest_space(self, vector: QueryVector, conninfo: str, space: str, stamp: str,
                      model: str, *, limit: int,
                      filters: Filters | None) -> list[tuple[str, float]] | None:
        """The ``limit`` documents of the PostgreSQL ``space`` nearest to ``vector``
        (``(key, cosine)``, best first; only those ``filters`` keeps, ``None``: the default
        filter), ranked by the server over the space's matrix it keeps per ``stamp``
        (:mod:`indexes.embedding.embed_nearest_pg`; ``conninfo``: the client's resolved
        connection, :func:`indexes.pg.vectors.connection_address`). ``None`` when the
        server has no matrix at ``stamp`` yet (it reads one then), cannot reach the
        database, fails or answers out of protocol: the caller ranks in the database."""
        from indexes.embedding.embed_nearest_pg import filters_request

        if model != self.name:
            return None
        return self._nearest({"op": "nearest_space", "model": model, "conninfo": conninfo,
                              "space": space, "stamp": stamp,
                              "filters": filters_request(filters)}, vector, limit)

    def _nearest(self, request: dict, vector: QueryVector,
                 limit: int) -> list[tuple[str, float]] | None:
        request = {**request, "vector": base64.b64encode(vector.data).decode("ascii"),
                   "limit": limit}
        timeout = min(self.request_timeout, NEAREST_TIMEOUT_S)
        sock = _try_connect(self.socket_path, timeout)
        if sock is None:
            return None
        try:
            with sock:
                return reply_hits(self._request(sock, request, timeout), self.socket_path,
                                  limit)
        except EmbedderUnavailableError as exc:
            log.warning("nearest on the embedding server failed, ranking here: %s", exc)
            return None

    def _request(self, sock: socket.socket, request: dict,
                 timeout: float | None = None) -> dict:
        try:
            sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError as exc:
            raise EmbedderUnavailableError(f"embedding server {self.socket_path}: {exc}") from exc
        return read_reply(sock, self.socket_path, timeout or self.request_timeout)

    def _connect(self) -> socket.socket:
        if (sock := _try_connect(self.socket_path, self.request_timeout)) is not None:
            return sock
        if not self.start:
            raise EmbedderUnavailableError(f"no embedding server on {self.socket_path}")
        with open(_sibling(self.socket_path, ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # held while spawning and awaiting readiness
            if (sock := _try_connect(self.socket_path, self.request_timeout)) is not None:
                return sock  # another process started it while we waited for the lock
            preparing = embedders.needs_preparing(
                dataclasses.replace(self.spec, model=self.name))
            if preparing:
                self.spec.say(embedders.PREPARING)
            started = time.monotonic()
            process, deadline, told = self._spawn(), started + self.timeout, started
            while (sock := _try_connect(self.socket_path, self.request_timeout)) is None:
                if process.poll() is not None or time.monotonic() > deadline:
                    why = (f"did not answer within {self.timeout:g}s" if process.returncode
                           is None else f"exited with status {process.returncode}")
                    raise EmbedderUnavailableError(f"the embedding server {why}: "
                                                   f"{self._log_tail()}")
                if preparing and time.monotonic() - told >= 5:
                    told = time.monotonic()
                    self.spec.say(f"  still preparing ({told - started:.0f} s)")
                time.sleep(0.05)
            if preparing:
                self.spec.say(f"embedding model ready ({time.monotonic() - started:.1f} s)")
            with warnings.catch_warnings():  # the server outlives us: no "still running"
                warnings.simplefilter("ignore", ResourceWarning)
                del process
            return sock

    def warm(self) -> bool:
        """Start the server in the background when none listens (and ``start`` is true),
        without waiting for it: the next command's first query then finds the model
        loaded. Returns whether a server is running or starting. Another process already
        starting one (it holds the lock) is left to it."""
        if (sock := _try_connect(self.socket_path, 1.0)) is not None:
            sock.close()
            return True
        if not self.start:
            return False
        with open(_sibling(self.socket_path, ".lock"), "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True  # another process is starting it now
            if (sock := _try_connect(self.socket_path, 1.0)) is not None:
                sock.close()
                return True
            with warnings.catch_warnings():  # the server outlives us: no "still running"
                warnings.simplefilter("ignore", ResourceWarning)
                self._spawn()
            return True

    def _spawn(self) -> subprocess.Popen:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT),
                                                          env.get("PYTHONPATH")]))
        with open(_sibling(self.socket_path, ".log"), "ab") as log_file:
            return subprocess.Popen(
                [sys.executable, "-m", "indexes.embedding.embed_server", "--model", self.name,
                 "--runtime", self.spec.runtime, "--socket", str(self.socket_path),
                 "--idle", str(self.idle_seconds)],
                start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=log_file, close_fds=True, cwd=str(self.socket_path.parent), env=env)

    def _log_tail(self) -> str:
        try:
            lines = _sibling(self.socket_path, ".log").read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-3:]) or "(empty log)"


class AutoEmbedder:
    """The default model served by this install's server, switching for good to the
    in-process model on the server's first failure (or once :meth:`in_process` loaded it
    here anyway). ``encode`` and ``dim`` as :class:`~indexes.embedding.embedders.Embedder`'s;
    ``dim``
    is known without starting the server."""

    def __init__(self, spec: EmbedderSpec) -> None:
        self.spec, self.name = spec, str(spec.model)
        self._remote: RemoteEmbedder | None = None
        self._local: Embedder | None = None

    def in_process(self) -> Embedder:
        """The model loaded in this process: for a bulk build, which must not hold the
        shared server while other commands' queries wait (the vectors are the same).
        Later calls of this embedder use it too: it is loaded already."""
        self._local = embedders.load(self.name, self.spec)
        return self._local

    def _fallback(self) -> Embedder:
        _FALLBACK.add(self.name)
        return self.in_process()

    def _call(self, fn):  # type: ignore[no-untyped-def]
        if self._local is not None:
            return fn(self._local)
        if self.name not in _FALLBACK:
            try:
                if self._remote is None:
                    self._remote = RemoteEmbedder(self.name, spec=self.spec)
                return fn(self._remote)
            except (EmbedderUnavailableError, OSError, ValueError) as exc:
                log.warning("embedding server unavailable, loading in-process: %s", exc)
        return fn(self._fallback())

    @property
    def dim(self) -> int:
        if self._local is None and self._remote is None:
            return embedders.DEFAULT_DIM  # both runtimes of the default model: 384
        return self._call(lambda e: e.dim)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._call(lambda e: e.encode(texts))

    def encode_query(self, text: str) -> QueryVector | np.ndarray:
        """``text``'s unit vector: a :class:`QueryVector` from the server (which then also
        ranks the index's vectors for it), or a numpy row from the in-process model."""
        return self._call(lambda e: e.encode_query(text) if isinstance(e, RemoteEmbedder)
                          else e.encode([text])[0])


def get_embedder(model_name: str, spec: EmbedderSpec | None = None) -> Embedder:
    """The embedder to use for ``model_name`` in this process, as ``spec`` (default:
    ``EmbedderSpec(model=model_name)``) says. ``server="off"`` loads it in-process;
    ``"auto"`` serves :data:`embedders.SERVED_MODELS` from this install's shared server
    (an :class:`AutoEmbedder`), falling back to in-process for the rest of the process if
    the server cannot be started or reached. Other names (fakes registered at runtime)
    always load in-process. Raises :class:`EmbedderUnavailableError` for an unknown name
    or server mode."""
    spec = spec or EmbedderSpec(model=model_name)
    if spec.model != model_name:
        spec = dataclasses.replace(spec, model=model_name)
    if spec.server not in SERVER_MODES:
        raise EmbedderUnavailableError(
            f"WIKI_EMBED_SERVER must be 'auto' or 'off', not {spec.server!r}")
    if spec.server == "off" or model_name not in embedders.SERVED_MODELS or \
            model_name in _FALLBACK:
        return embedders.load(model_name, spec)
    return AutoEmbedder(spec)



def warm(model_name: str, spec: EmbedderSpec | None = None) -> bool:
    """Start this install's shared server for ``model_name`` in the background, when
    ``spec`` serves it (``server="auto"`` and the default model, as :func:`get_embedder`
    decides) and none runs yet; never waits for it. Returns whether one is running or
    starting. A failure to start is silent here: the next query falls back as usual."""
    spec = spec or EmbedderSpec(model=model_name)
    if spec.server != "auto" or model_name not in embedders.SERVED_MODELS or \
            model_name in _FALLBACK:
        return False
    try:
        return RemoteEmbedder(model_name, spec=dataclasses.replace(spec, model=model_name)
                              ).warm()
    except OSError:
        return False


if __name__ == "__main__":  # the server process: python -m indexes.embedding.embed_server
    from indexes.embedding.embed_service import main

    raise SystemExit(main())
