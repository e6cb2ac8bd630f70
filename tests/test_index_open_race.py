"""Several processes opening one new search index at the same moment (a team's approvers,
a post-commit hook and a search) all get a usable index: switching a new file to WAL can
answer "database is locked" at once, without the busy handler, and that must be retried."""

from __future__ import annotations

import multiprocessing

import pytest

from indexes.sqlite.engine import SearchIndex

PROCESSES = 6
ROUNDS = 60  # the race hit about one round in ten before the retry (60 rounds: 6 failed)


def _open(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        with SearchIndex(path) as index:
            results.put(("ok", index.count()))
    except Exception as exc:  # reported to the parent, which asserts
        results.put((type(exc).__name__, str(exc)))


@pytest.mark.slow
def test_processes_opening_a_new_index_together_all_succeed(tmp_path) -> None:
    context = multiprocessing.get_context("forkserver")
    failures = []
    for round_number in range(ROUNDS):
        path = str(tmp_path / f"round{round_number}.db")
        barrier, results = context.Barrier(PROCESSES), context.Queue()
        workers = [context.Process(target=_open, args=(path, barrier, results))
                   for _ in range(PROCESSES)]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        failures += [outcome for outcome in outcomes if outcome != ("ok", 0)]
    assert failures == []
