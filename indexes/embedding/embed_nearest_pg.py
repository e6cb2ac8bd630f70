"""The embedding server's ``nearest_space`` request: rank a PostgreSQL space's chunk
vectors for a ``wiki search`` command, as ``wiki serve`` ranks them.

A one-shot command on PostgreSQL ranked its vector leg in the database: HNSW without a
narrow filter, an exact scan of the reachable chunks with one (a scope of 10,000 of
100,000 entries: a scan of the space's chunk rows and one embedding fetch per chunk,
~120 ms, against ~5 ms for the same leg over a kept matrix; docs/decisions.md, "The
vector leg of a one-shot command on PostgreSQL"). The embedding server, which encodes
the command's query anyway and outlives it, keeps the space's chunk matrix as a
long-running ``wiki serve`` keeps it (:meth:`indexes.pg.vectors.PgVectorStore.matrix`,
per space stamp) and ranks there (:func:`indexes.sqlite.vectors.nearest`: exact, sign-bit
candidates from 50,000 chunks, as ``wiki serve`` ranks), the
filter's documents kept per condition and ``wiki_stats.version``
(:meth:`~indexes.pg.vectors.PgVectorStore.row_filter`).

The server connects where the client did: the client sends its connection's resolved
parameters (``conninfo``: libpq's values for this connection, environment variables and
password file included, :func:`indexes.pg.vectors.connection_address`), over the
server's socket, which only its user can reach. It answers only for the space ``stamp``
the client read (a nonce renewed by every write of the space's vectors, so another
database's space of the same name never matches). Without a kept matrix at that stamp
it says ``"hits": null`` at once and reads the matrix in a background thread; the client
ranks in the database meanwhile, so a command never waits for the read (seconds at
100,000 entries). The server opens a database as a reader (the schema's version
checked, never prepared: no lock a writer holds is waited for), reads one matrix per
space at a time whatever stamps it is asked about (two per database at most, each
cancelled after :data:`READ_TIMEOUT_S`), keeps the :data:`KEEP` used last,
lets go of a database's idle connections after a minute, and names no password in an
error it sends or logs.

Request: ``{"op": "nearest_space", "model": m, "conninfo": s, "space": s, "stamp": s,
"vector": base64(float32 LE), "limit": n, "filters": {Filters' fields} | null}``
(:func:`filters_request`); reply: ``{"ok": true, "hits": [[key, cosine], ...] | null}``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import asdict, fields
from datetime import datetime

from indexes.embedding.embed_nearest import checked_query
from indexes.retrieval.filters import Filters

log = logging.getLogger("wiki.embed_server")

KEEP = 4
"""Spaces whose matrices the server keeps, the least recently used let go first (each
``chunks x dim x 4`` bytes: 232 MB at 151,449 chunks; a throwaway ``--as-of`` space is
never asked about)."""
READERS = 2
"""Matrices read at once from one database (each read holds a connection and builds a
whole matrix); reads stuck on one database never hold up another's."""
READ_TIMEOUT_S = 120
"""A matrix read (statements and lock waits) that takes longer is cancelled, so one held
up by a lock frees its place."""
CONNECTIONS = 2
"""Idle connections the server keeps per database (:mod:`indexes.pg.connections`)."""
MAX_CONNINFO = 4096
"""Longest ``conninfo`` accepted (characters)."""
APPLICATION_NAME = "wiki embedding server"
"""The ``application_name`` of the server's connections (``pg_stat_activity`` names them)."""


def filters_request(filters: Filters | None) -> dict | None:
    """``filters`` as the request's ``"filters"`` field (``None`` stays ``None``: the
    default filter)."""
    return None if filters is None else asdict(filters)


def filters_from_request(field) -> Filters | None:
    """The :class:`Filters` a request's ``"filters"`` field names. Raises ``ValueError``
    naming the field when one is malformed (an unknown field, a wrong type, a
    ``valid_at`` that is not ``YYYY-MM-DDTHH:MM:SSZ``, a lifetime that is not
    ``[type, days]``)."""
    if field is None:
        return None
    if not isinstance(field, dict):
        raise ValueError("filters must be null or an object")
    known = {f.name for f in fields(Filters)}
    if unknown := sorted(set(field) - known):
        raise ValueError(f"filters: unknown field {unknown[0]!r}")

    def text(name: str) -> str | None:
        value = field.get(name)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"filters.{name} must be a string or null")
        return value

    def texts(name: str) -> tuple[str, ...]:
        value = field.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"filters.{name} must be a list of strings")
        return tuple(value)

    if "statuses" not in field:
        statuses: tuple[str, ...] | None = Filters().statuses
    else:
        statuses = None if field["statuses"] is None else texts("statuses")
    valid_at = text("valid_at")
    if valid_at is not None:
        try:
            datetime.strptime(valid_at, "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise ValueError(f"filters.valid_at {valid_at!r} is not YYYY-MM-DDTHH:MM:SSZ") \
                from None
    lifetimes = field.get("lifetimes", [])
    if not isinstance(lifetimes, list) or not all(
            isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
            and type(p[1]) in (int, float) and p[1] == p[1] and abs(p[1]) < 1e9
            for p in lifetimes):
        raise ValueError("filters.lifetimes must be a list of [type, days]")
    return Filters(statuses=statuses, category=text("category"), tags=texts("tags"),
                   scope=text("scope"), valid_at=valid_at,
                   lifetimes=tuple((p[0], float(p[1])) for p in lifetimes),
                   categories=texts("categories"))


class SpaceUnreadable(Exception):
    """The database of a ``nearest_space`` request could not be read; the message names
    why, with every password of the request's ``conninfo`` replaced by ``***``."""


class SpaceMatrices:
    """What the server keeps for ``nearest_space`` requests: the matrices themselves live
    in :data:`indexes.sqlite.vectors.SHARED_MATRICES` (keyed by connection, space and
    model, as ``wiki serve`` keeps them; the :data:`KEEP` used last), and this holds the
    reads under way: one per space at a time whatever stamps it is asked about (a writer
    moving the stamp makes no pile of reads), at most :data:`READERS` at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: set[tuple[str, str, str]] = set()
        self._prepared = False

    def _prepare(self) -> None:
        from indexes.pg.connections import KEPT
        from indexes.sqlite.vectors import SHARED_MATRICES

        with self._lock:
            if not self._prepared:
                KEPT.keep(CONNECTIONS)
                SHARED_MATRICES.FILES = KEEP
                self._prepared = True

    def sweep(self) -> None:
        """Close the server's connections idle longer than
        :data:`indexes.pg.connections.MAX_IDLE_S` (the server calls this every second, so
        a database no longer asked about is let go)."""
        if self._prepared:
            from indexes.pg.connections import KEPT

            KEPT.sweep()

    def answer(self, request: dict, model: str) -> dict:
        """The reply to a ``nearest_space`` request (see the module) for the server of
        ``model``. Raises ``ValueError`` for a malformed request and
        :class:`SpaceUnreadable` when the database cannot be read (the server turns
        either into ``{"ok": false}``)."""
        query, limit = checked_query(request, model)
        conninfo, space, stamp = (request.get(k) for k in ("conninfo", "space", "stamp"))
        if not isinstance(conninfo, str) or not conninfo or len(conninfo) > MAX_CONNINFO \
                or "\0" in conninfo:
            raise ValueError("conninfo must be a connection string")
        if not isinstance(space, str) or "\0" in space:
            raise ValueError("space must be a string")
        if not isinstance(stamp, str) or not stamp:
            raise ValueError("stamp must be a string")
        filters = filters_from_request(request.get("filters"))
        self._prepare()
        try:
            from psycopg.conninfo import make_conninfo

            conninfo = make_conninfo(conninfo, application_name=APPLICATION_NAME)
            return self._rank(conninfo, space, stamp, model, query, limit, filters)
        except ValueError:
            raise
        except Exception as exc:  # the database's, or a connection string psycopg refused
            raise SpaceUnreadable(_said(exc, conninfo)) from None

    def _rank(self, conninfo: str, space: str, stamp: str, model: str, query, limit: int,
              filters: Filters | None) -> dict:
        from indexes.pg.engine import PgIndex
        from indexes.pg.filters import mask_filter, pg_sql
        from indexes.sqlite.vectors import nearest

        with PgIndex(conninfo, space, reader=True) as index:
            if index.vectors.stamp() != stamp:
                return {"ok": True, "hits": None}  # changed since the client read it
            matrix = index.vectors.current(model, stamp=stamp)
            if matrix is None:
                self._read_later(conninfo, space, model, int(query.size))
                return {"ok": True, "hits": None}
            if matrix.vectors.shape[1] != query.size:
                raise ValueError(f"the stored vectors have {matrix.vectors.shape[1]} "
                                 f"dimensions, the query {query.size}")
            where, params = pg_sql(filters)
            rows = index.vectors.row_filter(matrix, where, params, mask_filter(filters))
            found = nearest(matrix, query, rows=rows, limit=limit)
        return {"ok": True, "hits": [[key, score] for key, score in found]}

    def _read_later(self, conninfo: str, space: str, model: str, dim: int) -> None:
        key = (conninfo, space, model)
        with self._lock:
            if key in self._reading or \
                    sum(other[0] == conninfo for other in self._reading) >= READERS:
                return  # asked again once that read is done
            self._reading.add(key)
        threading.Thread(target=self._read, args=(key, dim), daemon=True,
                         name="read space matrix").start()

    def _read(self, key: tuple[str, str, str], dim: int) -> None:
        from indexes.pg.engine import PgIndex

        conninfo, space, model = key
        try:
            with PgIndex(conninfo, space, reader=True,
                         statement_timeout_s=READ_TIMEOUT_S) as index:
                index.vectors.matrix(model, dim)  # kept for its stamp, as serve keeps it
        except Exception as exc:  # a failed read only leaves ranking to the database
            log.warning("could not read the chunk vectors of space %r: %s", space,
                        _said(exc, conninfo))
        finally:
            with self._lock:
                self._reading.discard(key)


def _said(error: BaseException, conninfo: str) -> str:
    """``error``'s first line, named by its type, without any password of ``conninfo``."""
    from indexes.backend import scrubbed

    lines = str(error).strip().splitlines()
    return scrubbed(f"{type(error).__name__}: {lines[0] if lines else ''}", conninfo)
