"""Bounded stress: 24 proposals approved from 4 processes at once (6 each, with searches
between); every approved change is on the branch exactly once, nothing is lost, nothing
surfaces "database is locked"."""

from __future__ import annotations

import multiprocessing

import pytest
from concurrency_workers import approve_all
from conftest import ALICE, BOB, entry_text

from wiki.answering.search import search_for
from wiki.review.proposals import list_proposals, propose
from wiki.store.workspace import Wiki

COUNT = 24
"""Proposals in all (50 until session 11: 75 s of a ~7-minute suite; four processes
racing to land are the same race at 24)."""


@pytest.mark.slow
@pytest.mark.robustness("W4")
def test_two_dozen_proposals_approved_from_four_processes(wiki: Wiki) -> None:
    names = []
    for i in range(COUNT):
        proposal = propose(wiki, {f"s/e{i:02}.md": entry_text(
            f"st{i:02}", f"Stress {i}", f"stress body {i}").encode()},
            base=None, kind="stress", subject=f"stress {i}", author=ALICE).proposal
        names.append(proposal.name)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=approve_all, args=(str(wiki.root), names[i::4], BOB, queue))
               for i in range(4)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert all(status == "ok" for status, _ in results), results
    landed = sorted(name for _, names_ in results for name in names_)
    assert landed == sorted(names)
    assert list_proposals(wiki) == []
    snapshot = wiki.snapshot()
    assert len([p for p in snapshot.entry_paths() if p.startswith("s/")]) == COUNT
    messages = wiki.repo.git.log("--first-parent", "--format=%B", wiki.head())
    for name in names:
        assert messages.count(f"Wiki-Proposal: {name}\n") == 1
    assert len(search_for(wiki, "stress body", limit=100).hits) == COUNT
