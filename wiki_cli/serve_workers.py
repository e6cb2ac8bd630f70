"""``wiki serve`` as several processes on one port (``[server] workers``, ``--workers``).

One process runs Python one thread at a time: on the handbook a served search or ask is
~26 ms of mostly Python CPU, so threads alone cap a server at about one core (41 req/s
with 16 clients on 2 cores, evals/results/bench-serve.md). Workers are whole processes,
forked before anything loads (no threads, no model, no git helper processes yet), each
with its own listening socket bound with ``SO_REUSEPORT`` to the same address: the kernel
spreads new connections over them (one shared socket let one process take most keep-alive
connections: 44 instead of 75 req/s). Each worker loads its own model and opens its own
git and index handles; writes stay safe across them because every ref move is a
compare-and-swap and SQLite serialises its writers. Only the first process (the parent)
fetches remotes.

The parent stops its workers when it stops (SIGTERM, then SIGKILL after
:data:`STOP_SECONDS`); a worker whose parent is gone stops itself within a second, so a
killed server never leaves workers holding the port.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field

from wiki.errors import ConfigError
from wiki_cli.serve_guard import listening_socket

log = logging.getLogger("wiki.serve")

STOP_SECONDS = 30.0
"""How long a stopping server waits for its workers' running requests to finish."""


@dataclass
class Workers:
    """This process's place among a server's workers: ``number`` (0 for the parent),
    ``sock`` (its own listening socket) and, in the parent, the workers' process ids."""

    number: int
    sock: socket.socket
    children: list[int] = field(default_factory=list)
    _stopping: threading.Event = field(default_factory=threading.Event)

    @property
    def parent(self) -> bool:
        """Whether this is the first process (it fetches, it stops the others)."""
        return self.number == 0

    @contextlib.contextmanager
    def supervising(self):
        """Around the server's run in the parent: its workers are stopped when it stops,
        also by SIGTERM (uvicorn stops gracefully, then raises the signal again with the
        handler it found: here one that comes back to this block, which stops the workers
        and then lets the signal end the process as it would have)."""
        if not self.children:
            yield
            return
        previous = signal.signal(signal.SIGTERM, _stopped)
        terminated = False
        try:
            yield
        except _Terminated:
            terminated = True
        finally:
            self.stop()
            signal.signal(signal.SIGTERM, previous)
        if terminated:
            signal.raise_signal(signal.SIGTERM)

    def stop(self) -> None:
        """In the parent: SIGTERM every worker (uvicorn lets running requests finish),
        wait up to :data:`STOP_SECONDS`, then SIGKILL the ones still running."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        for pid in self.children:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for pid in self.children:
            while _running(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _running(pid):
                _signal(pid, signal.SIGKILL)
                _reap(pid, block=True)


class _Terminated(BaseException):
    """SIGTERM reached the parent after uvicorn's graceful stop."""


def _stopped(_signum, _frame) -> None:
    raise _Terminated


def start(host: str, port: int, count: int) -> Workers:
    """Bind the port and, for ``count`` > 1, fork ``count - 1`` workers that bind it too.
    Returns this process's :class:`Workers` (in a worker: its number, its socket).
    Raises :class:`ConfigError` naming the address when it cannot be had, or when
    ``count`` > 1 on a system without ``fork`` and ``SO_REUSEPORT``."""
    if count <= 1:
        return Workers(0, listening_socket(host, port))
    if not (hasattr(os, "fork") and hasattr(socket, "SO_REUSEPORT")):
        raise ConfigError(f"workers = {count} needs fork() and SO_REUSEPORT (Linux, BSD, "
                          "macOS); use workers = 1 here")
    listening_socket(host, port).close()  # in use (even by sockets that share): refused
    sock = listening_socket(host, port, shared=True)
    port = sock.getsockname()[1]  # port 0: the workers bind the one the kernel chose
    parent_pid = os.getpid()
    children: list[int] = []
    for number in range(1, count):
        pid = os.fork()
        if pid == 0:
            sock.close()
            return _worker(number, host, port, parent_pid)
        children.append(pid)
    workers = Workers(0, sock, children)
    for pid in children:
        threading.Thread(target=_watch, args=(workers, pid), daemon=True,
                         name=f"wiki-serve-worker-{pid}").start()
    return workers


def _worker(number: int, host: str, port: int, parent_pid: int) -> Workers:
    """In a forked worker: its own socket on the parent's port, and a thread that stops
    the worker (SIGTERM to itself: uvicorn's graceful stop) once the parent is gone."""
    try:
        sock = listening_socket(host, port, shared=True)
    except ConfigError as error:
        log.error("worker %d: %s", number, error)
        os._exit(2)

    def orphaned() -> None:
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=orphaned, daemon=True, name="wiki-serve-parent-watch").start()
    return Workers(number, sock)


def _watch(workers: Workers, pid: int) -> None:
    """In the parent: reap worker ``pid`` when it exits and say so unless stopping."""
    status = _reap(pid, block=True)
    if status is not None and not workers._stopping.is_set():
        log.warning("worker process %d exited (%s); the others keep serving", pid,
                    _described(status))


def _described(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _running(pid: int) -> bool:
    """Whether ``pid`` is not reaped yet (its watch thread reaps it as it exits)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _reap(pid: int, *, block: bool) -> int | None:
    try:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return None
    return status if done else None
