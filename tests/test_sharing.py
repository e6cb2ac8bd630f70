"""Three people, two clones and a bare remote: the review workflow end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git

from wiki.answering.search import search_for
from wiki.errors import SelfApprovalError, StaleProposalError
from wiki.review.proposals import approve, get_proposal, propose
from wiki.review.rebase import rebase
from wiki.review.sharing import sync_remote
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

CAROL = Identity("Carol Contributor", "carol@example.com")
LEAVE = entry_text("lv", "Annual leave", "Line one.\nLine two.\nLine three.",
                   summary="Leave basics.")


def _clone(bare: Path, where: Path) -> Wiki:
    git(where.parent, "clone", "-q", str(bare), str(where))
    return Wiki(where)


@pytest.fixture
def team(tmp_path: Path, wiki: Wiki):
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(wiki.root, "remote", "add", "origin", str(bare))
    proposal = propose(wiki, {"hr/leave.md": LEAVE.encode()}, base=None, kind="seed", subject="seed",
                          author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    assert sync_remote(wiki).action == "created-remote"
    carol = _clone(bare, tmp_path / "carol")
    with acting_as(CAROL):
        assert sync_remote(carol).action == "created-local"
    return wiki, carol


@pytest.mark.robustness("W2")
def test_concurrent_edits_one_lands_other_stale_then_rebased(team) -> None:
    bobs, carols = team
    alice_edit = LEAVE.replace("summary: Leave basics.", "summary: Leave basics, updated.")
    first = propose(bobs, {"hr/leave.md": alice_edit.encode()}, base=None, kind="edit",
                       subject="summary", author=ALICE).proposal
    with acting_as(CAROL):
        carol_edit = LEAVE.replace("Line three.", "Line three, clarified.")
        second = propose(carols, {"hr/leave.md": carol_edit.encode()}, base=None, kind="edit",
                            subject="body").proposal
        assert sync_remote(carols).pushed == [f"wiki-proposals/{second.name}"]
    assert f"wiki-proposals/{second.name}" in sync_remote(bobs).fetched
    with pytest.raises(SelfApprovalError):
        approve(bobs, first.name, approver=ALICE)
    approve(bobs, first.name, approver=BOB)
    with pytest.raises(StaleProposalError):
        approve(bobs, second.name, approver=BOB)
    assert get_proposal(bobs, second.name).stale
    assert sync_remote(bobs).action == "pushed"
    with acting_as(CAROL):
        assert sync_remote(carols).action == "fast-forward"
        rebased = rebase(carols, second.name)
        assert rebased.base == carols.head()
        sync_remote(carols)
    sync_remote(bobs)
    approve(bobs, second.name, approver=BOB)
    text = bobs.snapshot().read("hr/leave.md").decode()
    assert "Leave basics, updated." in text and "Line three, clarified." in text


@pytest.mark.robustness("I1")
def test_robustness_i1_edits_and_deletions_pulled_from_a_remote_are_never_stale(team) -> None:
    bobs, carols = team

    def land(changes: dict[str, bytes | None]) -> None:  # by the tool, in the other clone
        proposal = propose(bobs, changes, base=None, kind="edit", subject="edit", author=ALICE).proposal
        approve(bobs, proposal.name, approver=BOB)
        git(bobs.root, "push", "-q", "origin", "wiki")

    def pull() -> None:  # plain git: fast-forward the local wiki branch
        git(carols.root, "fetch", "-q", "origin", "wiki:wiki")

    def keys(query: str) -> list[str]:
        return [h.key for h in search_for(carols, query).hits]

    assert keys("line two")[0] == "hr/leave.md"  # carol's index is built at this head
    body = "Line one.\nLine two.\nLine three."
    land({"hr/leave.md": LEAVE.replace(body, "Sabbaticals need a form.").encode(),
          "hr/gone.md": entry_text("gn", "Gone soon", "Okapis roam here.").encode()})
    pull()
    assert keys("sabbaticals form") == ["hr/leave.md"]
    assert keys("okapis") == ["hr/gone.md"]
    assert keys("line two") == []  # the old text is not served
    land({"hr/gone.md": None})
    pull()
    assert keys("okapis") == []
    assert search_for(carols, "okapis").commit == carols.head() == bobs.head()


def test_overlapping_edits_cannot_be_rebased(team) -> None:
    bobs, _ = team
    one = propose(bobs, {"hr/leave.md": LEAVE.replace("Line two.", "Line 2a.").encode()},
                     base=None, kind="edit", subject="a", author=ALICE).proposal
    two = propose(bobs, {"hr/leave.md": LEAVE.replace("Line two.", "Line 2b.").encode()},
                     base=None, kind="edit", subject="b", author=CAROL).proposal
    approve(bobs, one.name, approver=BOB)
    with pytest.raises(StaleProposalError, match="cannot be rebased"):
        rebase(bobs, two.name, rebaser=CAROL)
    assert get_proposal(bobs, two.name).tip == two.tip  # nothing moved


def test_force_pushed_remote_does_not_lose_local_landings(team, tmp_path: Path) -> None:
    bobs, carols = team
    with acting_as(CAROL):  # someone rewrites the remote's history
        git(carols.root, "worktree", "add", "-q", "--detach", str(tmp_path / "cw"), "wiki")
        (tmp_path / "cw" / "other.md").write_text(entry_text("ot", "Other", "Other text."))
        git(tmp_path / "cw", "add", "-A")
        git(tmp_path / "cw", "commit", "-q", "--amend", "-m", "rewritten")
        git(tmp_path / "cw", "push", "-q", "--force", "origin", "HEAD:refs/heads/wiki")
    mine = propose(bobs, {"hr/mine.md": entry_text("mn", "Mine", "Local.").encode()},
                      base=None, kind="edit", subject="local", author=ALICE).proposal
    approve(bobs, mine.name, approver=BOB)
    before = bobs.head()
    result = sync_remote(bobs)
    assert result.action == "merged" and result.rescue
    assert git(bobs.root, "rev-parse", result.rescue) == before
    files = bobs.snapshot().files
    assert {"hr/mine.md", "other.md"} <= set(files)
    assert git(bobs.root, "rev-parse", "origin/wiki") == bobs.head()


def test_conflicting_divergence_becomes_a_proposal(team, tmp_path: Path) -> None:
    bobs, carols = team
    with acting_as(CAROL):
        theirs = propose(carols, {"hr/leave.md": LEAVE.replace("Line one.", "Remote.")
                                     .encode()}, base=None, kind="edit", subject="remote").proposal
    approve(carols, theirs.name, approver=BOB)
    with acting_as(CAROL):
        sync_remote(carols)
    mine = propose(bobs, {"hr/leave.md": LEAVE.replace("Line one.", "Local.").encode()},
                      base=None, kind="edit", subject="local", author=ALICE).proposal
    approve(bobs, mine.name, approver=BOB)
    result = sync_remote(bobs)
    assert result.action == "conflict-proposal" and result.proposal
    assert b"Remote." in bobs.snapshot().read("hr/leave.md")
    kept = bobs.snapshot(get_proposal(bobs, result.proposal).tip).read("hr/leave.md")
    assert b"Local." in kept


def test_landed_and_rejected_proposals_stay_closed_across_clones(team) -> None:
    bobs, carols = team
    with acting_as(CAROL):
        landed = propose(carols, {"x/a.md": entry_text("xa", "A", "a").encode()},
                            base=None, kind="edit", subject="a").proposal
        dropped = propose(carols, {"x/b.md": entry_text("xb", "B", "b").encode()},
                             base=None, kind="edit", subject="b").proposal
        sync_remote(carols)
    sync_remote(bobs)
    approve(bobs, landed.name, approver=BOB)
    with acting_as(BOB):
        from wiki.review.proposals import reject
        reject(bobs, dropped.name, "not needed")
    result = sync_remote(bobs)
    assert sorted(result.closed) == sorted([f"wiki-proposals/{landed.name}",
                                            f"wiki-proposals/{dropped.name}"])
    with acting_as(CAROL):
        again = sync_remote(carols)
        assert sorted(again.closed) == sorted(result.closed)
        from wiki.review.proposals import list_proposals
        assert list_proposals(carols) == []
    from wiki.errors import NotFoundError, ProposalClosedError
    with pytest.raises((NotFoundError, ProposalClosedError)):
        approve(carols, dropped.name, approver=BOB)
    assert git(carols.root, "rev-parse", f"wiki-rejected/{dropped.name}^") == dropped.tip


def test_rebase_merges_entry_fields_and_updated_times(team, monkeypatch) -> None:
    bobs, _ = team
    base = bobs.snapshot().read("hr/leave.md").decode()
    one = base.replace("Line one.", "Line ONE.") + ""
    two = base.replace("Line three.", "Line THREE.")
    first = propose(bobs, {"hr/leave.md": (one.replace("title: Annual leave",
                       "title: Annual leave\nupdated: '2026-01-01T00:00:01Z'")).encode()},
                       base=None, kind="edit", subject="one", author=ALICE).proposal
    second = propose(bobs, {"hr/leave.md": (two.replace("title: Annual leave",
                        "title: Annual leave\nupdated: '2026-01-01T00:00:09Z'")).encode()},
                        base=None, kind="edit", subject="two", author=CAROL).proposal
    approve(bobs, first.name, approver=BOB)
    rebase(bobs, second.name, rebaser=CAROL)
    approve(bobs, second.name, approver=BOB)
    text = bobs.snapshot().read("hr/leave.md").decode()
    assert "Line ONE." in text and "Line THREE." in text
    assert "updated: '2026-01-01T00:00:09Z'" in text


def test_sync_refuses_to_move_a_checked_out_wiki(team, tmp_path: Path) -> None:
    bobs, _ = team
    git(bobs.root, "worktree", "add", "-q", str(tmp_path / "view"), "wiki")
    from wiki.errors import BranchCheckedOutError
    with pytest.raises(BranchCheckedOutError):
        sync_remote(bobs)


def test_unreachable_remote_is_a_clear_error(wiki: Wiki, tmp_path: Path) -> None:
    git(wiki.root, "remote", "add", "gone", str(tmp_path / "missing.git"))
    from wiki.errors import RemoteError
    with pytest.raises(RemoteError, match="remote 'gone' failed"):
        sync_remote(wiki, "gone")
