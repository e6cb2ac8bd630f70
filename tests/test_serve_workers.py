"""``wiki serve --workers N``: real server processes on one port. Connections reach every
worker, the same answer comes from each, a stopped server stops its workers, a killed one
leaves none holding the port, and bad settings are one line."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, write_config

from wiki.errors import ConfigError
from wiki.serve.config import load_config
from wiki.store.workspace import Wiki

WAIT = 120
AUTH = {"Authorization": f"Bearer {READ_TOKEN}"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _serve(config: Path, log: Path, port: int, workers: int = 2) -> subprocess.Popen:
    """``wiki serve --workers`` as a real process; returns it once ``/health`` answers."""
    with log.open("wb") as out:
        child = subprocess.Popen([sys.executable, "-m", "wiki_cli", "serve", "--config",
                                  str(config), "--port", str(port), "--workers", str(workers)],
                                 env=os.environ.copy(), stdout=out, stderr=out)
    deadline = time.monotonic() + WAIT
    while True:
        assert child.poll() is None, log.read_text(errors="replace")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                return child
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.1)


def _workers_of(pid: int) -> list[int]:
    """The forked workers of server ``pid``: its children that run the same command line.
    Other children are short-lived helpers the server starts (``git`` runs), which a read
    of ``/proc`` can catch mid-run."""
    def cmdline(child: int | str) -> bytes | None:
        try:
            return Path(f"/proc/{child}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            return None

    own = cmdline(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children if cmdline(child) == own]


def _gone(pid: int, seconds: float = WAIT) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
            if state == "Z":
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def served(wiki: Wiki, repo: Path, tmp_path: Path) -> Path:
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    return write_config(tmp_path / "serve.toml", {"handbook": repo})


def test_connections_reach_every_worker_and_a_stop_stops_them(served: Path,
                                                              tmp_path: Path) -> None:
    port, log = _free_port(), tmp_path / "serve.log"
    child = _serve(served, log, port)
    try:
        workers = _workers_of(child.pid)
        assert len(workers) == 1, workers
        answers = set()
        for _ in range(24):  # a fresh connection each: the kernel picks the worker
            got = httpx.post(f"http://127.0.0.1:{port}/v1/repos/handbook/search", headers=AUTH,
                             json={"query": "tock line"}, timeout=WAIT)
            assert got.status_code == 200, got.text
            answers.add((got.json()["commit"], tuple(h["id"] for h in got.json()["hits"])))
        assert len(answers) == 1 and next(iter(answers))[1], answers
        child.send_signal(signal.SIGTERM)
        assert child.wait(WAIT) in (0, -signal.SIGTERM)  # as one process ends
        assert _gone(workers[0])
    finally:
        if child.poll() is None:
            child.kill()
    text = log.read_text()
    assert ", 2 worker processes" in text, text
    served_by = set(re.findall(r"POST /v1/repos/handbook/search 200 \d+ ms worker (\d)", text))
    assert served_by == {"0", "1"}, text


def test_a_killed_server_leaves_no_worker_holding_the_port(served: Path,
                                                           tmp_path: Path) -> None:
    port = _free_port()
    child = _serve(served, tmp_path / "serve.log", port)
    workers = _workers_of(child.pid)
    child.kill()
    child.wait(WAIT)
    assert all(_gone(pid, 30) for pid in workers), workers
    with socket.socket() as sock:  # the port is free again
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))


def test_a_port_in_use_is_refused_with_workers_too(served: Path, tmp_path: Path) -> None:
    """SO_REUSEPORT lets workers share the port; it must not let a second server join a
    first one's port (it would take half of its connections)."""
    port = _free_port()
    first = _serve(served, tmp_path / "first.log", port)
    try:
        second = subprocess.run([sys.executable, "-m", "wiki_cli", "serve", "--config",
                                 str(served), "--port", str(port), "--workers", "2"],
                                capture_output=True, text=True, timeout=WAIT)
        assert second.returncode == 2, second.stderr
        last = second.stderr.strip().splitlines()[-1]
        assert last.startswith(f"error: cannot listen on 127.0.0.1:{port}"), second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(WAIT)


@pytest.mark.parametrize("value", ["0", '"two"', "65", "1.5", "true"])
def test_a_bad_workers_setting_is_one_line(tmp_path: Path, repo: Path, value: str) -> None:
    config = write_config(tmp_path / "serve.toml", {"handbook": repo},
                          extra_server=f"workers = {value}")
    with pytest.raises(ConfigError, match=r"\[server\] workers"):
        load_config(config)
