"""Retrying is idempotent (issue 15.4): the same change proposed again returns the open
proposal (``created: false``); concurrent writers serialise on the write lock."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from conftest import ALICE, write

from wiki.ingest.pipeline import ingest
from wiki.review.proposals import list_proposals
from wiki.store.locking import write_lock
from wiki.store.workspace import Wiki
from wiki_cli.mcp_server import WikiTools

NEW = ("---\ntitle: Parking permits\nsummary: Where to get one.\n---\n"
       "Parking permits are issued by the front desk.\n")


def test_the_same_file_proposed_twice_gives_one_proposal(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    path = write(repo / "parking.md", NEW)  # no id: one is generated each time
    first = cli("propose", str(path), "--json")
    again = cli("propose", str(path), "--json")
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    one, two = json.loads(first.stdout), json.loads(again.stdout)
    assert one["created"] is True and two["created"] is False
    assert one["proposal"]["name"] == two["proposal"]["name"]
    plain = cli("propose", str(path))
    assert plain.exit_code == 0 and "already proposed as" in plain.stderr
    assert len(list_proposals(Wiki(repo))) == 1


def test_a_retried_mcp_propose_returns_the_open_proposal(wiki: Wiki, repo: Path) -> None:
    tools = WikiTools(repo, None)
    first = tools.propose("new", content=NEW, category="facilities")
    retried = tools.propose("new", content=NEW, category="facilities")
    assert first["created"] is True and retried["created"] is False
    assert retried["proposal"] == first["proposal"]
    other = tools.propose("new", content=NEW.replace("front desk", "garage office"),
                          category="facilities")
    assert other["created"] is True and other["proposal"] != first["proposal"]


def test_two_ingests_at_once_give_one_proposal(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "leave.md", "# Leave\n\nLeave is requested in HR Links.\n")
    reports = []

    def run() -> None:
        reports.append(ingest(Wiki(repo), [repo / "docs"], author=ALICE))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reports) == 2
    assert reports[0].proposal.name == reports[1].proposal.name
    assert sorted(r.proposal_created for r in reports) == [False, True]
    assert [p.name for p in list_proposals(wiki)] == [reports[0].proposal.name]


def test_a_held_lock_gives_a_clear_conflict_after_the_bounded_wait(cli, wiki: Wiki,
                                                                   repo: Path,
                                                                   monkeypatch) -> None:
    path = write(repo / "parking.md", NEW)
    monkeypatch.setenv("WIKI_LOCK_WAIT", "0.2")
    with write_lock(wiki.state_dir):  # another writer holds it
        busy = cli("propose", str(path))
    assert busy.exit_code == 4
    assert busy.stderr.count("\n") == 1 and "another wiki writer" in busy.stderr
    assert list_proposals(wiki) == []
    done = cli("propose", str(path))
    assert done.exit_code == 0, done.output
