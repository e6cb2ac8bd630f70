"""Adversary pass of session 7 (trust): a hostile teammate and a careless user against
review, sync, output and the user's setup. Each test names the kind of fault it holds;
the fix is in the shared path, not at the example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ALICE, BOB, acting_as

from wiki.store.workspace import Wiki


# -- kind: the process's own setup is user input (a deleted current folder) ------------------

def test_a_deleted_current_folder_is_a_usage_error_for_every_command(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    for command in (["status"], ["ask", "x"], ["ingest", "a.md"], ["init"]):
        result = subprocess.run(
            ["sh", "-c", 'rmdir "$PWD" && exec "$0" -m wiki_cli "$@"', sys.executable,
             *command], cwd=gone, env=os.environ, text=True, capture_output=True)
        gone.mkdir()
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: the current folder no longer exists"), \
            result.stderr
        assert len(result.stderr.splitlines()) == 1


def _land_raw(wiki: Wiki, files: dict[str, str]) -> None:
    """Commit ``files`` straight onto the wiki branch (what plain git can do)."""
    from wiki.store.snapshot import write_commit

    head = wiki.require_head()
    new = write_commit(wiki.snapshot(head), {p: t.encode() for p, t in files.items()},
                       "raw\n", author=ALICE)
    wiki.store.update_ref(wiki.ref, new, head, "test")


# -- kind: what people write in an index.md (its overview) is content every merge carries -----

def _overview_proposal(wiki):
    from wiki.review.proposals import propose
    from wiki.store.indextree import MARKER

    listing = wiki.snapshot().read("ops/index.md").decode()
    text = "# ops\n\nRunbooks of the on-call team. Ask Carol first.\n\n" + MARKER + \
        listing.partition(MARKER)[2]
    proposal, _ = propose(wiki, {"ops/index.md": text.encode()}, base=None, kind="edit",
                          subject="ops overview", author=ALICE)
    return proposal.name


def _land_other_entry(wiki) -> None:
    from wiki.review.proposals import approve, propose

    other, _ = propose(wiki, {"ops/b.md": b"---\nid: b1\ntitle: Pager\n---\nPage Bob.\n"},
                       base=None, kind="new", subject="pager", author=ALICE)
    approve(wiki, other.name, approver=BOB)


def _overview(wiki) -> str:
    return wiki.snapshot().read("ops/index.md").decode()


def test_an_overview_edit_lands_when_the_wiki_moved_meanwhile(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n"})
    name = _overview_proposal(wiki)
    shown = cli("diff", name)
    assert "ops/index.md" in shown.stdout and "Ask Carol first." in shown.stdout
    _land_other_entry(wiki)
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output
    assert "Ask Carol first." in _overview(wiki)  # it was dropped, yet reported as landed
    assert "[Pager](b.md)" in _overview(wiki)


def test_a_rebase_and_a_sync_replay_keep_an_overview_edit(cli, wiki: Wiki, tmp_path) -> None:
    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n"})
    name = _overview_proposal(wiki)
    _land_other_entry(wiki)
    assert cli("rebase", name).exit_code == 0
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    assert "Ask Carol first." in _overview(wiki)

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    subprocess.run(["git", "-C", str(wiki.root), "remote", "add", "origin", str(remote)],
                   check=True)
    assert cli("sync").exit_code == 0
    before = wiki.require_head()
    _land_raw(wiki, {"ops/c.md": "---\nid: c1\ntitle: Rota\n---\nThe rota.\n"})
    subprocess.run(["git", "-C", str(wiki.root), "push", "-q", "origin",
                    f"{wiki.require_head()}:refs/heads/wiki"], check=True)
    wiki.store.update_ref(wiki.ref, before, wiki.require_head(), "test: back")
    mine = _overview(wiki).replace("Ask Carol first.", "Ask Dana first.")
    from wiki.review.proposals import approve, propose
    again, _ = propose(wiki, {"ops/index.md": mine.encode()}, base=None, kind="edit",
                       subject="dana", author=ALICE)
    approve(wiki, again.name, approver=BOB)
    synced = cli("sync")
    assert synced.exit_code == 0, synced.output
    assert "Ask Dana first." in _overview(wiki) and "[Rota](c.md)" in _overview(wiki)
