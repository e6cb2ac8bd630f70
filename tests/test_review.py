"""Review tools: per-field diff, review hash, rejection kept, log and history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git

from wiki.errors import NotFoundError, ReviewChangedError
from wiki.review.diff import proposal_diff
from wiki.review.history import history, log
from wiki.review.proposals import approve, get_proposal, list_proposals, propose, reject
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

CAROL = Identity("Carol", "carol@example.com")


def _land(wiki: Wiki, changes: dict[str, str | None], who: Identity = ALICE) -> str:
    proposal = propose(wiki, {p: (t.encode() if t is not None else None)
                                 for p, t in changes.items()},
                          base=None, kind="edit", subject="edit", author=who).proposal
    approve(wiki, proposal.name, approver=BOB)
    return proposal.name


def test_diff_shows_fields_and_body(wiki: Wiki) -> None:
    _land(wiki, {"hr/leave.md": entry_text("lv", "Leave", "Ten days.", summary="Old.")})
    proposal = propose(wiki, {
        "hr/leave.md": entry_text("lv", "Leave", "Twelve days.", summary="New.").encode(),
        "hr/new.md": entry_text("nw", "New entry", "Body.").encode(),
    }, base=None, kind="edit", subject="more leave", author=ALICE).proposal
    result = proposal_diff(wiki, proposal.name)
    kinds = {c.path: c.kind for c in result.changes}
    assert kinds == {"hr/leave.md": "modified", "hr/new.md": "added"}
    leave = next(c for c in result.changes if c.path == "hr/leave.md")
    assert [(f.field, f.old, f.new) for f in leave.fields] == [("summary", "Old.", "New.")]
    assert "-Ten days." in leave.body_diff and "+Twelve days." in leave.body_diff
    assert len(result.review_hash) == 64  # the full sha256: --expect needs >= 12 digits


def test_approve_refuses_when_the_proposal_changed_after_review(wiki: Wiki) -> None:
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "v1").encode()},
                          base=None, kind="edit", subject="a", author=ALICE).proposal
    reviewed = proposal_diff(wiki, proposal.name).review_hash
    # the author pushes another commit onto the proposal after the review
    tip = wiki.snapshot(proposal.tip)
    tree = wiki.store.write_tree(tip.files, {"a.md": entry_text("a1", "A", "v2").encode()})
    commit = wiki.store.commit(tree, [proposal.tip], "sneaky", author=ALICE)
    wiki.store.update_ref(proposal.ref, commit, proposal.tip, "amend")
    with pytest.raises(ReviewChangedError, match="changed since it was reviewed"):
        approve(wiki, proposal.name, approver=BOB, expect=reviewed)
    fresh = proposal_diff(wiki, proposal.name).review_hash
    landing = approve(wiki, proposal.name, approver=BOB, expect=fresh)
    assert f"Wiki-Reviewed-Diff: {fresh}" in git(wiki.root, "log", "-1", "--format=%B",
                                                 landing.commit)


def test_rejected_proposal_is_kept_with_its_reason(wiki: Wiki) -> None:
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()},
                          base=None, kind="edit", subject="a", author=ALICE).proposal
    with acting_as(BOB):
        ref = reject(wiki, proposal.name, "duplicates hr/leave")
    assert ref == "refs/heads/wiki-rejected/" + proposal.name
    assert list_proposals(wiki) == []
    with pytest.raises(NotFoundError):
        get_proposal(wiki, proposal.name)
    message = git(wiki.root, "log", "-1", "--format=%B", ref)
    assert "duplicates hr/leave" in message and "Rejected-by: Bob Reviewer" in message
    assert git(wiki.root, "rev-parse", f"{ref}^") == proposal.tip  # nothing lost


def test_a_reject_that_cannot_close_the_proposal_writes_nothing(wiki: Wiki) -> None:
    """The rejected ref and the proposal's deletion are one ref transaction (as approve's
    landing is). Before, the rejected ref was made first: when the deletion then failed
    (here a held ref lock; in the field an approve landing in between), the proposal was
    left both open (or landed) and rejected."""
    from wiki.errors import ProposalClosedError

    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()},
                          base=None, kind="edit", subject="a", author=ALICE).proposal
    lock = Path(wiki.repo.common_dir) / (proposal.ref + ".lock")
    lock.write_text("held by another git process\n")
    with acting_as(BOB), pytest.raises(ProposalClosedError, match="nothing was written"):
        reject(wiki, proposal.name, "duplicates hr/leave")
    lock.unlink()
    assert git(wiki.root, "for-each-ref", "refs/heads/wiki-rejected/") == ""
    assert [p.name for p in list_proposals(wiki)] == [proposal.name]


def test_log_and_history_follow_renames(wiki: Wiki) -> None:
    _land(wiki, {"a/old.md": entry_text("ren1", "Renamed", "Original text here.")})
    _land(wiki, {"a/old.md": entry_text("ren1", "Renamed", "Original text here, edited.")},
          who=CAROL)
    text = wiki.snapshot().read("a/old.md").decode()
    _land(wiki, {"a/old.md": None, "b/new.md": text})
    landings = log(wiki)
    assert len(landings) == 4  # three landings and init
    assert landings[0].approved_by == "Bob Reviewer <bob@example.com>"
    assert landings[-1].subject.startswith("wiki: initialise")
    entry_id, revisions = history(wiki, "ren1")
    assert entry_id == "ren1"
    assert [(r.change, r.path) for r in revisions] == [
        ("renamed", "b/new.md"), ("modified", "a/old.md"), ("added", "a/old.md")]
    assert revisions[1].landing.proposed_by == "Carol <carol@example.com>"


def test_cli_diff_reject_log_history(cli, wiki: Wiki) -> None:
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()},
                          base=None, kind="edit", subject="a", author=ALICE).proposal
    shown = cli("diff", proposal.name)
    assert shown.exit_code == 0 and "added    a.md (a1) A" in shown.stdout
    review = json.loads(cli("diff", proposal.name, "--json").stdout)["review_hash"]
    with acting_as(BOB):
        assert cli("approve", proposal.name, "--expect", "0000").exit_code == 2  # too short
        assert cli("approve", proposal.name, "--expect", "0" * 12).exit_code == 4
        assert cli("approve", proposal.name, "--expect", review).exit_code == 0
    assert "a1" in json.loads(cli("history", "a1", "--json").stdout)["id"]
    assert len(json.loads(cli("log", "--json").stdout)) == 2
    other = propose(wiki, {"b.md": entry_text("b1", "B", "y").encode()},
                       base=None, kind="edit", subject="b", author=ALICE).proposal
    assert cli("reject", other.name).exit_code == 2  # a reason is required
    assert cli("reject", other.name, "--reason", "not needed").exit_code == 0
