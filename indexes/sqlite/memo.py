"""Values derived from the database, kept while the database is unchanged.

A search at 100,000 entries asks again and again what only a write can change: which
rowids a filter keeps (5 ms for the default filter, read from the covering index), how
many documents hold a word (2-3 ms for a common one, asked by the BM25 leg and again by
the evidence-gap coverage). :class:`StateMemo` keeps such answers and drops them all as
soon as the file changes: ``PRAGMA data_version`` changes when another connection commits
(https://sqlite.org/pragma.html#pragma_data_version), ``total_changes`` when this one
writes a row.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")

LIMIT = 4096
"""Values kept at most; the memo starts afresh when it is full."""


class StateMemo:
    """``key -> value`` valid for one state of the database behind ``conn``."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._state: tuple[int, int] | None = None
        self._values: dict[Hashable, object] = {}
        self._lock = threading.Lock()

    def state(self) -> tuple[int, int]:
        """``(data_version, total_changes)``: equal only while nothing was written."""
        return (self.conn.execute("PRAGMA data_version").fetchone()[0],
                self.conn.total_changes)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept for ``key`` in the database's present state, else
        ``compute()`` (kept for next time). The state is read before ``compute`` runs, so
        a value computed across a write is dropped at the next call. Inside a transaction
        nothing is kept or served: a rollback lowers neither counter."""
        if self.conn.in_transaction:
            return compute()
        state = self.state()
        with self._lock:
            if state != self._state or len(self._values) >= LIMIT:
                self._state, self._values = state, {}
            if key in self._values:
                return self._values[key]  # type: ignore[return-value]
        value = compute()
        with self._lock:
            if self._state == state:
                self._values[key] = value
        return value

    def forget(self, kind: str) -> None:
        """Drop the values whose key starts with ``kind`` (a benchmark timing a new
        question's words forgets ``"df"``)."""
        with self._lock:
            self._values = {k: v for k, v in self._values.items()
                            if not (isinstance(k, tuple) and k and k[0] == kind)}
