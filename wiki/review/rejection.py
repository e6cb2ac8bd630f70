"""Closing a proposal without landing it: the branch moves to
``refs/heads/<wiki>-rejected/<name>`` with a commit saying who rejected it and why."""

from __future__ import annotations

from wiki.errors import (
    BranchCheckedOutError,
    ConfigError,
    ProposalClosedError,
    RefMovedError,
)
from wiki.review.metadata import escaped
from wiki.review.proposals import PROPOSAL_TRAILER, get_proposal, rejected_prefix
from wiki.safety.scan import screen
from wiki.store.gitrepo import Identity, current_identity
from wiki.store.locking import write_lock
from wiki.store.workspace import Wiki


def reject(wiki: Wiki, name: str, reason: str, rejecter: Identity | None = None) -> str:
    """Close proposal ``name`` without landing it. Nothing is deleted: a commit recording
    who rejected it and why is added on top, and the branch moves to
    ``refs/heads/<wiki>-rejected/<name>`` in one ref transaction under the write lock, as
    approve lands (so a concurrent approve and reject cannot both win: before, the
    rejected ref was made and the proposal deleted in two steps, and a landing between
    them left the proposal landed and rejected). Returns that ref. Raises
    ``NotFoundError``, ``ConfigError`` for an empty reason, ``SecretError`` for a secret
    in it and ``ProposalClosedError`` when the proposal moved or closed meanwhile."""
    if not reason.strip():
        raise ConfigError("a rejection needs a reason (--reason TEXT)")
    reason, _ = screen(reason, "the rejection reason")
    proposal = get_proposal(wiki, name)
    where = wiki.checked_out_in(proposal.ref)
    if where is not None:
        raise BranchCheckedOutError(f"proposal {proposal.name} is checked out in {where}; "
                                    "switch that worktree away before rejecting it")
    rejecter = rejecter or current_identity(wiki.repo)
    tree = wiki.repo.commit(proposal.tip).tree.hexsha
    message = (f"Reject proposal {escaped(proposal.name)}: {escaped(proposal.subject)}\n\n"
               f"{reason.strip()}\n\nRejected-by: {rejecter}\n"
               f"{PROPOSAL_TRAILER}: {escaped(proposal.name)}\n")
    commit = wiki.store.commit(tree, [proposal.tip], message, author=rejecter)
    target = rejected_prefix(wiki) + proposal.name
    try:
        with write_lock(wiki.state_dir):
            wiki.store.update_refs([(target, commit, None), (proposal.ref, None, proposal.tip)],
                                   f"wiki reject {proposal.name}")
    except RefMovedError:
        raise ProposalClosedError(f"proposal {proposal.name} was landed, rejected or changed "
                                  "by someone else meanwhile; nothing was written") from None
    return target
