"""The gate in front of ``wiki serve``: the bearer token, and bounds on every request.

Every path but ``/health`` needs ``Authorization: Bearer <token>`` matching a configured
token's hash (else 401). The body is read here, before any route sees it: a declared or
actual size over ``max_body_bytes`` is answered 413, a body that does not arrive within
``body_timeout`` seconds 408. A call waits for its repository's turn without a worker
thread (:class:`Turns`, :func:`in_turn`): reads side by side, writes one at a time; the
listening socket is bound before anything loads (:func:`listening_socket`). Errors are
JSON: ``{"error", "kind", "exit_code"}``, the shape an MCP tool error carries and the CLI's
exit code for the same failure.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from typing import Any

import anyio
from starlette.responses import JSONResponse

from wiki.serve.config import Limits, ServeConfig
from wiki_cli.tool_calls import WRITES

READERS = 4
"""Read calls of one repository that run at once in ``wiki serve``; more wait for a slot
without a thread. Four keep two cores busy while one call waits on SQLite, git or the
model (evals/results/bench-serve.md), and bound the threads and memory a burst can take."""

OPEN_PATHS = ("/health",)
"""Paths served without a token (nothing in them names a repository or an entry)."""

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""Bind addresses on which only a loopback ``Host`` header is accepted (the MCP SDK's
DNS-rebinding rule, applied here to every route: REST, MCP and ``/health``)."""

_HOST_HEADER = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:\[\]]+))(?::\d{1,5})?")


def problem(status: int, message: str, kind: str, exit_code: int | None = None,
            **extra: Any) -> JSONResponse:
    """A JSON error response: one line ``error``, its ``kind`` and the CLI's exit code."""
    headers = {"WWW-Authenticate": 'Bearer realm="wiki"'} if status == 401 else None
    return JSONResponse({"error": message, "kind": kind, "exit_code": exit_code, **extra},
                        status_code=status, headers=headers)


class BodyTooLarge(Exception):
    """The body passed the configured size."""


class Guard:
    """ASGI middleware: authenticate (``scope["wiki.token"]``: the token's spec), then read
    the whole body within the limits and hand it on to ``app``."""

    def __init__(self, app, config: ServeConfig) -> None:
        self.app, self.config = app, config

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits: Limits = self.config.limits
        refused = foreign_host(scope, self.config.host)
        if refused is not None:
            await problem(421, f"the Host header {refused!r} is not this server's: it listens "
                          f"on {self.config.host} and answers to 127.0.0.1, localhost or [::1] "
                          "(a page in a browser cannot reach it through a name of its own)",
                          "misdirected-request")(scope, receive, send)
            return
        if scope["path"] not in OPEN_PATHS:
            token = self.config.authenticate(_bearer(scope))
            if token is None:
                await problem(401, "a valid token is needed: send 'Authorization: Bearer "
                              "<token>' (tokens are configured by the server's operator)",
                              "unauthorized")(scope, receive, send)
                return
            scope["wiki.token"] = token
        declared = _content_length(scope)
        if declared is not None and declared > limits.max_body_bytes:
            await _too_large(limits)(scope, receive, send)
            return
        try:
            with anyio.fail_after(limits.body_timeout if math.isfinite(limits.body_timeout)
                                  else None):
                body, disconnected = await _read_body(receive, limits.max_body_bytes)
        except TimeoutError:
            await problem(408, f"the request body did not arrive within "
                          f"{limits.body_timeout:g} s", "request-timeout")(scope, receive, send)
            return
        except BodyTooLarge:
            await _too_large(limits)(scope, receive, send)
            return
        if disconnected:
            return
        await self.app(scope, _replay(body, receive), send)


def foreign_host(scope, bound: str) -> str | None:
    """The request's ``Host`` header (clipped to 100 characters) when the server is bound to
    a loopback address and that header names anything but a loopback host (DNS rebinding: a
    web page's own name resolved to 127.0.0.1); ``None`` when it may pass. A server bound
    elsewhere answers any host name: its operator chose the network and puts TLS in front."""
    if bound not in LOOPBACK:
        return None
    values = [v for k, v in scope.get("headers", ()) if k == b"host"]
    raw = values[0].decode("latin-1") if len(values) == 1 else ""
    match = _HOST_HEADER.fullmatch(raw)
    name = (match["v6"] or match["name"]).lower() if match else None
    return None if name in LOOPBACK else raw[:100]


def _bearer(scope) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" else None
    return None


def _content_length(scope) -> int | None:
    for key, value in scope.get("headers", ()):
        if key == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _too_large(limits: Limits) -> JSONResponse:
    return problem(413, f"the request body is larger than {limits.max_body_bytes} bytes",
                   "payload-too-large")


async def _read_body(receive, limit: int) -> tuple[bytes, bool]:
    """The whole body (raises :class:`BodyTooLarge` past ``limit`` bytes), and whether the
    client went away before sending it."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", True
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replay(body: bytes, receive):
    """A ``receive`` that gives the body once, then waits on the real one (disconnects)."""
    sent = False

    async def replayed():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


class Turns:
    """One repository's turns in ``wiki serve``: ``read``, an ``anyio.Semaphore`` of
    :data:`READERS` slots, and ``write``, one slot for the tools in
    :data:`wiki_cli.tool_calls.WRITES`. A call waits here without a thread; in its thread
    the repository's :class:`wiki_cli.tool_calls.RepoLock` keeps a write alone."""

    def __init__(self, readers: int = READERS) -> None:
        self.read = anyio.Semaphore(readers)
        self.write = anyio.Semaphore(1)

    def of(self, tool: str):
        """The semaphore a call of ``tool`` waits on."""
        return self.write if tool in WRITES else self.read


async def in_turn(turn, work):
    """``work()`` in a worker thread once ``turn`` (an ``anyio.Semaphore``: one of a
    repository's :class:`Turns`) is had; returns its result. Waiting holds no thread, so calls
    queued behind a slow one cannot use up the workers other repositories need. A call
    cancelled (timed out) before its thread starts never runs; one cancelled while
    running keeps the turn until its thread ends, so abandoned threads never pile up."""
    state = threading.Lock()
    started = dropped = False

    def run():
        nonlocal started
        with state:
            if dropped:
                return None
            started = True
        try:
            return work()
        finally:
            with contextlib.suppress(RuntimeError):  # the server stopped meanwhile
                anyio.from_thread.run_sync(turn.release)

    await turn.acquire()
    try:
        return await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
    except BaseException:
        with state:
            if not started:
                dropped = True
                turn.release()
        raise


def listening_socket(host: str, port: int, *, shared: bool = False):
    """A TCP socket bound to ``host``:``port`` (IPv4 or IPv6, as the address is; its proto
    ``IPPROTO_TCP`` so that every accepted connection gets ``TCP_NODELAY``); ``shared``:
    with ``SO_REUSEPORT``, for a server's worker processes to bind it each. Raises
    :class:`ConfigError` naming the address when it cannot be had (in use, not this
    machine's, a port below 1024 without the right), before any model is loaded."""
    import socket

    from wiki.errors import ConfigError

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
        # sockets whose proto says TCP, and accepted sockets inherit it. With proto 0 a
        # response written in two sends waited ~40 ms for the client's delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:  # the server's workers each bind the port (wiki_cli.serve_workers)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: "
                          f"{exc.strerror or exc}") from None
    return sock
