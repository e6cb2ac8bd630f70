"""Checks of the derived database that an unchanged file need not repeat: a small mark
beside it (``<name>.checked``) records which checks passed for the file as it was then.

A fact holds while the file is the same one, byte for byte as far as the file system
says: the database and its ``-wal`` keep their inode, size and modification time
(:func:`stamp`). A fact is recorded only when the file did not change during the check
and has been quiet for :data:`QUIET_NS` (a write in the same clock tick as the check
would keep the modification time), so any later write, by this program or another, makes
the next open check again. A mark that cannot be read or written is no mark: the checks
run as if there were none. Facts used (:mod:`wiki.store.derived_db`,
:mod:`wiki.answering.embedding`): :data:`SOUND` (``PRAGMA quick_check`` and the schema
passed) and ``vectors <model>:<dim>`` (:func:`vectors_fact`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

SOUND = "sound"
SUFFIX = ".checked"
QUIET_NS = 1_000_000_000
"""How long (ns) the database and its ``-wal`` must have been unmodified before a fact
about them is recorded."""


def vectors_fact(model: str, dim: int) -> str:
    """The fact that every chunk has a readable ``dim``-number vector of ``model`` and the
    index records that model in use (answer sentences are embedded by the answers that
    read them, so they are not part of it)."""
    return f"vectors {model}:{dim}"


def mark_path(path: Path) -> Path:
    """Where the mark of the database at ``path`` lives."""
    return path.with_name(path.name + SUFFIX)


def _file(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def stamp(path: Path) -> str | None:
    """The identity of the database at ``path`` as the file system sees it now
    (``inode:size:mtime_ns`` of the file and ``size:mtime_ns`` of its ``-wal``, an
    absent or empty ``-wal`` being ``0:0``); ``None`` when there is no such file (or an
    in-memory database)."""
    db = None if str(path) == ":memory:" else _file(path)
    if db is None or not path.is_file():
        return None
    wal = _file(Path(str(path) + "-wal"))
    wal_part = f"{wal.st_size}:{wal.st_mtime_ns}" if wal is not None and wal.st_size else "0:0"
    return f"{db.st_ino}:{db.st_size}:{db.st_mtime_ns}|{wal_part}"


def _read(path: Path) -> tuple[str, frozenset[str]]:
    try:
        data = json.loads(mark_path(path).read_text(encoding="utf-8"))
        return str(data["stamp"]), frozenset(str(f) for f in data["facts"])
    except (OSError, ValueError, KeyError, TypeError):
        return "", frozenset()


def facts(path: Path, current: str | None) -> frozenset[str]:
    """The facts recorded for the database at ``path`` when its stamp is ``current``
    (taken by the caller with :func:`stamp` before it opened the file); empty when the
    file changed since, or there is no readable mark."""
    if current is None:
        return frozenset()
    recorded, known = _read(path)
    return known if recorded == current else frozenset()


def _quiet(path: Path, now_ns: int) -> bool:
    """Neither the database nor its ``-wal`` was modified in the last :data:`QUIET_NS`."""
    for name in (path, Path(str(path) + "-wal")):
        info = _file(name)
        if info is not None and info.st_size and now_ns - info.st_mtime_ns < QUIET_NS:
            return False
    return True


def record(path: Path, fact: str, since: str | None) -> bool:
    """Record ``fact`` for the database at ``path`` if its stamp is still ``since`` (the
    one taken before the check that established it) and the file is quiet (see the
    module); keeps the facts already recorded for that stamp. Written atomically (a
    temporary file renamed into place); a file system that refuses the write records
    nothing. Returns whether the fact was recorded."""
    if since is None or stamp(path) != since or not _quiet(path, time.time_ns()):
        return False
    recorded, known = _read(path)
    known = (known if recorded == since else frozenset()) | {fact}
    target = mark_path(path)
    temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        temp.write_text(json.dumps({"stamp": since, "facts": sorted(known)}), encoding="utf-8")
        os.replace(temp, target)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        return False
    return True
