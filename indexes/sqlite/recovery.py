"""A damaged SQLite index file found and set aside: :func:`open_checked` opens a file
and checks it (``PRAGMA quick_check(1)`` and the schema's names, skipped while its
``.checked`` mark says it passed and it has not changed since:
:mod:`indexes.sqlite.checkmark`), raising :class:`Damaged`; :func:`set_aside` renames a
damaged file out of the way. What a damaged or unwritable file means to a user (notices,
temporary copies, errors) is :mod:`wiki.store.derived_db`'s business."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from indexes.errors import IndexSchemaError
from indexes.sqlite import checkmark
from indexes.sqlite.dbfile import quick_check, schema_names
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.faults import DatabaseError, is_damage, sqlite_storage_cause


def is_damaged(error: BaseException) -> bool:
    """True when ``error`` says the file is not a database or is malformed (and is not the
    disk refusing a write)."""
    return is_damage(error) and sqlite_storage_cause(error) is None


class Damaged(Exception):
    """The database at ``path`` is damaged; ``reason`` in SQLite's words."""

    def __init__(self, reason: str):
        reason = " ".join(reason.replace("***", "").split())  # quick_check's lines, as one
        super().__init__(reason)
        self.reason = reason


def open_checked(path: Path | str) -> SearchIndex:
    """Open ``path`` and check it; raises :class:`Damaged` (the connection closed) when
    it is not a sound database of our schema, and storage faults unchanged. A file that
    passed the check and has not changed since (:mod:`indexes.sqlite.checkmark`) is not
    checked again."""
    before = checkmark.stamp(Path(path))
    try:
        index = SearchIndex(path)
    except IndexSchemaError as exc:
        raise Damaged(str(exc).split(": ", 1)[-1]) from exc
    except DatabaseError as exc:
        if is_damaged(exc):
            raise Damaged(str(exc)) from exc
        raise
    if checkmark.SOUND in checkmark.facts(Path(path), before):
        return index
    try:
        problem = quick_check(index)
        if problem != "ok":
            raise Damaged(problem)
        missing = sorted(_schema_names() - schema_names(index))
        if missing:
            raise Damaged(f"{', '.join(missing)} missing from the schema")
    except DatabaseError as exc:
        index.close()
        if is_damaged(exc):
            raise Damaged(str(exc)) from exc
        raise
    except Damaged:
        index.close()
        raise
    checkmark.record(Path(path), checkmark.SOUND, before)
    return index


_SCHEMA: frozenset[str] = frozenset()


def _schema_names() -> frozenset[str]:
    """The tables, indexes and triggers a new database of this schema has (read once
    from an empty one in memory): a database at the same version lacking one of them was
    altered by hand or damaged."""
    global _SCHEMA
    if not _SCHEMA:
        fresh = SearchIndex(":memory:")
        try:
            _SCHEMA = schema_names(fresh)
        finally:
            fresh.close()
    return _SCHEMA


def set_aside(path: Path) -> Path:
    """Rename ``path`` (and its ``-wal`` and ``-shm``) to ``<name>.corrupt-<UTC time>``;
    returns the new path. A file already gone (set aside by another process) is fine."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    kept = path.with_name(f"{path.name}.corrupt-{stamp}")
    number = 1
    while kept.exists():
        number += 1
        kept = path.with_name(f"{path.name}.corrupt-{stamp}-{number}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(str(path) + suffix, str(kept) + suffix)
        except FileNotFoundError:
            continue
    return kept
