"""Files a user can name, and the wiki's own state logs: regular files only, read within a
bound (docs/decisions.md, "Per-call state and bounded inputs").

A path can name something that is not a file: a FIFO (a read waits for a writer that never
comes; an append waits for a reader), a device (``/dev/zero`` never ends, ``/dev/random``
never stops), a directory, a socket, or a symbolic link to any of them. :func:`read_regular`
and :func:`append_regular` follow a link, look at what the path is before opening it (a
device is never opened), open it without blocking and look again at what was opened
(``fstat``: a path swapped between the two looks is still caught), and refuse anything but
a regular file with :class:`wiki.errors.NotRegularFileError`, naming the path and what it
is. A read takes at most ``limit_bytes`` (:class:`wiki.errors.FileTooLargeError` past it,
also when the file grows while it is read).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from wiki.errors import FileTooLargeError, NotRegularFileError

STATE_LOG_LIMIT_BYTES = 64 << 20
"""The most bytes of a state log (``gaps.jsonl``, ``feedback.jsonl``) read: some 300,000
records; a longer log is refused with its path, to be trimmed by hand."""
STATE_LOG_HINT = "trim or move the log (it is local state: nothing on the wiki branch needs it)"
"""What a state log past :data:`STATE_LOG_LIMIT_BYTES` says to do."""
_CHUNK = 1 << 16
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``"a regular file"``, ``"a FIFO"``,
    ``"a directory"``, ``"a character device"``, ``"a block device"``, ``"a socket"`` or
    ``"not a file"``."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a file"


def read_regular(path: Path | str, limit_bytes: int, *, hint: str = "") -> bytes:
    """The bytes of the regular file at ``path`` (a symbolic link is followed), at most
    ``limit_bytes`` of them (``hint``: what the too-large error says to do).

    Raises :class:`NotRegularFileError` (nothing read) when ``path`` is a FIFO, a device, a
    directory or a socket, or a link to one; :class:`FileTooLargeError` when the file holds
    more than ``limit_bytes`` bytes (by its size, or by what a read found); ``OSError``
    unchanged when it cannot be opened or read (missing, no permission)."""
    path = Path(path)
    _refuse_special(path, os.stat(path).st_mode)  # a device is never opened
    handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        status = os.fstat(handle)
        _refuse_special(path, status.st_mode)
        if status.st_size > limit_bytes:
            raise FileTooLargeError(str(path), status.st_size, limit_bytes, hint=hint)
        chunks, total = [], 0
        while total <= limit_bytes:
            want = max(_CHUNK, status.st_size + 1 - total)  # the whole file in one read
            chunk = os.read(handle, min(want, limit_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(handle)
    if total > limit_bytes:  # it grew while it was read
        raise FileTooLargeError(str(path), total, limit_bytes, at_least=True,
                                hint=hint)
    return b"".join(chunks)


def read_stream(stream: BinaryIO, name: str, limit_bytes: int, *, hint: str = "") -> bytes:
    """At most ``limit_bytes`` bytes of ``stream`` (standard input, say) up to its end.
    Raises :class:`FileTooLargeError` naming ``name`` when it holds more (it is not read
    further: ``/dev/zero`` on standard input stops at the limit)."""
    data = stream.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        raise FileTooLargeError(name, limit_bytes, limit_bytes, at_least=True, hint=hint)
    return data


def append_regular(path: Path | str, text: str) -> None:
    """Append ``text`` (UTF-8) to the regular file at ``path``, created (mode 0666 less the
    umask) when missing; a symbolic link is followed. Raises :class:`NotRegularFileError`
    when ``path`` is a FIFO (an append would wait for a reader), a device, a directory or
    a socket, or a link to one; ``OSError`` unchanged for a write the disk refuses (the
    caller decides whether that is fatal). One ``write`` call per append, so lines
    appended by several processes do not interleave."""
    path = Path(path)
    with contextlib.suppress(FileNotFoundError):  # created below
        _refuse_special(path, os.stat(path).st_mode)
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK
                     | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    try:
        _refuse_special(path, os.fstat(handle).st_mode)
        data = text.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(handle, data[written:])
    finally:
        os.close(handle)


def _refuse_special(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotRegularFileError(str(path), kind_of(mode), _link_target(path))


def _link_target(path: Path) -> str | None:
    """Where the symbolic link ``path`` leads in the end, or ``None`` when it is no link."""
    try:
        return os.path.realpath(path) if path.is_symlink() else None
    except OSError:
        return None
