"""Connections to an index database kept open between the calls of a long-running process.

A command opens one :class:`indexes.pg.engine.PgIndex` and exits. ``wiki serve`` opened a
new connection for every call: PostgreSQL forks a backend for each (authentication, then a
cold catalog cache for the first statements) and the connection's prepared statements
were lost with it. Measured on the handbook with two replicas and 16 clients (2 cores):
see docs/decisions.md, "PostgreSQL under wiki serve".

Once :meth:`KeptConnections.keep` is called (``wiki serve`` does), a closed index hands its
connection back instead of closing it, and the next open takes the most recently returned
one. A connection is kept only when it is open and idle (no transaction left open, none
failed); one that waited longer than :data:`MAX_IDLE_S` is closed, and one the server
dropped while it waited (a restart, ``pg_terminate_backend``) fails its check and is
replaced by a new one, so the caller never sees it. Connections belong to the process
that made them: a forked worker never takes its parent's.

Not ``psycopg_pool``: its ``getconn`` waits for a background thread to connect, so an
unreachable server becomes a timeout after the wait instead of the server's own error at
once, which every command reports (``IndexUnavailableError``); what is needed here is only
a stack of idle connections.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg.pq import TransactionStatus

MAX_IDLE_S = 60.0
"""A connection idle longer than this (seconds) is closed rather than reused."""


class KeptConnections:
    """Idle connections per database URL, at most ``size`` each (0: none kept, every
    :meth:`take` connects). Thread-safe."""

    def __init__(self) -> None:
        self.size = 0
        self._idle: dict[tuple[int, str], list[tuple[float, psycopg.Connection]]] = {}
        self._lock = threading.Lock()

    def keep(self, size: int) -> None:
        """Keep up to ``size`` idle connections per URL from now on (0 stops keeping and
        closes those kept)."""
        self.size = max(0, size)
        if not self.size:
            self.clear()

    def take(self, url: str, connect: Callable[[str], psycopg.Connection]) -> psycopg.Connection:
        """An open, idle connection to ``url``: a kept one that still answers, else
        ``connect(url)`` (which raises as it does)."""
        key = (os.getpid(), url)
        while True:
            with self._lock:
                idle = self._idle.get(key)
                if not idle:
                    break
                since, conn = idle.pop()
            if time.monotonic() - since > MAX_IDLE_S or not _answers(conn):
                _close(conn)
                continue
            return conn
        return connect(url)

    def give_back(self, url: str, conn: psycopg.Connection) -> None:
        """Keep ``conn`` for a later :meth:`take` if keeping is on, it is idle and there is
        room; close it otherwise."""
        if (self.size and not conn.closed
                and conn.info.transaction_status == TransactionStatus.IDLE):
            key = (os.getpid(), url)
            with self._lock:
                idle = self._idle.setdefault(key, [])
                if len(idle) < self.size:
                    idle.append((time.monotonic(), conn))
                    return
        _close(conn)

    def clear(self) -> None:
        """Close every kept connection of this process (and forget other processes')."""
        with self._lock:
            kept, self._idle = self._idle, {}
        for (pid, _url), idle in kept.items():
            if pid == os.getpid():
                for _since, conn in idle:
                    _close(conn)


def _answers(conn: psycopg.Connection) -> bool:
    try:
        conn.execute("")  # an empty query: one round trip, no parsing
    except psycopg.Error:
        return False
    return conn.info.transaction_status == TransactionStatus.IDLE


def _close(conn: psycopg.Connection) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.close()


KEPT = KeptConnections()
"""The process's kept connections (off until ``wiki serve`` calls :meth:`keep`)."""
