"""Connections to an index database kept open between the calls of a long-running process.

A command opens one :class:`indexes.pg.engine.PgIndex` and exits. ``wiki serve`` opened a
new connection for every call: PostgreSQL forks a backend for each (authentication, then a
cold catalog cache for the first statements) and the connection's prepared statements
were lost with it. Measured on the handbook with two replicas and 16 clients (2 cores):
see docs/decisions.md, "PostgreSQL under wiki serve".

Once :meth:`KeptConnections.keep` is called (``wiki serve`` does), a closed index hands its
connection back instead of closing it, and the next open takes the most recently returned
one. A connection is kept only when it is open and idle (no transaction left open, none
failed); one idle longer than :data:`MAX_IDLE_S` is closed (to any URL, on every take and
give back, and by :meth:`KeptConnections.sweep`); before reuse a connection must
answer an empty query within :data:`CHECK_TIMEOUT_S` (one the server dropped, or a server
gone silent, is replaced by a new connection, so the caller never waits on it). A
connection whose type adapters predate a change of its database (the ``vector`` extension
made again) is replaced too (:class:`indexes.pg.prepared.StaleConnection`). Connections
belong to the process that made them: a forked worker never takes, closes or drops its
parent's.

Not ``psycopg_pool``: its ``getconn`` waits for a background thread to connect, so an
unreachable server becomes a timeout after the wait instead of the server's own error at
once, which every command reports (``IndexUnavailableError``); what is needed here is only
a stack of idle connections.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg.pq import TransactionStatus

MAX_IDLE_S = 60.0
"""A connection idle longer than this (seconds) is closed rather than reused; the oldest
are closed first, on every take and give back."""
CHECK_TIMEOUT_S = 5.0
"""A check's round trip that has no answer within this (seconds) fails: the socket is shut
down, so the check never waits for TCP's own timeouts (minutes) on a silent network."""
MAX_KEPT = 8
"""At most this many idle connections per URL and process, whatever :meth:`keep` asks:
``wiki serve`` runs workers and replicas, each keeping its own (PostgreSQL allows 100
connections by default)."""


class KeptConnections:
    """Idle connections per database URL, at most ``size`` each (0: none kept, every
    :meth:`take` connects). Thread-safe."""

    def __init__(self) -> None:
        self.size = 0
        self._idle: dict[tuple[int, str], list[tuple[float, psycopg.Connection]]] = {}
        self._lock = threading.Lock()

    def keep(self, size: int) -> None:
        """Keep up to ``size`` (at most :data:`MAX_KEPT`) idle connections per URL from now
        on; 0 stops keeping. Kept connections over the new size are closed."""
        self.size = min(max(0, size), MAX_KEPT)
        closing = []
        with self._lock:
            for (pid, _url), idle in self._idle.items():
                while pid == os.getpid() and len(idle) > self.size:
                    closing.append(idle.pop(0)[1])
        for conn in closing:
            _close(conn)

    def take(self, url: str, connect: Callable[[str], psycopg.Connection]) -> psycopg.Connection:
        """An open, idle connection to ``url``: the most recently kept one that still
        answers, else ``connect(url)`` (which raises as it does)."""
        key = (os.getpid(), url)
        while True:
            with self._lock:
                closing = self._expired()
                idle = self._idle.get(key)
                taken = idle.pop() if idle else None
            for conn in closing:
                _close(conn)
            if taken is None:
                return connect(url)
            _since, conn = taken
            if _answers(conn):
                return conn
            _close(conn)

    def give_back(self, url: str, conn: psycopg.Connection) -> None:
        """Keep ``conn`` for a later :meth:`take` if keeping is on, it is idle and there is
        room; close it otherwise."""
        key = (os.getpid(), url)
        closing = [conn]
        if (self.size and not conn.closed
                and conn.info.transaction_status == TransactionStatus.IDLE):
            with self._lock:
                closing = self._expired()
                idle = self._idle.setdefault(key, [])
                if len(idle) < self.size:
                    idle.append((time.monotonic(), conn))
                else:
                    closing.append(conn)
        for each in closing:
            _close(each)

    def sweep(self) -> None:
        """Close this process's connections idle longer than :data:`MAX_IDLE_S`, to every
        URL (take and give back do so too; a process that may go without either for long,
        such as the embedding server, calls this now and then)."""
        with self._lock:
            closing = self._expired()
        for conn in closing:
            _close(conn)

    def _expired(self) -> list[psycopg.Connection]:
        """Take this process's connections idle longer than :data:`MAX_IDLE_S` off their
        stacks, whatever their URL (the oldest are at the bottom of each; a database no
        longer asked about is let go too); the caller closes them outside the lock."""
        now, expired = time.monotonic(), []
        for (pid, _url), idle in self._idle.items():
            while pid == os.getpid() and idle and now - idle[0][0] > MAX_IDLE_S:
                expired.append(idle.pop(0)[1])
        return expired

    def clear(self) -> None:
        """Close every kept connection of this process. Those a forked process inherited
        from its parent are left alone and kept referenced: closing one, or letting it be
        collected (libpq then says goodbye on the shared socket), would end the parent's."""
        with self._lock:
            mine = [key for key in self._idle if key[0] == os.getpid()]
            closing = [conn for key in mine for _since, conn in self._idle.pop(key)]
        for conn in closing:
            _close(conn)


def _answers(conn: psycopg.Connection) -> bool:
    """Whether a kept ``conn`` is fit to reuse: still open and idle, its socket silent (a
    server that closed it, or sent anything while it was idle, makes it readable), and an
    empty query answered within :data:`CHECK_TIMEOUT_S` (a server gone silent fails the
    check, and the caller connects anew under ``connect_timeout``, as without keeping)."""
    if conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return False
    if readable:
        return False
    watch = _WATCHDOG.watch(conn, CHECK_TIMEOUT_S)
    try:
        conn.execute("")  # an empty query: one round trip, no parsing
    except psycopg.Error:
        return False
    finally:
        _WATCHDOG.done(watch)
    return conn.info.transaction_status == TransactionStatus.IDLE


class _Watchdog:
    """One thread, started on first use, that shuts down the socket of a connection whose
    check outlived its deadline (a thread per check cost 3.5 % of a served call's CPU,
    and waking this one for every check 4.5 %: it looks every :attr:`TICK_S` instead)."""

    TICK_S = 0.25
    """How often the thread looks for late checks (a check is shut at most this late)."""

    def __init__(self) -> None:
        self._due: dict[int, tuple[float, psycopg.Connection]] = {}
        self._next = 0
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def watch(self, conn: psycopg.Connection, seconds: float) -> int:
        """Shut ``conn`` down unless :meth:`done` is called within ``seconds``."""
        with self._wake:
            if self._thread is None or not self._thread.is_alive():  # also after a fork
                self._thread = threading.Thread(target=self._run, name="wiki-pg-watchdog",
                                                daemon=True)
                self._thread.start()
            self._next += 1
            self._due[self._next] = (time.monotonic() + seconds, conn)
            return self._next  # no wake-up: the thread looks every TICK_S

    def done(self, watch: int) -> None:
        """The check ``watch`` finished in time."""
        with self._wake:
            self._due.pop(watch, None)

    def _run(self) -> None:
        while True:
            with self._wake:
                now = time.monotonic()
                late = [w for w, (due, _) in self._due.items() if due <= now]
                shut = [self._due.pop(w)[1] for w in late]
                if not shut:
                    self._wake.wait(self.TICK_S)
            for conn in shut:
                _shut(conn)


_WATCHDOG = _Watchdog()


def _shut(conn: psycopg.Connection) -> None:
    """End a silent connection's socket, so the round trip waiting on it fails at once."""
    with contextlib.suppress(OSError, ValueError, psycopg.Error):
        socket.socket(fileno=os.dup(conn.fileno())).shutdown(socket.SHUT_RDWR)


def _close(conn: psycopg.Connection) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.close()


KEPT = KeptConnections()
"""The process's kept connections (off until ``wiki serve`` calls :meth:`keep`)."""
