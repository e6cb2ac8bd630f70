"""One writer at a time per repository: the wiki write lock.

Proposing (look for an identical open proposal, then create the branch) and landing take
``<git common dir>/wiki-write.lock`` with ``fcntl.flock``, so two ``wiki ingest`` runs or a
retried MCP ``propose`` cannot both create the same proposal. The lock is advisory and held
only around the ref updates (milliseconds); a writer that cannot take it within
:data:`WAIT_SECONDS` (``$WIKI_LOCK_WAIT`` overrides) gets :class:`WriterBusyError`. The
kernel drops the lock when its holder exits, so a crashed writer never leaves it stuck.
Worktrees of one repository share the common dir, hence the lock. It sits beside the refs,
not in the derived-state folder, so a read-only ``wiki/`` folder (a temporary index) does
not stop writers whose refs are writable; a lock file that cannot be created is a
:class:`~wiki.errors.StorageError`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from wiki.errors import WriterBusyError
from wiki.store.disk_faults import writing

LOCK_NAME = "wiki-write.lock"
WAIT_SECONDS = 10.0
POLL_SECONDS = 0.05


def wait_seconds() -> float:
    """The bounded wait: ``$WIKI_LOCK_WAIT`` (seconds, a non-negative number) or
    :data:`WAIT_SECONDS`."""
    raw = os.environ.get("WIKI_LOCK_WAIT", "")
    try:
        value = float(raw)
    except ValueError:
        return WAIT_SECONDS
    return value if value >= 0 and value == value and value != float("inf") else WAIT_SECONDS


@contextlib.contextmanager
def write_lock(state_dir: Path, wait: float | None = None) -> Iterator[None]:
    """Hold the write lock of the wiki whose derived state lives in ``state_dir`` (the
    ``Wiki.state_dir``) for the ``with`` block. Re-entrant within one process is NOT
    supported: take it once, around the ref updates only. Raises
    :class:`WriterBusyError` after ``wait`` seconds (default :func:`wait_seconds`)."""
    wait = wait_seconds() if wait is None else wait
    path = state_dir.parent / LOCK_NAME  # the git common dir
    with writing(path):
        handle = open(path, "a+b")  # noqa: SIM115 - closed below, after the lock is released
    with handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WriterBusyError(
                        f"another wiki writer in this repository held {path} for {wait:g} s; "
                        "nothing was written — run the command again (WIKI_LOCK_WAIT sets "
                        "the wait)") from None
                time.sleep(POLL_SECONDS)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
