"""Several processes reading and writing the derived index at once (ROBUSTNESS W4)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from conftest import ALICE, BOB, entry_text

from wiki.derived import rebuild
from wiki.proposals import approve, propose
from wiki.search import search
from wiki.workspace import Wiki


def _reader(path: str, rounds: int, queue) -> None:
    try:
        wiki = Wiki(path)
        for _ in range(rounds):
            search(wiki, "alpha beta")
        queue.put("ok")
    except Exception as exc:  # reported to the parent, which fails the test
        queue.put(f"{type(exc).__name__}: {exc}")


def _rebuilder(path: str, rounds: int, queue) -> None:
    try:
        wiki = Wiki(path)
        for _ in range(rounds):
            rebuild(wiki)
        queue.put("ok")
    except Exception as exc:
        queue.put(f"{type(exc).__name__}: {exc}")


def test_parallel_syncs_searches_and_rebuilds_never_fail(wiki: Wiki, repo: Path) -> None:
    for round_ in range(3):
        changes = {f"n/e{round_}-{i}.md": entry_text(f"r{round_}i{i}", f"Alpha {i}",
                                                      f"alpha beta {round_} {i}").encode()
                   for i in range(20)}
        proposal, _ = propose(wiki, changes, kind="t", subject="t", author=ALICE)
        approve(wiki, proposal.name, approver=BOB)
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        workers = [context.Process(target=_reader, args=(str(repo), 15, queue)) for _ in range(3)]
        workers.append(context.Process(target=_rebuilder, args=(str(repo), 3, queue)))
        for worker in workers:
            worker.start()
        results = [queue.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert results == ["ok"] * len(workers), results
    assert len(search(wiki, "alpha", limit=100).hits) == 60
