"""Per-call state lives in the call (issue 25, item 6): ``wiki serve`` runs calls for
different repositories at once, and a notice one call raises ("the search index was
damaged") goes with that call's answer only: never into another repository's answer, never
lost from its own. A real server on 127.0.0.1, two real repositories, client threads."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, ops_repository, running, write_config

from wiki.store.workspace import Wiki

ROUNDS = 12
HEALTHY_CLIENTS = 3
DAMAGED = "the search index was damaged"


@pytest.fixture
def two(wiki: Wiki, repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``handbook`` (the ``repo`` fixture) and ``ops``: the config file and the handbook's
    index database."""
    for number in range(30):  # enough text that a rebuild takes a while
        write(repo / "docs" / f"leave{number}.md", f"# Leave rule {number}\n\nLeave rule "
              f"{number} is requested in HR Links at least {number} days ahead.\n")
    ingest_and_land(wiki, repo / "docs")
    ops = ops_repository(tmp_path)
    config = write_config(tmp_path / "serve.toml", {"handbook": repo, "ops": ops})
    return config, wiki.state_dir / "wiki.sqlite"


def _search(client: httpx.Client, name: str, query: str) -> dict:
    answer = client.post(f"/v1/repos/{name}/search", json={"query": query},
                         headers={"Authorization": f"Bearer {READ_TOKEN}"})
    assert answer.status_code == 200, answer.text[:300]
    return answer.json()


def test_each_answer_carries_only_its_own_repositorys_notices(two) -> None:
    """Each round damages the handbook's index, then one client searches the handbook while
    three search ops at the same time. The handbook's answer says its index was damaged,
    every round; no ops answer carries a notice. (With the notices in one module-level
    list, an ops call finishing during the handbook's rebuild took the warning: it showed
    in ops' answer and was missing from the handbook's.)"""
    config, database = two
    with running(config) as base, httpx.Client(base_url=base, timeout=120) as client:
        _search(client, "handbook", "leave")  # the index exists before it is damaged
        _search(client, "ops", "pager")
        for round_number in range(ROUNDS):
            database.write_bytes(b"this is a text file, not a database\n" * 100)
            answers = _at_once(client, [("handbook", "leave rule", 1)]
                               + [("ops", "pager", 3)] * HEALTHY_CLIENTS)
            (handbook,) = answers["handbook"]
            assert len(answers["ops"]) == 3 * HEALTHY_CLIENTS
            said = handbook.get("notices", [])
            assert len(said) == 1 and DAMAGED in said[0], (round_number, said)
            leaked = [answer["notices"] for answer in answers["ops"] if "notices" in answer]
            assert leaked == [], (round_number, leaked)
            assert handbook["hits"] and all(answer["hits"] for answer in answers["ops"])


def _at_once(client: httpx.Client, calls: list[tuple[str, str, int]]) -> dict[str, list[dict]]:
    """Run each ``(repository, query, times)`` in its own client thread, all released at
    once; the answers by repository."""
    answers: dict[str, list[dict]] = {name: [] for name, _, _ in calls}
    start = threading.Barrier(len(calls))

    def call(name: str, query: str, times: int) -> None:
        start.wait()
        for _ in range(times):
            answers[name].append(_search(client, name, query))

    threads = [threading.Thread(target=call, args=each) for each in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads)
    return answers
