"""Issue 28, item 3: state agrees with itself right after a change lands. Approve (and a
sync that moved the wiki) bring an existing index to the new head, so `wiki status` and
lint W010 report the landed state without waiting for some search to sync it."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git, ingest_and_land, write

from wiki.answering.search import search_for
from wiki.lint import hook, run_lint
from wiki.status import wiki_status
from wiki.store.workspace import Wiki


def _cited(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "leave.md", "# Leave\n\nAnnual leave is requested in HR Links.\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "docs")
    ingest_and_land(wiki, repo / "docs")
    search_for(wiki, "annual leave")  # the index exists and is at the head


def test_reingest_landing_clears_w010_and_status_is_up_to_date(wiki: Wiki, repo: Path,
                                                                cli) -> None:
    _cited(wiki, repo)
    (repo / "docs" / "leave.md").write_text("# Leave\n\nAnnual leave now goes to the portal.\n")
    git(repo, "commit", "-q", "-am", "leave moved")
    assert hook.mark_commit(wiki) == ["docs/leave.md"]
    assert [f.path for f in run_lint(wiki, select={"W010"}).findings] == ["docs/leave.md"]

    ingest_and_land(wiki, repo / "docs")  # the re-ingest lands; nothing searched since

    assert run_lint(wiki, select={"W010"}).findings == []
    status = wiki_status(wiki)
    assert status.indexed_commit == status.head and status.healthy
    shown = json.loads(cli("status", "--json").output)
    assert shown["indexed_commit"] == shown["head"]

