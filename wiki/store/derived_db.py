"""Opening the derived search database whatever state its disk is in (docs/decisions.md,
"Storage faults").

* **Damaged** (not a database, malformed pages, a newer schema): the file (and its
  ``-wal``/``-shm``) is set aside as ``<name>.corrupt-<UTC time>``, a new one is created
  and the caller's sync rebuilds it from the branch; a ``warning:`` notice says so.
  Damage is found at open by ``PRAGMA quick_check(1)`` (3.5 ms on a 500-entry, 5.7 MB
  index; 30 ms at 46 MB), skipped when the file has not changed since it last passed
  (:mod:`indexes.sqlite.checkmark`), and by any statement that reports it
  (:func:`wiki.store.disk_faults.is_damaged`); the check and the setting aside are the SQLite
  engine's (:mod:`indexes.sqlite.recovery`), the notices and errors are here.
* **Read-only or full** (the git dir cannot take the write): reads use a temporary copy
  for this process (a temp folder, else memory), said once in a ``note:``; writers
  (``write=True``) get :class:`wiki.errors.StorageError` instead.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from indexes.backend import IndexBackend
from indexes.sqlite.dbfile import copy_readable
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.faults import DatabaseError
from indexes.sqlite.recovery import Damaged, open_checked, set_aside
from wiki.errors import StorageError
from wiki.store.disk_faults import disk_cause, storage_cause
from wiki.store.notices import notify

OK, NEW, RECOVERED, TEMPORARY = "ok", "new", "recovered", "temporary"
_temporary: dict[str, Path | None] = {}
"""Live database path -> this process's temporary copy (``None``: in memory)."""


@dataclass
class Opened:
    """An open index and how it was found: ``ok``, ``new`` (there was none, or an empty
    file), ``recovered`` (damaged, set aside, empty now) or ``temporary`` (the git dir
    cannot be written: a copy for this process)."""

    index: IndexBackend
    state: str


def open_database(path: Path, *, write: bool = False) -> Opened:
    """The derived database at ``path``, checked (see the module). With ``write`` a
    storage fault raises :class:`StorageError` instead of falling back to a temporary
    copy. Raises :class:`StorageError` also when even a temporary copy cannot be made."""
    new = not path.exists() or path.stat().st_size == 0
    try:
        return Opened(open_checked(path), NEW if new else OK)
    except Damaged as damage:
        return recover(path, damage.reason, write=write)
    except (OSError, DatabaseError) as exc:
        return on_storage_fault(path, exc, write=write)


def recover(path: Path, reason: str, *, write: bool = False) -> Opened:
    """Set the damaged database at ``path`` aside and open a new, empty one there (the
    caller's sync fills it from the branch); with a read-only git dir, a temporary one."""
    try:
        kept = set_aside(path)
    except OSError as exc:
        cause = storage_cause(exc)
        if cause is None:
            raise
        if write:
            raise StorageError(str(path), cause) from exc
        notify(f"warning: the search index {path} is damaged ({reason}) and cannot be set "
               f"aside ({cause}); searching a temporary index rebuilt from the branch")
        _temporary[str(path)] = None
        return Opened(SearchIndex(":memory:"), TEMPORARY)
    notify(f"warning: the search index was damaged ({reason}); kept as {kept.name}; "
           "rebuilt from the branch")
    try:
        return Opened(open_checked(path), RECOVERED)
    except (OSError, DatabaseError) as exc:
        return on_storage_fault(path, exc, write=write, copy=False)


def open_temporary(path: Path, cause: str | None, *, copy: bool = True) -> SearchIndex:
    """This process's temporary index for the live ``path``: a copy of what is readable
    of it in a temp folder (removed at exit), else an empty one in memory."""
    key = str(path)
    if key in _temporary:
        temp = _temporary[key]
        if temp is None:
            return SearchIndex(":memory:")
        try:
            return open_checked(temp)
        except (Damaged, OSError, DatabaseError):
            _temporary[key] = None
            return SearchIndex(":memory:")
    try:
        folder = Path(tempfile.mkdtemp(prefix="wiki-index-"))
        atexit.register(shutil.rmtree, folder, True)
        temp = folder / path.name
        if copy:
            copy_readable(path, temp)
        index = open_checked(temp)
    except (Damaged, OSError, DatabaseError):
        _temporary[key] = None
        notify(f"note: the git dir cannot be written ({cause}); using a temporary index "
               "in memory, rebuilt from the branch")
        return SearchIndex(":memory:")
    _temporary[key] = temp
    notify(f"note: the git dir cannot be written ({cause}); using a temporary index "
           f"({temp}) for this process")
    return index


def on_storage_fault(path: Path, exc: BaseException, *, write: bool,
                     copy: bool = True) -> Opened:
    """What opening ``path`` does after ``exc``: a storage fault (read-only, full disk) is a
    :class:`StorageError` for a writer and a temporary index (with a copy of the file's
    vectors unless ``copy`` is false) for a reader; any other error is raised again
    (call it from an ``except`` block)."""
    cause = storage_cause(exc)
    if cause is None:
        raise exc
    cause = disk_cause(path, cause)
    if write:
        raise StorageError(str(path), cause) from exc
    return Opened(open_temporary(path, cause, copy=copy), TEMPORARY)
