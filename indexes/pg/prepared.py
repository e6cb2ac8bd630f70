"""What a process learns about an index database once: its schema is prepared, and the
pgvector types' ``TypeInfo`` (what ``register_vector`` fetches in four queries).

Opening a :class:`indexes.pg.engine.PgIndex` prepared the schema (an advisory lock and 19
``CREATE ... IF NOT EXISTS`` statements) and fetched the vector types on every open: 9 ms
per open on a quiet machine, and under ``wiki serve``'s parallel calls every open waited
for the schema lock. The first open in a process does both; later opens of the same URL
check with one statement (no lock) that the schema version, the ``vector`` type and the
count of the wiki's tables, indexes and triggers are the ones seen, and register the kept
type information on the new connection. A schema moved on (another release migrated it), a
recreated extension or a dropped table takes the full path again.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from pgvector.psycopg.bit import register_bit_info
from pgvector.psycopg.halfvec import register_halfvec_info
from pgvector.psycopg.sparsevec import register_sparsevec_info
from pgvector.psycopg.vector import register_vector_info
from psycopg.types import TypeInfo

CHECK = ("SELECT (SELECT max(version) FROM wiki_schema), to_regtype('vector')::oid::bigint, "
         "(SELECT count(*) FROM pg_catalog.pg_class WHERE relname LIKE 'wiki%%'), "
         "(SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgname LIKE 'wiki%%')")
"""In one statement without a lock: the schema version, the ``vector`` type's oid, and how
many of the wiki's tables, indexes and triggers exist (one dropped by hand is made again
by the full path, as every open did before)."""

_TYPES: tuple[tuple[str, Callable[[Any, TypeInfo], None]], ...] = (
    ("vector", register_vector_info), ("bit", register_bit_info),
    ("halfvec", register_halfvec_info), ("sparsevec", register_sparsevec_info))


@dataclass(frozen=True)
class _Seen:
    check: tuple
    types: tuple[tuple[Callable[[Any, TypeInfo], None], TypeInfo], ...]


class StaleConnection(Exception):
    """A kept connection whose type adapters were registered under an earlier state of its
    database (the ``vector`` type made again has a new oid, which psycopg's cached dumpers
    would keep sending): close it and open a new one."""


class PreparedDatabases:
    """Per database URL: the :data:`CHECK` row seen once the schema was prepared, and the
    vector types' information; per connection, the state its adapters were registered
    under. Thread-safe."""

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}
        self._registered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def prepare(self, conn: psycopg.Connection, url: str,
                ensure_schema: Callable[[], None]) -> None:
        """Make ``conn`` ready: the schema prepared (``ensure_schema()``, which raises as
        it does, unless this process saw this URL's schema at the same version and
        ``vector`` type) and pgvector's adapters registered (once per connection and
        state). Raises :class:`StaleConnection` for a connection registered under another
        state than the database now has, ``psycopg.Error`` from the type lookups."""
        with self._lock:
            seen = self._seen.get(url)
            registered = self._registered.get(conn)
        if seen is not None:
            try:
                check = tuple(conn.execute(CHECK).fetchone())
            except psycopg.Error:
                check = None
            if check == seen.check:
                if registered is not None and registered != seen.check:
                    raise StaleConnection(url)
                if registered is None:
                    for register, info in seen.types:
                        register(conn, info)
                    with self._lock:
                        self._registered[conn] = seen.check
                return
        if registered is not None:
            raise StaleConnection(url)
        ensure_schema()
        types = []
        for name, register in _TYPES:
            info = TypeInfo.fetch(conn, name)
            if info is not None:
                register(conn, info)
                types.append((register, info))
        check = tuple(conn.execute(CHECK).fetchone())
        with self._lock:
            self._seen[url] = _Seen(check, tuple(types))
            self._registered[conn] = check


PREPARED = PreparedDatabases()
