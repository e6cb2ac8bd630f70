"""``IndexBackend``: what the rest of the code uses of a search index, made explicit.

Two implementations, each complete behind this interface:
:class:`indexes.sqlite.engine.SearchIndex` (SQLite, one file per clone, the default) and
:class:`indexes.pg.engine.PgIndex` (PostgreSQL, many wikis in one database). Callers above
the engines are typed against ``IndexBackend`` and never ask which engine they hold (no
``getattr`` probes, no SQL on a connection: ``tests/test_layers.py``); fusion, rescoring and
the answer picker run in Python over what these methods return.
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from indexes.documents import Document, Hit
from indexes.errors import IndexesError
from indexes.retrieval.filters import Filters


def _nothing() -> None:
    return None


def resolved(query_vector):
    """``query_vector`` itself, or its value when it is a
    :class:`~concurrent.futures.Future` (waited for; its exception raised)."""
    return query_vector.result() if isinstance(query_vector, Future) else query_vector


@dataclass(frozen=True)
class CheckMark:
    """Whether a check of an index's content (a fact such as ``vectors <model>:<dim>``) is
    known to hold for the index as it is now, so the check need not run again: ``held``;
    ``record()`` notes that it passed, for the index as it was when the mark was taken
    (a no-op where the engine keeps no marks, or where the index changed meanwhile)."""

    held: bool
    record: Callable[[], Any] = _nothing


@runtime_checkable
class IndexBackend(Protocol):
    """The search index interface. ``docs``: typed row reads (:class:`indexes.sqlite.rows.DocRows`
    methods); ``vectors``: chunks and embeddings (:class:`indexes.sqlite.vectors.VectorStore`
    methods); ``weights``: the lexical column weights (title, aliases, tags, summary, body);
    ``path``: where it lives, for messages. Besides the legs: ``word_matches(word, key)``,
    ``(document frequency, found in key)`` of one query word as the engine's own full text
    matches it, and ``words_matched(words, key)`` the same of several words, in order (the
    input of :func:`indexes.retrieval.coverage.coverage`); ``hits_for(keys,
    filters)``, ``key -> (key, doc_id, title, summary, category, status)`` of the ``keys``
    passing ``filters``; ``start_vector(...)``, the vector leg begun (on another thread
    where the engine can) and the call that returns its hits, ``query_vector`` a vector or
    a :class:`~concurrent.futures.Future` of one; ``check_mark(fact)``, a
    :class:`CheckMark` (an engine without files never holds one); ``settle()``, after a
    batch of writes, brings up to date what the engine derives from the documents as a
    whole (SQLite: the BM25 postings of a large index), returning whether it rebuilt
    anything."""

    docs: Any
    vectors: Any
    memo: Any
    """Values the engine keeps between searches until the index changes; ``forget(kind)``
    drops one kind (``"df"``: the words' document frequencies)."""
    weights: tuple[float, ...]
    path: Any

    def close(self) -> None: ...
    def __enter__(self) -> IndexBackend: ...
    def __exit__(self, *exc) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...
    def get_meta(self, key: str) -> str | None: ...
    def get_metas(self, keys: Sequence[str]) -> dict[str, str]: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def content_hashes(self) -> dict[str, str]: ...
    def count(self, filters: Filters | None = None) -> int: ...
    def upsert(self, documents: Iterable[Document]) -> int: ...
    def delete(self, keys: Iterable[str]) -> int: ...
    def clear(self) -> None: ...
    def settle(self) -> bool: ...
    def get(self, key: str) -> dict | None: ...
    def extras(self, keys: Iterable[str]) -> dict[str, dict]: ...
    def keys_for_doc_id(self, doc_id: str) -> list[str]: ...
    def mark_sources(self, uris: Iterable[str], commit: str, when: str) -> list[str]: ...
    def marks(self, keys: Iterable[str] | None = None) -> dict[str, list[dict]]: ...
    def expand(self, seeds: dict[str, float], kinds: Iterable[str], *, depth: int = 2,
               decay: float = 0.5,
               allowed: set[str] | None = None) -> dict[str, tuple[float, int, str]]: ...
    def search_bm25(self, query: str, *, limit: int = 10,
                    filters: Filters | None = None) -> list[Hit]: ...
    def search_trigram(self, query: str, *, limit: int = 10, filters: Filters | None = None,
                       include_latin: bool = False) -> list[Hit]: ...
    def allowed_keys(self, filters: Filters | None) -> set[str] | None: ...
    def excluded_keys(self, filters: Filters | None) -> set[str]: ...
    def search_names(self, query: str, *, limit: int = 10,
                     filters: Filters | None = None) -> list[Hit]: ...
    def search_vector(self, query_vector, model: str, *, limit: int = 10,
                      filters: Filters | None = None) -> list[Hit]: ...
    def start_vector(self, query_vector, model: str, *, limit: int = 10,
                     filters: Filters | None = None) -> Callable[[], list[Hit]]: ...
    def search_lexical(self, query: str, *, limit: int = 10,
                       filters: Filters | None = None) -> list[Hit]: ...
    def word_matches(self, word: str, key: str | None = None) -> tuple[int, bool]: ...
    def words_matched(self, words: list[str],
                      key: str | None = None) -> list[tuple[int, bool]]: ...
    def hits_for(self, keys: list[str], filters: Filters | None) -> dict[str, tuple]: ...
    def check_mark(self, fact: str) -> CheckMark: ...


def open_backend(url: str, space: str, **options) -> IndexBackend:
    """The PostgreSQL index of ``space`` at ``url`` (``postgresql://`` or ``postgres://``).
    Raises :class:`indexes.errors.IndexUnavailableError` when it cannot be reached or the
    URL names another engine."""
    from indexes.errors import IndexUnavailableError

    if not url.startswith(("postgresql://", "postgres://")):
        raise IndexUnavailableError(f"index URL {redacted(url)!r}: only postgresql:// URLs are "
                                    "supported (unset it for the SQLite file in the git dir)")
    try:
        from indexes.pg.engine import PgIndex
    except ImportError as exc:
        raise IndexUnavailableError(f"a PostgreSQL index needs psycopg ({exc}); install "
                                    "wiki with the 'postgres' extra") from None
    return PgIndex(url, space, **options)


def keep_connections(size: int) -> None:
    """For a long-running process (``wiki serve``): keep up to ``size`` idle connections
    per index database URL between opens instead of connecting for every call
    (PostgreSQL: :mod:`indexes.pg.connections`; the SQLite file needs none). Nothing
    happens where psycopg is not installed."""
    try:
        from indexes.pg.connections import KEPT
    except ImportError:
        return
    KEPT.keep(size)


def redacted(url: str) -> str:
    """``url`` without its password (``postgresql://user:***@host/db``, and a
    ``password=`` query parameter or libpq ``key=value`` pair, quoted or not, as
    ``password=***``), for messages."""
    if "://" not in url and _conninfo_password(url):  # libpq's key=value form, parsed
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        return make_conninfo("", **{**conninfo_to_dict(url), "password": "***"})
    url = _QUERY_PASSWORD.sub(r"\1***", url)
    head, at, tail = url.rpartition("@")
    if not at or ":" not in head.split("//", 1)[-1]:
        return url
    scheme, _, user = head.partition("//")
    return f"{scheme}//{user.split(':', 1)[0]}:***@{tail}"


_QUERY_PASSWORD = re.compile(r"((?:^|[?&\s])password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^&\s]*)",
                             re.IGNORECASE)
"""A ``password=`` parameter of a URL's query or of a libpq ``key=value`` string, whose
value may be quoted there (``password='a b\\'c'``): the name (group 1) and the value as
written (group 2)."""
_USER_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@?#:]*:(.*)@", re.IGNORECASE)


def scrubbed(message: str, url: str) -> str:
    """``message`` (a database driver's, which may quote parts of ``url``) with every
    password ``url`` holds replaced by ``***``: the URL's own, whole or in part (a driver
    may quote just the token it could not parse), and a ``password=`` parameter's."""
    found = [m[1] for m in (_USER_PASSWORD.match(url),) if m and m[1]]
    found += [_unquoted(value) for _, value in _QUERY_PASSWORD.findall(url)]
    found.append(_conninfo_password(url) or "")
    for secret in sorted({s for s in found if s}, key=len, reverse=True):
        pieces = [secret, urllib.parse.unquote(secret),
                  *(p for p in re.split(r"%[0-9A-Fa-f]{0,2}|[&\s]", secret) if len(p) >= 4)]
        for piece in pieces:  # a driver may quote the token it could not parse, decoded
            message = message.replace(piece, "***")
    return _QUERY_PASSWORD.sub(r"\1***", message)


def _conninfo_password(url: str) -> str | None:
    """The password of connection string ``url`` (a URL or libpq's ``key=value`` form) as
    libpq reads it, by psycopg's own parser (an unquoted ``key=value`` value runs to the
    next space, ``&`` and escapes included); ``None`` when it has none, cannot be parsed,
    or psycopg is not loaded (only a PostgreSQL index has such a string)."""
    if sys.modules.get("psycopg") is None:
        return None
    try:
        from psycopg.conninfo import conninfo_to_dict

        password = conninfo_to_dict(url).get("password")
    except Exception:  # noqa: BLE001 (any string a message may carry: never raise here)
        return None
    return str(password) if password else None


def _unquoted(value: str) -> str:
    """A libpq ``key=value`` string's value as libpq reads it: single quotes taken off
    (one left open runs to the end) and backslash escapes undone."""
    if value.startswith("'"):
        value = value[1:-1] if len(value) > 1 and value.endswith("'") else value[1:]
        value = re.sub(r"\\(.)", r"\1", value)
    return value


def as_index_error(error: BaseException) -> IndexesError | None:
    """The typed error for a database failure raised while a PostgreSQL index was in use
    (the server went away, the connection broke, a lock or statement timeout of the
    URL's ``options`` ran out): :class:`IndexUnavailableError` with the server's first
    line; text the database cannot hold (a NUL character in a query, a filter or an
    entry): :class:`IndexTextError`; ``None`` for anything else (a bug). psycopg is
    looked at only when it was already imported (an SQLite index never loads it)."""
    psycopg = sys.modules.get("psycopg")
    if psycopg is None or not isinstance(error, psycopg.Error):
        return None
    from indexes.errors import IndexTextError, IndexUnavailableError

    words = str(error).strip().splitlines()
    first = words[0] if words else type(error).__name__
    if isinstance(error, psycopg.DataError) and "NUL" in first:
        return IndexTextError("text with a NUL character (\\x00) cannot be searched or "
                              "stored in the PostgreSQL index: remove it")
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return IndexUnavailableError("the index database failed: " + first)
    return None
