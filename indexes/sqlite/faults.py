"""What SQLite's errors mean for the disk under a database: the exception classes callers
catch (``DatabaseError``, ``OperationalError``, re-exported so that no module above
``indexes`` imports ``sqlite3``), whether an error is the disk refusing a write
(:func:`sqlite_storage_cause`) and whether it says the file is damaged
(:func:`is_damage`). Result codes: https://sqlite.org/rescode.html."""

from __future__ import annotations

import sqlite3

DatabaseError = sqlite3.DatabaseError
"""Any error SQLite reports about a database (the base of :data:`OperationalError`)."""
OperationalError = sqlite3.OperationalError
"""An error in running a statement: locked, read-only, full, I/O."""

STORAGE_CODES = {3: "permission denied", 8: "read-only", 10: "disk I/O error",
                 13: "disk full", 14: "cannot open the file"}
"""SQLite primary result codes (``SQLITE_PERM``, ``READONLY``, ``IOERR``, ``FULL``,
``CANTOPEN``) that mean the disk will not take the write."""
DAMAGE_CODES = frozenset({11, 26})
"""``SQLITE_CORRUPT`` and ``SQLITE_NOTADB``."""
_STORAGE_WORDS = ("readonly database", "unable to open", "disk is full", "disk I/O error")


def sqlite_storage_cause(error: BaseException) -> str | None:
    """SQLite's words when ``error`` is an :data:`OperationalError` meaning the disk
    refused (read-only, no permission, full, I/O); ``None`` for anything else."""
    if not isinstance(error, OperationalError):
        return None
    code = getattr(error, "sqlite_errorcode", None)
    text = str(error)
    if (code is not None and code & 0xFF in STORAGE_CODES) or any(
            words in text for words in _STORAGE_WORDS):
        return text
    return None


def is_damage(error: BaseException) -> bool:
    """True when ``error`` is a :data:`DatabaseError` whose code or words say the file is
    not a database or is malformed (the caller rules out storage faults first)."""
    if not isinstance(error, DatabaseError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in DAMAGE_CODES:
        return True
    text = str(error)
    return "malformed" in text or "not a database" in text
