"""Review: different-identity approval, CAS landing, stale refusal (ROBUSTNESS W1-W3)."""

from __future__ import annotations

import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git

from wiki.errors import NotFoundError, SelfApprovalError, StaleProposalError
from wiki.review.proposals import approve, get_proposal, list_proposals, propose
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

CAROL = Identity("Carol", "carol@example.com")


def _propose(wiki: Wiki, path: str, text: str, who: Identity = ALICE):
    opened = propose(wiki, {path: text.encode()}, base=None, kind="edit",
                                subject=f"edit {path}", author=who)
    proposal, created = opened.proposal, opened.created
    assert created
    return proposal


def test_proposal_is_a_branch_off_the_wiki_head(wiki: Wiki) -> None:
    head = wiki.head()
    proposal = _propose(wiki, "notes/a.md", entry_text("a1", "A", "alpha"))
    assert wiki.head() == head  # nothing lands by proposing
    assert proposal.base == head and not proposal.stale
    assert proposal.paths == ["notes/a.md"]
    assert proposal.authors == [ALICE]
    assert git(wiki.root, "rev-parse", f"wiki-proposals/{proposal.name}") == proposal.tip
    assert f"Wiki-Base: {head}" in git(wiki.root, "log", "-1", "--format=%B", proposal.tip)
    assert [p.name for p in list_proposals(wiki)] == [proposal.name]


@pytest.mark.robustness("W3")
def test_self_approval_is_refused_and_nothing_lands(wiki: Wiki) -> None:
    head = wiki.head()
    proposal = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    with pytest.raises(SelfApprovalError, match="authored or committed"):
        approve(wiki, proposal.name, approver=Identity("Alice on laptop", "ALICE@example.com"))
    assert wiki.head() == head
    assert get_proposal(wiki, proposal.name).tip == proposal.tip


@pytest.mark.robustness("W3")
def test_a_committer_cannot_approve_either(wiki: Wiki) -> None:
    head = wiki.require_head()
    snapshot = wiki.snapshot(head)
    tree = wiki.store.write_tree(snapshot.files, {"a.md": entry_text("a1", "A", "x").encode()})
    commit = wiki.store.commit(tree, [head], f"edit\n\nWiki-Base: {head}\n", author=ALICE,
                               committer=CAROL)
    wiki.store.update_ref(wiki.proposal_prefix + "manual-1", commit, None, "t")
    with pytest.raises(SelfApprovalError):
        approve(wiki, "manual-1", approver=CAROL)


def test_approval_by_someone_else_lands_with_trailers(wiki: Wiki) -> None:
    head = wiki.head()
    proposal = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    landing = approve(wiki, proposal.name, approver=BOB)
    assert wiki.head() == landing.commit and not landing.merged
    message = git(wiki.root, "log", "-1", "--format=%B", landing.commit)
    assert "Proposed-by: Alice Author <alice@example.com>" in message
    assert "Approved-by: Bob Reviewer <bob@example.com>" in message
    assert f"Wiki-Proposal: {proposal.name}" in message
    parents = git(wiki.root, "log", "-1", "--format=%P", landing.commit).split()
    assert parents == [head, proposal.tip]
    assert list_proposals(wiki) == []
    with pytest.raises(NotFoundError):
        get_proposal(wiki, proposal.name)


def test_approve_uses_the_identity_git_resolves(wiki: Wiki) -> None:
    proposal = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    with pytest.raises(SelfApprovalError):
        approve(wiki, proposal.name)  # the environment says Alice
    with acting_as(BOB):
        landing = approve(wiki, proposal.name)
    assert landing.approver == BOB


@pytest.mark.robustness("W2")
def test_two_proposals_on_the_same_entry_second_is_stale_and_kept(wiki: Wiki) -> None:
    _propose_and_land = _propose(wiki, "a.md", entry_text("a1", "A", "v1"))
    approve(wiki, _propose_and_land.name, approver=BOB)
    first = _propose(wiki, "a.md", entry_text("a1", "A", "v2 from first"))
    second = _propose(wiki, "a.md", entry_text("a1", "A", "v2 from second"), who=CAROL)
    approve(wiki, first.name, approver=BOB)
    head = wiki.head()
    with pytest.raises(StaleProposalError, match="a.md"):
        approve(wiki, second.name, approver=BOB)
    assert wiki.head() == head
    assert b"v2 from first" in wiki.snapshot().read("a.md")
    kept = get_proposal(wiki, second.name)
    assert kept.stale and kept.tip == second.tip


def test_disjoint_proposals_merge_onto_a_moved_wiki(wiki: Wiki) -> None:
    first = _propose(wiki, "x/a.md", entry_text("a1", "A", "alpha"))
    second = _propose(wiki, "x/b.md", entry_text("b1", "B", "beta"), who=CAROL)
    approve(wiki, first.name, approver=BOB)
    landing = approve(wiki, second.name, approver=BOB)
    assert landing.merged
    snapshot = wiki.snapshot()
    assert {"x/a.md", "x/b.md"} <= set(snapshot.files)
    index = snapshot.read("x/index.md").decode()
    assert "[A](a.md)" in index and "[B](b.md)" in index  # regenerated after the merge


@pytest.mark.robustness("W1")
def test_identical_proposal_is_a_noop_that_names_the_first(wiki: Wiki) -> None:
    opened = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()},
                             base=None, kind="edit", subject="s", author=ALICE)
    first, created = opened.proposal, opened.created
    opened = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()},
                                   base=None, kind="edit", subject="s", author=ALICE)
    again, created_again = opened.proposal, opened.created
    assert created and not created_again and again.name == first.name
    assert len(list_proposals(wiki)) == 1


def test_proposing_nothing_new_is_refused(wiki: Wiki) -> None:
    with pytest.raises(ValueError):
        propose(wiki, {"wiki.toml": wiki.snapshot().read("wiki.toml")}, base=None, kind="edit",
                subject="same", author=ALICE)


def test_self_approval_can_be_allowed_for_a_one_person_wiki(wiki: Wiki) -> None:
    toml = wiki.snapshot().read("wiki.toml").decode().replace(
        "allow_self_approval = false", "allow_self_approval = true")
    config = _propose(wiki, "wiki.toml", toml)
    approve(wiki, config.name, approver=BOB, override="a one-person wiki")  # R008 flag
    mine = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    assert approve(wiki, mine.name, approver=ALICE).commit == wiki.head()


def test_two_approvals_required(wiki: Wiki) -> None:
    toml = wiki.snapshot().read("wiki.toml").decode().replace(
        "approvals_required = 1", "approvals_required = 2")
    config = _propose(wiki, "wiki.toml", toml)
    approve(wiki, config.name, approver=BOB, override="two reviewers from now on")  # R009
    head = wiki.head()
    proposal = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    first = approve(wiki, proposal.name, approver=BOB)
    assert not first.landed and first.approvals == 1 and wiki.head() == head
    with pytest.raises(SelfApprovalError, match="already approved"):
        approve(wiki, proposal.name, approver=BOB)
    reloaded = get_proposal(wiki, proposal.name)
    assert reloaded.authors == [ALICE]  # the approval record is not authorship
    assert [who for who, _ in reloaded.approvals] == [BOB]
    landing = approve(wiki, proposal.name, approver=CAROL)
    assert landing.landed and landing.approvals == 2
    message = git(wiki.root, "log", "-1", "--format=%B", landing.commit)
    assert "Approved-by: Bob Reviewer <bob@example.com>\nApproved-by: Carol <carol@example.com>" \
        in message


@pytest.mark.robustness("W4")
def test_same_proposal_approved_twice_at_once_lands_once(wiki: Wiki) -> None:
    import threading

    from wiki.errors import NotFoundError, ProposalClosedError, RefMovedError
    proposal = _propose(wiki, "a.md", entry_text("a1", "A", "x"))
    outcomes: list[str] = []

    def attempt(who: Identity) -> None:
        try:
            approve(Wiki(wiki.root), proposal.name, approver=who)
            outcomes.append("landed")
        except (ProposalClosedError, NotFoundError, RefMovedError) as exc:
            outcomes.append(type(exc).__name__)

    threads = [threading.Thread(target=attempt, args=(who,)) for who in
               (BOB, CAROL, Identity("Dave", "dave@example.com"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outcomes.count("landed") == 1
    log = git(wiki.root, "log", "--first-parent", "--format=%s", "wiki")
    assert log.count(f"Land proposal {proposal.name}") == 1


def test_an_id_is_never_given_to_two_entries(wiki: Wiki) -> None:
    from wiki.errors import DuplicateIdError
    one = _propose(wiki, "a/x.md", entry_text("shared", "One", "1"))
    two = _propose(wiki, "b/y.md", entry_text("shared", "Two", "2"), who=CAROL)
    approve(wiki, one.name, approver=BOB)
    with pytest.raises(DuplicateIdError, match="reuses id 'shared' of a/x.md"):
        approve(wiki, two.name, approver=BOB)
