"""The LLM response cache's table: ``key -> JSON text`` in a small SQLite file (or in
memory), with the model and the time each response was stored. What goes into a key, and
what happens when the disk refuses, is :mod:`wiki.llm.cache`'s business; this module
owns the file's schema and statements."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from indexes.sqlite.faults import sqlite_storage_cause

SCHEMA_VERSION = 1


class ResponseTable:
    """The ``responses`` table of the cache file at ``path`` (``None``: in memory, this
    process only), created at open; a file written by another schema version loses its
    table. Safe for concurrent processes (WAL, a 30 s busy timeout, last writer wins).

    Raises ``sqlite3.DatabaseError`` (:data:`indexes.sqlite.faults.DatabaseError`) or ``OSError``
    when the file cannot be opened; see :meth:`open_replacing`."""

    def __init__(self, path: Path | None):
        conn = (sqlite3.connect(":memory:", check_same_thread=False) if path is None
                else sqlite3.connect(path, timeout=30, check_same_thread=False))
        self.conn = _schema(conn)

    @classmethod
    def open_replacing(cls, path: Path) -> ResponseTable:
        """The table in the file at ``path`` (its folder created); a file that is not a
        readable cache (not our file, damaged) is deleted with its ``-wal``/``-shm`` and
        made anew: it is only a cache. A storage fault (read-only, full) is raised."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls(path)
        except sqlite3.DatabaseError as exc:
            if sqlite_storage_cause(exc):
                raise
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            return cls(path)

    def get(self, key: str) -> str | None:
        """The JSON text stored under ``key``, or ``None``."""
        row = self.conn.execute("SELECT value FROM responses WHERE key = ?",
                                (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, value: str) -> None:
        """Store the JSON text ``value`` under ``key`` (replacing any), stamped now.
        Raises ``sqlite3.OperationalError`` when the disk refuses; the write is rolled
        back first."""
        try:
            self.conn.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                              (key, model, time.time(), value))
            self.conn.commit()
        except sqlite3.OperationalError:
            if self.conn.in_transaction:
                self.conn.rollback()
            raise

    def count(self) -> int:
        """How many responses are stored."""
        return self.conn.execute("SELECT count(*) FROM responses").fetchone()[0]

    def clear(self) -> None:
        """Delete every response."""
        self.conn.execute("DELETE FROM responses")
        self.conn.commit()

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


def _schema(conn: sqlite3.Connection) -> sqlite3.Connection:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version not in (0, SCHEMA_VERSION):
        conn.execute("DROP TABLE IF EXISTS responses")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                 "model TEXT NOT NULL, created REAL NOT NULL, value TEXT NOT NULL)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.commit()
    return conn
