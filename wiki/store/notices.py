"""Notices: what a command reports beside its result (a skipped leg, a disk that refused a
cache write, a shallow clone's edge).

The library never prints: it records a notice with :func:`notify` in the current call's
collector (:func:`collect_notices`, a context variable: each CLI command and each tool call
of ``wiki mcp``/``wiki serve`` opens its own, so calls running at once in one process never
see each other's notices) and the front end reports them on stderr (or in the tool's
result). A notice raised where no call collects is logged on the ``wiki.notices`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_collector: ContextVar[list[str] | None] = ContextVar("wiki_notices", default=None)
"""The notices of the call running in this context (:func:`collect_notices`); ``None``
outside any call. A context variable, not a module list: ``wiki serve`` runs calls for
several repositories at once, each in its own worker thread (docs/decisions.md, "Per-call
state and bounded inputs")."""


@contextmanager
def collect_notices() -> Iterator[list[str]]:
    """Collect the notices :func:`notify` records inside the block into a fresh list,
    yielded (and filled while the block runs), for this call only: threads and tasks
    running other calls meanwhile have their own. Blocks nest: the inner one collects
    until it ends, then the outer one again. Threads started inside the block see the
    list only when started with :func:`contextvars.copy_context` (a new thread starts
    with an empty context)."""
    notices: list[str] = []
    token = _collector.set(notices)
    try:
        yield notices
    finally:
        _collector.reset(token)


def notify(message: str) -> None:
    """Record ``message`` (one line, starting with ``note:`` or ``warning:``) for the
    front end to report with the current call's result (:func:`collect_notices`); the
    same message is recorded once per call. Outside any call, it is logged as a warning
    on the ``wiki.notices`` logger instead."""
    notices = _collector.get()
    if notices is None:
        logging.getLogger("wiki.notices").warning("%s", message)
    elif message not in notices:
        notices.append(message)


def take_notices() -> list[str]:
    """The notices the current call (:func:`collect_notices`) recorded since the last
    take, which forgets them; ``[]`` outside any call."""
    notices = _collector.get()
    if notices is None:
        return []
    taken = list(notices)
    notices.clear()
    return taken
