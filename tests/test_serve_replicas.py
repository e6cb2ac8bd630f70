"""The scale-out deployment of docs/serve.md: two ``wiki serve`` processes (real ones, each
on its own port, as behind a load balancer) over one clone and one PostgreSQL index give
the same answer naming the same commit, before and after the branch moves."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, write_config

from wiki.store.workspace import Wiki

WAIT = 120


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _replica(config: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """``wiki serve --config`` as its own process; returns it and its base URL once
    ``/health`` answers (it fails when the process exits first)."""
    port = _free_port()
    with log.open("wb") as out:
        child = subprocess.Popen([sys.executable, "-m", "wiki_cli", "--quiet", "serve",
                                  "--config", str(config), "--port", str(port)],
                                 env=os.environ.copy(), stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while True:
        assert child.poll() is None, log.read_text(errors="replace")
        try:
            if httpx.get(f"{base}/health", timeout=5).status_code == 200:
                return child, base
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the replica did not start"
        time.sleep(0.1)


def _calls(base: str) -> dict[str, dict]:
    auth = {"Authorization": f"Bearer {READ_TOKEN}"}
    search = httpx.post(f"{base}/v1/repos/handbook/search", headers=auth, timeout=WAIT,
                        json={"query": "where is annual leave requested"})
    ask = httpx.post(f"{base}/v1/repos/handbook/ask", headers=auth, timeout=WAIT,
                     json={"question": "where is annual leave requested?"})
    status = httpx.get(f"{base}/v1/repos/handbook/status", headers=auth, timeout=WAIT)
    for response in (search, ask, status):
        assert response.status_code == 200, response.text
        assert response.headers["X-Wiki-Commit"] == response.json()["commit"]
    return {"search": search.json(), "ask": ask.json(), "status": status.json()}


def _answer(calls: dict[str, dict]) -> tuple:
    """What must be equal between replicas: commits, ranked entries, the answer."""
    return (calls["search"]["commit"], [h["id"] for h in calls["search"]["hits"]],
            calls["ask"]["commit"], calls["ask"]["answer"], calls["ask"]["confidence"])


def test_two_replicas_over_one_postgres_index_answer_alike(
        wiki: Wiki, repo: Path, tmp_path: Path, on_postgres: str) -> None:
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    replicas = [_replica(config, tmp_path / f"replica-{n}.log") for n in (1, 2)]
    try:
        first = [_calls(base) for _, base in replicas]
        write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
              "Annual leave is requested in Workday at least two weeks ahead.\n")
        ingest_and_land(wiki, repo / "docs")  # the branch moves under both replicas
        second = [_calls(base) for _, base in reversed(replicas)]
    finally:
        for child, _ in replicas:
            child.terminate()
        for child, _ in replicas:
            child.wait(WAIT)
    head = wiki.head()
    assert _answer(first[0]) == _answer(first[1])
    assert _answer(second[0]) == _answer(second[1])
    assert first[0]["ask"]["commit"] != head and "HR Links" in first[0]["ask"]["answer"]
    assert second[0]["ask"]["commit"] == head and "Workday" in second[0]["ask"]["answer"]
    for calls in (*first, *second):  # one index: the database, not a file per process
        assert calls["status"]["database"].startswith("postgresql://")
