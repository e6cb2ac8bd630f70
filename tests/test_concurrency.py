"""Several processes reading and writing the derived index at once (ROBUSTNESS W4)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest
from concurrency_workers import play_role, rebuild_rounds, search_rounds
from conftest import ALICE, BOB, entry_text

from wiki.answering.search import search_for
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki


@pytest.mark.slow
@pytest.mark.robustness("W4")
def test_parallel_syncs_searches_and_rebuilds_never_fail(wiki: Wiki, repo: Path) -> None:
    for round_ in range(3):
        changes = {f"n/e{round_}-{i}.md": entry_text(f"r{round_}i{i}", f"Alpha {i}",
                                                      f"alpha beta {round_} {i}").encode()
                   for i in range(20)}
        proposal = propose(wiki, changes, base=None, kind="t", subject="t", author=ALICE).proposal
        approve(wiki, proposal.name, approver=BOB)
        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        workers = [context.Process(target=search_rounds, args=(str(repo), 15, queue)) for _ in range(3)]
        workers.append(context.Process(target=rebuild_rounds, args=(str(repo), 3, queue)))
        for worker in workers:
            worker.start()
        results = [queue.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        assert results == ["ok"] * len(workers), results
    assert len(search_for(wiki, "alpha", limit=100).hits) == 60


@pytest.mark.slow
@pytest.mark.robustness("W4")
def test_robustness_w4_hook_ask_lint_and_approvals_at_once_lose_nothing(wiki: Wiki,
                                                                        repo: Path) -> None:
    from conftest import git, ingest_and_land, write

    from wiki.lint import run_lint
    write(repo / "docs" / "leave.md", "# Leave\n\nAnnual leave is requested in HR Links.\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "docs")
    ingest_and_land(wiki, repo / "docs")
    (repo / "docs" / "leave.md").write_text("# Leave\n\nAnnual leave goes to the portal.\n")
    git(repo, "commit", "-q", "-am", "leave moved")  # what the post-commit hook marks
    names = [propose(wiki, {f"w/e{i}.md": entry_text(f"w4e{i}", f"Walrus {i}",
                                                    f"walrus note {i}").encode()},
                     base=None, kind="t", subject=f"t{i}", author=ALICE).proposal.name for i in range(6)]
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=play_role, args=(role, str(repo), names, BOB, queue))
               for role in ("approve", "hook", "ask", "lint")]
    for worker in workers:
        worker.start()
    results = dict(queue.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    assert results == dict.fromkeys(("approve", "hook", "ask", "lint"), "ok"), results
    assert sorted(h.key for h in search_for(wiki, "walrus", limit=100).hits) == \
        [f"w/e{i}.md" for i in range(6)]  # every landed write is on the branch and indexed
    assert [(f.code, f.path) for f in run_lint(wiki, select={"W010"}).findings] == \
        [("W010", "docs/leave.md")]  # and the hook's mark was not lost either
