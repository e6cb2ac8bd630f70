"""The LLM response cache: a small SQLite file in the derived state
(``<git common dir>/wiki/llm-cache.sqlite``), disposable like the search index.

Keys are sha256 digests of a canonical JSON payload; the caller decides what goes in it:
the client puts the model, the messages and every parameter that changes the answer (so a
key is the prompt + the model), the index walk puts the question, the branch commit, the
model and its settings. Values are JSON. A file that is not a readable cache is replaced.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

from wiki.store.storage import notify, storage_cause

SCHEMA_VERSION = 1
FILE_NAME = "llm-cache.sqlite"


def cache_key(kind: str, payload: object) -> str:
    """``kind:`` + the sha256 of ``payload`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{kind}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


class ResponseCache:
    """A persistent ``key -> JSON value`` map. ``path=None`` keeps it in memory (one
    process). Safe for concurrent processes (WAL, busy timeout, last writer wins)."""

    def __init__(self, path: Path | str | None):
        self.path = Path(path) if path is not None else None
        self.conn = self._open()

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            return self._schema(sqlite3.connect(":memory:", check_same_thread=False))
        try:
            return self._open_file(self.path)
        except (OSError, sqlite3.DatabaseError) as exc:  # a read-only or full git dir
            cause = storage_cause(exc)
            if cause is None:
                raise
            notify(f"note: the LLM response cache {self.path} cannot be written ({cause}); "
                   "caching in memory for this process")
            self.path = None
            return self._schema(sqlite3.connect(":memory:", check_same_thread=False))

    @classmethod
    def _open_file(cls, path: Path) -> sqlite3.Connection:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return cls._schema(sqlite3.connect(path, timeout=30, check_same_thread=False))
        except sqlite3.DatabaseError as exc:  # not our file, or damaged: it is only a cache
            if storage_cause(exc):
                raise
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
            return cls._schema(sqlite3.connect(path, timeout=30, check_same_thread=False))

    @staticmethod
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

    def get(self, key: str) -> object | None:
        """The stored value of ``key``, or ``None``."""
        row = self.conn.execute("SELECT value FROM responses WHERE key = ?",
                                (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, model: str, value: object) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``; a disk that refuses it (full,
        read-only) loses only this cache entry, said in a notice."""
        try:
            self.conn.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                              (key, model, time.time(), json.dumps(value, ensure_ascii=False)))
            self.conn.commit()
        except sqlite3.OperationalError as exc:
            cause = storage_cause(exc)
            if cause is None:
                raise
            if self.conn.in_transaction:
                self.conn.rollback()
            notify(f"note: the LLM response cache {self.path} cannot be written ({cause}); "
                   "responses are not cached")

    def __len__(self) -> int:
        return self.conn.execute("SELECT count(*) FROM responses").fetchone()[0]

    def clear(self) -> None:
        """Forget every response."""
        self.conn.execute("DELETE FROM responses")
        self.conn.commit()

    def close(self) -> None:
        """Close the database."""
        self.conn.close()
