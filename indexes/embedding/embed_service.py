"""The embedding server process: load the model once, answer on a Unix socket.

Spawned by :class:`indexes.embedding.embed_server.RemoteEmbedder` as ``python -m
indexes.embedding.embed_server`` (which runs :func:`main`); the protocol is in
:mod:`indexes.embedding.embed_server`'s docstring. A short request (a query's) goes before the
waiting batches of a long one (:class:`_QueriesFirst`); ``nearest`` and
``nearest_space`` requests (:mod:`indexes.embedding.embed_nearest`,
:mod:`indexes.embedding.embed_nearest_pg`) do not wait for the model at all.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from indexes.embedding import embed_nearest, embedders
from indexes.embedding.embed_nearest import MatrixCache
from indexes.embedding.embed_nearest_pg import SpaceMatrices
from indexes.embedding.embed_server import MAX_REQUEST_BYTES, SHORT, _try_connect, log
from indexes.embedding.embed_spec import EmbedderSpec
from indexes.embedding.embedders import Embedder

__all__ = ["main", "serve"]


class _QueriesFirst:
    """A lock whose short holders (queries) go before waiting long ones (batches)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy, self._short_waiting = False, 0

    def locked(self) -> bool:
        return self._busy

    @contextlib.contextmanager
    def hold(self, short: bool):  # type: ignore[no-untyped-def]
        with self._cond:
            self._short_waiting += short
            while self._busy or (not short and self._short_waiting):
                self._cond.wait()
            self._short_waiting -= short
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()



CONNECTION_IDLE_SECONDS = 30.0
"""A connection that sends nothing for this long (before a request, between two, or in the
middle of one) or does not take its reply for this long is closed, and its thread ends:
a client that opens connections and goes silent (or half-closes them) must not hold a
thread each for ever. Clients connect per call and send at once, so none waits this long."""


class _Handler(socketserver.StreamRequestHandler):
    def setup(self) -> None:
        self.timeout = CONNECTION_IDLE_SECONDS  # read when the connection opens
        super().setup()  # sets the socket's timeout from self.timeout

    def handle(self) -> None:
        try:
            self._serve()
        except (TimeoutError, ConnectionError) as exc:  # idle or gone: close it
            log.info("connection closed: %s", type(exc).__name__)

    def _serve(self) -> None:
        state: _Server = self.server  # type: ignore[assignment]
        while True:
            line = self.rfile.readline(MAX_REQUEST_BYTES + 1)
            if not line:
                return
            state.last_request = time.monotonic()
            try:
                if len(line) > MAX_REQUEST_BYTES or not line.endswith(b"\n"):
                    raise ValueError("request too large or not newline-terminated")
                reply = state.answer(json.loads(line))
            except Exception as exc:  # one bad request must not kill the server
                reply = {"ok": False, "error": " ".join(f"{type(exc).__name__}: {exc}".split())}
                log.error("request failed: %s", reply["error"])
            self.wfile.write(json.dumps(reply).encode() + b"\n")
            self.wfile.flush()
            state.last_request = time.monotonic()


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, socket_path: Path, embedder: Embedder) -> None:
        self.embedder = embedder
        self.matrices = MatrixCache()
        self.spaces = SpaceMatrices()
        self.lock = _QueriesFirst()  # tokenizers and torch modules are not thread-safe
        self.last_request = time.monotonic()
        super().__init__(str(socket_path), _Handler)

    def answer(self, request: dict) -> dict:
        op, model = request.get("op"), self.embedder.name
        if op == "ping":
            return {"ok": True, "model": model, "dim": self.embedder.dim, "pid": os.getpid()}
        if op == "nearest":  # no model lock: the matrix is numpy's, not the model's
            return embed_nearest.answer(request, model, self.matrices)
        if op == "nearest_space":  # a PostgreSQL space's matrix, kept as wiki serve keeps it
            return self.spaces.answer(request, model)
        if op != "encode":
            raise ValueError(f"unknown op {op!r}")
        if request.get("model") != model:
            raise ValueError(f"this server serves {model!r}, not {request.get('model')!r}")
        texts = request.get("texts")
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise ValueError("texts must be a list of strings")
        import numpy as np

        with self.lock.hold(short=len(texts) <= SHORT):
            vectors = np.ascontiguousarray(self.embedder.encode(texts), dtype="<f4")
        return {"ok": True, "model": model, "dim": int(vectors.shape[1]), "n": len(texts),
                "vectors": base64.b64encode(vectors.tobytes()).decode("ascii")}


def serve(model_name: str, socket_path: Path, idle_seconds: float = 900,
          spec: EmbedderSpec | None = None) -> None:
    """Load ``model_name`` once (on ``spec``'s runtime) and serve it on ``socket_path``
    until ``idle_seconds`` pass without a request, or SIGTERM/SIGINT arrives; then remove
    the socket file. A stale socket file is replaced. Raises
    :class:`EmbedderUnavailableError` if the model cannot load and ``RuntimeError`` if
    another server already listens on ``socket_path``."""
    socket_path = Path(socket_path)
    embedder = embedders.load(model_name, spec or EmbedderSpec(model=model_name))
    embedder.encode(["warm up"])  # first call pays for lazy initialisation
    if (other := _try_connect(socket_path, 1.0)) is not None:
        other.close()
        raise RuntimeError(f"a server already listens on {socket_path}")
    with contextlib.suppress(FileNotFoundError):
        socket_path.unlink()
    server = _Server(socket_path, embedder)
    inode = os.stat(socket_path).st_ino
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, args=(0.2,), daemon=True)
    thread.start()
    log.info("serving %s on %s (pid %d, idle %gs)", model_name, socket_path, os.getpid(),
             idle_seconds)
    try:
        while not stop.wait(min(1.0, max(idle_seconds / 4, 0.05))):
            server.spaces.sweep()
            if not server.lock.locked() and \
                    time.monotonic() - server.last_request > idle_seconds:
                log.info("idle for %gs, exiting", idle_seconds)
                break
        else:
            log.info("signalled, exiting")
    finally:
        server.shutdown()
        server.server_close()
        with contextlib.suppress(OSError):
            if os.stat(socket_path).st_ino == inode:  # not a successor's socket
                socket_path.unlink()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m indexes.embedding.embed_server --model NAME --socket PATH [--idle SECONDS]``."""
    import argparse  # only the server process parses arguments; clients import this module

    parser = argparse.ArgumentParser(prog="python -m indexes.embedding.embed_server")
    parser.add_argument("--model", default=embedders.DEFAULT_MODEL)
    parser.add_argument("--runtime", default="auto")
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--idle", type=float, default=900.0)
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(
        "%(asctime)s embed_server[%(process)d] %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no bars in the log file
    try:
        serve(args.model, args.socket, args.idle,
              EmbedderSpec(model=args.model, runtime=args.runtime, server="off"))
    except Exception as exc:
        log.error("stopped: %s", " ".join(str(exc).split()))
        return 1
    log.info("stopped")
    return 0


