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
from pathlib import Path

from indexes.sqlite.faults import DatabaseError, OperationalError
from indexes.sqlite.llm_cache import SCHEMA_VERSION, ResponseTable
from wiki.store.disk_faults import storage_cause
from wiki.store.notices import notify

__all__ = ["FILE_NAME", "SCHEMA_VERSION", "ResponseCache", "cache_key"]
FILE_NAME = "llm-cache.sqlite"


def cache_key(kind: str, payload: object) -> str:
    """``kind:`` + the sha256 of ``payload`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"{kind}:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


class ResponseCache:
    """A persistent ``key -> JSON value`` map. ``path=None`` keeps it in memory (one
    process). Safe for concurrent processes (WAL, busy timeout, last writer wins); the
    file and its statements are :class:`indexes.sqlite.llm_cache.ResponseTable`'s."""

    def __init__(self, path: Path | str | None):
        self.path = Path(path) if path is not None else None
        self.table = self._open()

    def _open(self) -> ResponseTable:
        if self.path is None:
            return ResponseTable(None)
        try:
            return ResponseTable.open_replacing(self.path)
        except (OSError, DatabaseError) as exc:  # a read-only or full git dir
            cause = storage_cause(exc)
            if cause is None:
                raise
            notify(f"note: the LLM response cache {self.path} cannot be written ({cause}); "
                   "caching in memory for this process")
            self.path = None
            return ResponseTable(None)

    def get(self, key: str) -> object | None:
        """The stored value of ``key``, or ``None``."""
        text = self.table.get(key)
        return json.loads(text) if text is not None else None

    def put(self, key: str, model: str, value: object) -> None:
        """Store ``value`` (JSON-serialisable) under ``key``; a disk that refuses it (full,
        read-only) loses only this cache entry, said in a notice."""
        try:
            self.table.put(key, model, json.dumps(value, ensure_ascii=False))
        except OperationalError as exc:
            cause = storage_cause(exc)
            if cause is None:
                raise
            notify(f"note: the LLM response cache {self.path} cannot be written ({cause}); "
                   "responses are not cached")

    def __len__(self) -> int:
        return self.table.count()

    def clear(self) -> None:
        """Forget every response."""
        self.table.clear()

    def close(self) -> None:
        """Close the database."""
        self.table.close()
