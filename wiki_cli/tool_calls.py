"""Running one tool call (MCP or ``wiki serve``'s REST routes) the way every call runs:
reads of one repository side by side and writes one at a time (:class:`RepoLock`), one
``[llm]`` deadline, only this call's notices, secrets masked, and failures as one
:class:`ToolFailure` the adapter turns into its own error."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import Any

from indexes.backend import as_index_error
from indexes.errors import IndexesError
from wiki.errors import WikiError
from wiki.store.disk_faults import storage_error
from wiki.store.notices import collect_notices
from wiki_cli.inert import masked_values
from wiki_cli.mcp_arguments import not_unicode

log = logging.getLogger("wiki.mcp")

WRITES = frozenset({"propose"})
"""The tools that write (a proposal branch): one at a time per repository, alone. Every
other tool (``search``, ``ask``, ``get``, ``lint``, ``status``) only reads: its calls run
side by side (docs/decisions.md, "Parallel reads in wiki serve")."""


class RepoLock:
    """One repository's calls: readers share it (:meth:`shared`), a writer holds it alone
    (:meth:`acquire`/:meth:`release`, or ``with lock:``). A waiting writer goes before
    readers that come after it, so a stream of reads never starves a write. Unlike
    ``threading.Lock`` wrapped in a library's reader-writer lock, the exclusive side may be
    released by another thread than the one that took it (as ``threading.Lock``)."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        """Hold the lock alone once no reader or writer holds it; ``False`` when not had
        (``blocking`` false, or ``timeout`` seconds passed; -1: no limit)."""
        with self._state:
            self._writers_waiting += 1
            try:
                had = self._state.wait_for(
                    lambda: not self._writer and not self._readers,
                    None if timeout < 0 else timeout) if blocking else \
                    not self._writer and not self._readers
                if had:
                    self._writer = True
                return had
            finally:
                self._writers_waiting -= 1

    @property
    def writers_waiting(self) -> int:
        """Writers waiting for the lock now (a server's proposals queued behind reads)."""
        with self._state:
            return self._writers_waiting

    def release(self) -> None:
        """Give up the exclusive hold. Raises ``RuntimeError`` when it is not held."""
        with self._state:
            if not self._writer:
                raise RuntimeError("release of a RepoLock that is not held")
            self._writer = False
            self._state.notify_all()

    def __enter__(self) -> RepoLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock with other readers for the ``with`` block (waits while a writer
        holds it or waits for it)."""
        with self._state:
            self._state.wait_for(lambda: not self._writer and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._state:
                self._readers -= 1
                if not self._readers:
                    self._state.notify_all()


class ToolFailure(Exception):
    """A call that did not return a result: the domain ``error`` (or, when ``internal``, a
    bug) and the notices gathered before it."""

    def __init__(self, error: Exception, notices: list[str], internal: bool = False) -> None:
        super().__init__(str(error))
        self.error, self.notices, self.internal = error, notices, internal


def run_tool(tools, method, kwargs: dict[str, Any], *, writes: bool | None = None) -> Any:
    """``method(**kwargs)`` as every tool call runs: under the tools' lock (a
    :class:`RepoLock`: shared by reads, alone for a write; ``writes``, default: whether the
    method is named in :data:`WRITES`), the command's
    ``[llm]`` deadline and embedder, with only this call's notices (under ``notices``) and
    the secrets in every string of the result masked (``[REDACTED:<kind>]``, as the CLI
    does). Raises :class:`ToolFailure` for a domain error, an index database that failed
    (:func:`indexes.backend.as_index_error`, as the CLI maps it), a storage fault or a bug (logged
    with its traceback). Shared by the MCP tools and ``wiki serve``'s REST routes."""
    from wiki.answering.embed_settings import using
    from wiki.llm.usage import command_scope

    # the notices are collected in this call's context (a context variable set here, in
    # the worker thread running the call), so calls on other repositories running at the
    # same time never take them nor add to them (docs/decisions.md, "Per-call state")
    if writes is None:
        writes = getattr(method, "__name__", None) in WRITES
    turn = tools.lock if writes else tools.lock.shared()
    with collect_notices() as notices, turn, command_scope(), using(tools.spec):
        bad = not_unicode(kwargs)
        if bad is not None:
            raise ToolFailure(bad, [])
        try:
            result = masked_values(method(**kwargs))
        except (WikiError, IndexesError) as error:
            raise ToolFailure(error, list(notices)) from error
        except Exception as error:  # noqa: BLE001 - the caller gets one line, not "Error executing tool"
            database = as_index_error(error)
            if database is not None:  # the index database broke off, as the CLI says it
                raise ToolFailure(database, list(notices)) from error
            storage = storage_error(error, getattr(error, "filename", None) or "a file",
                                    anywhere=True)
            if storage is not None:
                raise ToolFailure(storage, list(notices)) from error
            log.exception("internal error in tool %s", getattr(method, "__name__", method))
            raise ToolFailure(error, list(notices), internal=True) from error
        for notice in notices:
            log.warning("%s", notice)
        if notices and isinstance(result, dict):
            result = {**result, "notices": list(notices)}
        return result
