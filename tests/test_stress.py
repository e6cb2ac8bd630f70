"""Bounded stress: 24 proposals approved from 4 processes at once (6 each, with searches
between); every approved change is on the branch exactly once, nothing is lost, nothing
surfaces "database is locked"."""

from __future__ import annotations

import multiprocessing

import pytest
from conftest import ALICE, BOB, entry_text

from wiki.answering.search import search
from wiki.errors import RefMovedError
from wiki.review.proposals import approve, list_proposals, propose
from wiki.store.workspace import Wiki

COUNT = 24
"""Proposals in all (50 until session 11: 75 s of a ~7-minute suite; four processes
racing to land are the same race at 24)."""


def _approver(path: str, names: list[str], queue) -> None:
    try:
        wiki = Wiki(path)
        landed = []
        for name in names:
            for _ in range(20):  # a lost compare-and-swap is retried, never overwritten
                try:
                    approve(wiki, name, approver=BOB)
                    landed.append(name)
                    break
                except RefMovedError:
                    continue
            search(wiki, "stress")  # readers and index syncs interleave with the writes
        queue.put(("ok", landed))
    except Exception as exc:  # reported to the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.slow
@pytest.mark.robustness("W4")
def test_two_dozen_proposals_approved_from_four_processes(wiki: Wiki) -> None:
    names = []
    for i in range(COUNT):
        proposal, _ = propose(wiki, {f"s/e{i:02}.md": entry_text(
            f"st{i:02}", f"Stress {i}", f"stress body {i}").encode()},
            base=None, kind="stress", subject=f"stress {i}", author=ALICE)
        names.append(proposal.name)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_approver, args=(str(wiki.root), names[i::4], queue))
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
    assert len(search(wiki, "stress body", limit=100).hits) == COUNT
