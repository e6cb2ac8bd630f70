"""Faults of the disk under the wiki: what counts as a read-only or full disk and what
counts as a damaged database. A write that the disk refuses becomes a
:class:`wiki.errors.StorageError` naming the path and the cause (:func:`storage_error`);
the notices a command reports about such faults travel through :mod:`wiki.store.notices`.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from indexes.sqlite.faults import OperationalError, is_damage, sqlite_storage_cause
from wiki.errors import StorageError

STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                            errno.EPERM})
"""OS errors that mean "this disk will not take the write", not a bug."""
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""Those of them that only a write raises (a read can also be denied permission)."""
_GIT_WORDS = ("No space left on device", "Read-only file system", "Permission denied",
              "Disk quota exceeded", "unable to create temporary file",
              "insufficient permission")
"""What git says on stderr when it cannot write an object or a ref."""


def is_git_command_error(error: BaseException) -> bool:
    """Whether ``error`` is GitPython's ``GitCommandError`` (a git process that failed).
    GitPython is not imported for the question: while no code has imported it, no error
    can be one of its exceptions (a plain search never loads it)."""
    git = sys.modules.get("git")
    return git is not None and isinstance(error, git.GitCommandError)


def storage_cause(error: BaseException) -> str | None:
    """The reason in words when ``error`` means the disk refused a write (read-only file
    system, no permission, full, over quota); ``None`` for any other error."""
    if isinstance(error, OSError) and error.errno in STORAGE_ERRNOS:
        return error.strerror or os.strerror(error.errno)
    said = sqlite_storage_cause(error)  # SQLite's codes: indexes.sqlite.faults
    if said is not None:
        return said
    if is_git_command_error(error):
        stderr = str(error.stderr or "")
        for line in stderr.splitlines():
            if any(words in line for words in _GIT_WORDS):
                text = line.strip().removeprefix("stderr:").strip().strip("'").strip()
                for prefix in ("fatal: ", "error: "):
                    text = text.removeprefix(prefix)
                return text
    return None


def disk_cause(path: Path | str, said: str) -> str:
    """``said`` (SQLite's words, e.g. "unable to open database file") made precise from
    the file system holding ``path`` (its nearest existing folder): read-only, not
    writable by this user, or full; or ``path`` itself a dangling symbolic link;
    ``said`` unchanged when none of these holds."""
    folder = Path(path)
    if folder.is_symlink() and not folder.exists():
        return f"it is a symbolic link to {os.readlink(folder)}, which does not exist"
    for suffix in ("-wal", "-shm", "-journal"):  # SQLite's files beside the database
        beside = folder.with_name(folder.name + suffix)
        if beside.is_dir():
            return f"{beside.name} beside it is a directory, not SQLite's file; remove it"
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        stats = os.statvfs(folder)
    except OSError:
        return said
    if stats.f_flag & os.ST_RDONLY:
        return os.strerror(errno.EROFS)
    if not os.access(folder, os.W_OK):
        return os.strerror(errno.EACCES)
    if stats.f_bavail == 0:
        return os.strerror(errno.ENOSPC)
    return said


def is_damaged(error: BaseException) -> bool:
    """True when ``error`` says a SQLite file is not a database or is malformed."""
    return is_damage(error) and not storage_cause(error)


def storage_error(error: BaseException, path: Path | str, *,
                  anywhere: bool = False) -> StorageError | None:
    """``error`` as a :class:`StorageError` on ``path`` when it is a storage fault.
    ``anywhere``: the error was caught around code that may also read, so an OS error
    counts only when a read cannot raise it (:data:`WRITE_ERRNOS`)."""
    if anywhere and isinstance(error, OSError) and error.errno not in WRITE_ERRNOS:
        return None
    cause = storage_cause(error)
    if cause is None and is_git_command_error(error):
        # git's words vary by version and step ("unable to create directory for ...",
        # "cannot lock ref"); the file system it was writing into says what it was
        cause = disk_cause(path, "") or None
    if cause is None:
        return None
    where = getattr(error, "filename", None) or path
    if isinstance(error, OperationalError):
        cause = disk_cause(where, cause)
    return StorageError(str(where), cause)


@contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Turn a storage fault raised inside the block into :class:`StorageError` on
    ``path`` (the file, or the folder written into); other errors pass unchanged."""
    try:
        yield
    except Exception as exc:
        if not isinstance(exc, (OSError, OperationalError)) and not is_git_command_error(exc):
            raise
        converted = storage_error(exc, path)
        if converted is None:
            raise
        raise converted from exc
