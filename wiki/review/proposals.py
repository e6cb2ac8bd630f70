"""Proposals: every change is a branch off the wiki head that another person approves.

A proposal is ``refs/heads/<wiki>-proposals/<name>``: one or more commits on top of the
wiki head it was made from (its base, also recorded as a ``Wiki-Base:`` trailer). Landing
creates a merge commit on the wiki branch (parents: the wiki head, the proposal tip) with
``Proposed-by:``, ``Approved-by:`` and ``Wiki-Proposal:`` trailers and moves the branch by
compare-and-swap. If the wiki moved since the base, the proposal still lands when no path
it touches was also changed on the wiki; otherwise it is refused as stale and kept.
Rejecting one moves it to ``refs/heads/<wiki>-rejected/<name>`` (:func:`reject`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from wiki.errors import (
    BranchCheckedOutError,
    ConfigError,
    NotFoundError,
    ProposalClosedError,
    RefMovedError,
    ReviewChangedError,
    SelfApprovalError,
    StaleProposalError,
)
from wiki.review import approval_policy, overviews
from wiki.review.change_key import change_key
from wiki.review.check import ReviewFlag, check
from wiki.review.gate import (
    MIN_EXPECT_DIGITS,
    expected_hash,
    override_reason,
    override_trailers,
    review_hash,
)
from wiki.review.metadata import escaped
from wiki.review.names import command_line, unreadable
from wiki.review.tree import check_ids, check_landing, merged_tree
from wiki.safety.scan import Flag, screen, screen_changes
from wiki.store import indextree
from wiki.store.derived import refresh
from wiki.store.gitrepo import Identity, authored_at, current_committer, current_identity
from wiki.store.locking import write_lock
from wiki.store.snapshot import Snapshot, with_indexes
from wiki.store.workspace import Wiki

BASE_TRAILER = "Wiki-Base"
APPROVAL_TRAILER = "Wiki-Approval"
REVIEWED_TRAILER = "Wiki-Reviewed-Diff"
PROPOSAL_TRAILER = "Wiki-Proposal"
FLAG_TRAILER = "Wiki-Flag"
CHANGE_TRAILER = "Wiki-Change"
CONFLICT_TRAILER = "Wiki-Conflict"
MAX_FLAGS = 100
LAND_ATTEMPTS = 5


@dataclass
class Proposal:
    """An open proposal: ``name`` (its id), ``tip`` and ``base`` commits, the first line
    of its message (``subject``), everyone who authored or committed it (``authors``),
    when it was made (``created``, UTC) and the paths it changes (``paths``, index.md
    excluded). ``stale`` is true when the wiki head is no longer its base."""

    name: str
    ref: str
    tip: str
    base: str
    subject: str
    authors: list[Identity]
    created: dt.datetime
    paths: list[str] = field(default_factory=list)
    stale: bool = False
    approvals: list[tuple[Identity, str]] = field(default_factory=list)
    """``(approver, review hash they approved)`` recorded so far (``approvals_required``
    above 1); an approval of an older state of the proposal no longer counts."""
    flags: list[ReviewFlag] = field(default_factory=list)
    """What the review check (:mod:`wiki.review.check`) found in ``base..tip``, computed
    from the commits themselves (``Wiki-Flag:`` trailers are never trusted). ``approve``
    refuses a flagged proposal unless overridden."""
    change: str = ""
    """The ``Wiki-Change:`` key of what it changes (:func:`change_key`; empty for proposals
    made before it existed)."""
    conflicts: list[str] = field(default_factory=list)
    """``Wiki-Conflict:`` trailers: e.g. ``docs/a.md: hand-edited since compiled`` for an
    entry an ingest left alone because someone edited it since it was compiled."""


@dataclass(frozen=True)
class ProposalOpened:
    """What :func:`propose` did: the ``proposal`` it opened (``created``), or the open one
    that already makes the same change (``created`` false). ``proposal`` is ``None`` only
    where a caller found nothing to propose (``wiki feedback``, ``wiki lint --fix``)."""

    proposal: Proposal | None
    created: bool = False


@dataclass
class Landing:
    """The result of an approval: the new wiki ``commit`` and whether the proposal was
    ``merged`` onto a wiki head that had moved since its base."""

    proposal: str
    commit: str | None
    merged: bool
    approver: Identity
    landed: bool = True
    approvals: int = 1


def propose(wiki: Wiki, changes: Mapping[str, bytes | None], *, base: str | None,
            kind: str, subject: str, body: str = "", author: Identity | None = None,
            redact: bool = False) -> ProposalOpened:
    """Record ``changes`` (path -> new bytes, ``None`` deletes) as a proposal built on
    ``base``, the wiki commit the caller read when it computed them (docs/review.md;
    required, ``None`` = the head read now). If the wiki moved since, the proposal is
    behind (``stale``): it lands only by approve's clean merge, else ``wiki rebase``.
    ``ConfigError`` when ``base`` is not a commit of the wiki branch.

    Returns a :class:`ProposalOpened`; ``created`` is false when an open proposal makes the
    same change (its ``Wiki-Change:`` key, :mod:`wiki.review.change_key`), returned instead;
    checked and created under the write lock (:mod:`wiki.store.locking`, ``WriterBusyError``).
    Changes that leave a path as it is at ``base`` are dropped; ``ValueError`` if nothing
    is left (callers check first).

    Every proposal passes the write-time scan (:mod:`wiki.safety.scan`): a secret new in a file,
    a path or the message raises ``SecretError`` before anything is written (with
    ``redact``, secrets are replaced by ``[REDACTED:<kind>]`` instead); instruction-like
    content is recorded as ``Wiki-Flag:`` trailers, listed in ``proposal.flags``."""
    head = wiki.require_head()
    base = head if base is None else wiki.resolve_base(base)
    snapshot = wiki.snapshot(base)
    effective = {p: d for p, d in changes.items() if snapshot.read(p) != d}
    if not effective:
        raise ValueError("no changes to propose")
    # generated index.md files only repeat entries' titles and summaries, screened as entries
    screened, flags = screen_changes({p: d for p, d in effective.items()
                                      if p.rpartition("/")[2] != indextree.INDEX_NAME},
                                     snapshot.read, redact_secrets=redact)
    effective.update(screened)
    subject, found = screen(subject, "the proposal's subject", redact_secrets=redact)
    body, more = screen(body, "the proposal's message", redact_secrets=redact)
    flags += [Flag(f.rule, f.kind, "commit-message", f.line, f.column) for f in found + more]
    # the committer is whoever runs this (GIT_COMMITTER_*), so changing only the author
    # variables cannot hide the proposer from the approval rule (wiki.review.approval_policy)
    committer = author or current_committer(wiki.repo)
    author = author or current_identity(wiki.repo)
    tree = wiki.store.write_tree(snapshot.files, with_indexes(snapshot, effective))
    key = change_key(snapshot, effective)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    name = f"{kind}-{stamp}-{hashlib.sha1(f'{base} {tree}'.encode()).hexdigest()[:7]}"
    message = (f"{subject}\n\n{body.strip()}\n\n" if body.strip() else f"{subject}\n\n")
    message += "".join(f"{FLAG_TRAILER}: {flag}\n" for flag in flags[:MAX_FLAGS])
    message += f"{PROPOSAL_TRAILER}: {name}\n{BASE_TRAILER}: {base}\n{CHANGE_TRAILER}: {key}\n"
    commit = wiki.store.commit(tree, [base], message, author=author, committer=committer,
                               sign=approval_policy.signing(wiki))
    with write_lock(wiki.state_dir):
        for existing in list_proposals(wiki):
            if existing.change == key or (existing.base == base and
                                          wiki.repo.commit(existing.tip).tree.hexsha == tree):
                return ProposalOpened(existing, False)
        wiki.store.update_ref(wiki.proposal_prefix + name, commit, None, f"wiki propose {name}")
    return ProposalOpened(get_proposal(wiki, name), True)


def list_proposals(wiki: Wiki) -> list[Proposal]:
    """Open proposals, oldest first (a branch whose tip is already in the wiki is not
    open). A branch whose name does not read as itself (:func:`wiki.review.names.unreadable`)
    is not a proposal: :func:`unlisted_proposals` names it. Raises ``NotInitializedError``
    without a wiki."""
    head = wiki.require_head()
    refs = wiki.store.list_refs(wiki.proposal_prefix)
    proposals = [_load(wiki, ref[len(wiki.proposal_prefix):], ref, tip)
                 for ref, tip in refs.items()
                 if unreadable(ref[len(wiki.proposal_prefix):]) is None
                 and not wiki.repo.is_ancestor(tip, head)]
    return sorted(proposals, key=lambda p: (p.created, p.name))


def unlisted_proposals(wiki: Wiki) -> list[tuple[str, str]]:
    """``(ref, why)`` for every branch under the proposal namespace that is not listed as
    a proposal because its name cannot be shown and typed as itself (bidi or invisible
    characters, not NFC, not UTF-8: :func:`wiki.review.names.unreadable`). ``ref`` is
    written with those characters escaped (:func:`wiki.review.metadata.escaped`)."""
    refs = wiki.store.list_refs(wiki.proposal_prefix)
    found = [(escaped(ref), unreadable(ref[len(wiki.proposal_prefix):])) for ref in refs]
    return [(ref, why) for ref, why in found if why is not None]


class ProposalLandedError(ProposalClosedError, NotFoundError):
    """The proposal named is not open because it already landed: the message names the
    landing commit. A :class:`NotFoundError` too (no open proposal of that name; exit 1)."""


def get_proposal(wiki: Wiki, name: str) -> Proposal:
    """The open proposal ``name``, spelt exactly as ``wiki proposals`` lists it (a full
    ref or branch name is accepted too). Only a branch git lists under the proposal
    namespace with exactly that name is found, so a name is never a path or an option
    (``-rf``, ``..``). Raises :class:`ProposalLandedError` naming the landing commit when
    it already landed on the wiki branch, else :class:`NotFoundError` (also for a name
    :func:`wiki.review.names.unreadable` refuses)."""
    name = name.removeprefix(wiki.proposal_prefix).removeprefix(
        wiki.proposal_prefix.removeprefix("refs/heads/"))
    ref = wiki.proposal_prefix + name
    readable = unreadable(name) is None
    tip = wiki.store.list_refs(ref).get(ref) if readable else None
    if tip is None:
        landed = _landed_as(wiki, name) if readable else None
        if landed is not None:
            raise ProposalLandedError(f"proposal {escaped(name)!r} already landed (as "
                                      f"{landed[:12]})")
        raise NotFoundError(f"no open proposal named {escaped(name)!r} (see `wiki proposals`)")
    return _load(wiki, name, ref, tip)


def _landed_as(wiki: Wiki, name: str) -> str | None:
    """The commit of the wiki branch that landed proposal ``name`` (its message starts
    ``Land proposal NAME:``, :func:`approve`), or ``None``."""
    head = wiki.head()
    if head is None:
        return None
    found = wiki.repo.git.rev_list(head, "-1", "--fixed-strings",
                                   f"--grep=Land proposal {name}:")
    return found.strip() or None


def _load(wiki: Wiki, name: str, ref: str, tip: str) -> Proposal:
    head = wiki.head()
    commit = wiki.repo.commit(tip)
    base = None
    for item in wiki.repo.iter_commits(tip, first_parent=True, max_count=50):
        base = _trailer(item.message, BASE_TRAILER)
        if base:
            break
    # the trailer is written by whoever made the branch: it counts only for a commit of the
    # wiki itself, else a base naming the proposer's own commit hides it from review
    if (base is None or not wiki.repo.is_ancestor(base, tip)
            or (head is not None and not wiki.repo.is_ancestor(base, head))):
        merge_base = wiki.repo.merge_base(tip, head) if head else []
        base = merge_base[0].hexsha if merge_base else tip
    # the proposal's own commits, newest first (one `git rev-list` for all that follows)
    commits = list(wiki.repo.iter_commits(f"{base}..{tip}"))
    authors: list[Identity] = []
    approvals: list[tuple[Identity, str]] = []
    for item in commits:
        if approval_policy.is_approval_record(item):
            approvals.append((Identity(item.author.name or "", item.author.email or ""),
                              _trailer(item.message, REVIEWED_TRAILER) or ""))
            continue
        for actor in (item.author, item.committer):
            identity = Identity(actor.name or "", actor.email or "")
            if identity not in authors:
                authors.append(identity)
    if approval_policy.is_approval_record(commit):
        commit = next((c for c in wiki.repo.iter_commits(tip, first_parent=True)
                       if not approval_policy.is_approval_record(c)), commit)
    first = min((authored_at(c) for c in commits), default=authored_at(commit))
    paths = sorted(overviews.changed(wiki.store, wiki.store.files(base), wiki.store.files(tip)))
    first_message = commits[-1].message if commits else ""  # the oldest commit's
    return Proposal(name, ref, tip, base, commit.summary, authors,
                    first, paths, stale=head != base, approvals=approvals,
                    flags=check(wiki, base, tip, ref),
                    change=_trailer(first_message, CHANGE_TRAILER) or "",
                    conflicts=_trailers(first_message, CONFLICT_TRAILER))


def _trailer(message: str, key: str) -> str | None:
    return next(iter(_trailers(message, key)), None)


def _trailers(message: str, key: str) -> list[str]:
    return [line.split(":", 1)[1].strip() for line in message.splitlines()
            if line.startswith(key + ":")]


def approve(wiki: Wiki, name: str, approver: Identity | None = None, *,
            expect: str | None = None, override: str | None = None) -> Landing:
    """Land proposal ``name`` on the wiki branch with compare-and-swap.

    Raises :class:`SelfApprovalError` when the approver authored or committed any of its
    commits (unless ``[review] allow_self_approval``) and ``SignaturePolicyError`` when
    ``[review] require_signatures`` is not met (:mod:`wiki.review.approval_policy`; the landing
    commit is then signed by the approver), :class:`StaleProposalError` when a
    path it changes also changed on the wiki since its base, and :class:`RefMovedError`
    after :data:`LAND_ATTEMPTS` lost races. With ``expect``, refuses
    (:class:`ReviewChangedError`) unless the proposal's review hash still equals it. The
    proposal branch is deleted once landed; its commits stay reachable from the history.
    ``expect`` must be the full hash or a prefix of at least :data:`MIN_EXPECT_DIGITS` hex
    digits (:class:`ConfigError` otherwise).

    A proposal the review check flagged (``proposal.flags``) is refused with
    :class:`ReviewFlaggedError` unless ``override`` gives a reason; the reason and every
    overridden flag are recorded as ``Wiki-Override:`` / ``Wiki-Overridden-Flag:`` trailers
    of the landing commit. Secrets cannot be overridden, nor objects git's fsck refuses
    (``R010``, :func:`wiki.review.tree.check_landing`, :func:`wiki.review.tree.merged_tree`).
    """
    wanted = expected_hash(expect) if expect is not None else None
    proposal = get_proposal(wiki, name)
    _check_open(wiki, proposal)
    reviewed = review_hash(wiki, proposal)
    if wanted is not None and not reviewed.startswith(wanted):
        raise ReviewChangedError(
            f"proposal {proposal.name} changed since it was reviewed, or the hash is mistyped "
            f"(review hash {reviewed}, expected {expect}); run "
            f"`{command_line('diff', proposal.name)}` again")
    approver = approval_policy.check_approver(wiki, proposal, approver, reviewed)
    reason = override_reason(proposal, override)
    where = wiki.checked_out_in(wiki.ref)
    if where is not None:
        raise BranchCheckedOutError(
            f"the wiki branch '{wiki.branch}' is checked out in {where}; landing would make "
            "that worktree revert it on its next commit — use `git worktree add --detach` "
            "to browse the wiki, or switch that worktree away first")
    review = wiki.config().review
    valid = [who for who, seen in proposal.approvals
             if len(seen) >= MIN_EXPECT_DIGITS and reviewed.startswith(seen)]
    if approver.key() in {who.key() for who in valid}:
        raise SelfApprovalError(f"{approver} already approved proposal {proposal.name}; "
                                f"it needs {review.approvals_required} different approvers")
    if len(valid) + 1 < review.approvals_required:
        return _record_approval(wiki, proposal, approver, reviewed, len(valid) + 1)
    approvers = [*valid, approver]
    tip_files = wiki.store.files(proposal.tip)
    base_files = wiki.store.files(proposal.base)
    ours = overviews.changed(wiki.store, base_files, tip_files)  # index.md: its overview
    check_ids(wiki, proposal.name, tip_files, ours)
    for _ in range(LAND_ATTEMPTS):
        head = wiki.require_head()
        merged = head != proposal.base
        if not merged:
            tree = wiki.repo.commit(proposal.tip).tree.hexsha
        else:
            snapshot = Snapshot(wiki.store, head)
            theirs = overviews.changed(wiki.store, base_files, snapshot.files)
            conflicts = sorted(p for p in ours & theirs if not overviews.same(
                wiki.store, p, tip_files.get(p), snapshot.files.get(p)))
            if conflicts:
                raise StaleProposalError(
                    f"proposal {proposal.name} is stale: {', '.join(conflicts[:5])}"
                    f"{' ...' if len(conflicts) > 5 else ''} changed on the wiki since its "
                    f"base; it is kept — try `{command_line('rebase', proposal.name)}`")
            changes = {p: (wiki.store.read(tip_files[p].sha) if p in tip_files else None)
                       for p in ours}
            tree = merged_tree(wiki, proposal.name, snapshot, changes)
        # everything copied from the proposal is escaped: no control, bidi or newline of a
        # hand-made subject or identity reaches the wiki's history (wiki.review.metadata)
        proposers = ", ".join(escaped(str(a)) for a in proposal.authors) or "unknown"
        message = (f"Land proposal {escaped(proposal.name)}: {escaped(proposal.subject)}\n\n"
                   f"Proposed-by: {proposers}\n"
                   + "".join(f"Approved-by: {escaped(str(who))}\n" for who in approvers) +
                   f"{PROPOSAL_TRAILER}: {escaped(proposal.name)}\n"
                   f"{REVIEWED_TRAILER}: {reviewed}\n"
                   + override_trailers(proposal, reason))
        commit = wiki.store.commit(tree, [head, proposal.tip], message, author=approver,
                                   sign=approval_policy.signing(wiki))
        check_landing(wiki, proposal.name, commit, head)
        try:  # the wiki moves and the proposal closes in one atomic ref transaction
            with write_lock(wiki.state_dir):  # one writer at a time (wiki.store.locking)
                wiki.store.update_refs([(wiki.ref, commit, head),
                                        (proposal.ref, None, proposal.tip)],
                                       f"wiki approve {proposal.name}")
        except RefMovedError:
            if wiki.store.resolve(proposal.ref) != proposal.tip:
                raise ProposalClosedError(
                    f"proposal {proposal.name} was landed, rejected or changed by someone "
                    "else meanwhile; nothing was written") from None
            continue
        refresh(wiki)  # status and lint read the landed state at once (wiki.store.derived)
        return Landing(proposal.name, commit, merged, approver, approvals=len(approvers))
    raise RefMovedError(f"the wiki branch kept moving; proposal {proposal.name} was not "
                        f"landed after {LAND_ATTEMPTS} attempts — run `wiki approve` again")


def _check_open(wiki: Wiki, proposal: Proposal) -> None:
    """Refuse a proposal that already landed or was rejected (e.g. fetched back by sync)."""
    head = wiki.require_head()
    if wiki.repo.is_ancestor(proposal.tip, head):
        raise ProposalClosedError(f"proposal {proposal.name} has already landed on the wiki")
    rejected = wiki.store.resolve(rejected_prefix(wiki) + proposal.name)
    if rejected and wiki.repo.is_ancestor(proposal.tip, rejected):
        raise ProposalClosedError(f"proposal {proposal.name} was rejected (see `git log -1 "
                                  f"{rejected_prefix(wiki)}{proposal.name}`)")


def _record_approval(wiki: Wiki, proposal: Proposal, approver: Identity, reviewed: str,
                     count: int) -> Landing:
    """Add an approval record (a commit with the same tree) to the proposal branch."""
    tree = wiki.repo.commit(proposal.tip).tree.hexsha
    message = (f"Approve proposal {proposal.name} ({count} of the approvals needed)\n\n"
               f"{APPROVAL_TRAILER}: {approver}\n{REVIEWED_TRAILER}: {reviewed}\n"
               f"{BASE_TRAILER}: {proposal.base}\n")
    commit = wiki.store.commit(tree, [proposal.tip], message, author=approver,
                               sign=approval_policy.signing(wiki))
    wiki.store.update_ref(proposal.ref, commit, proposal.tip, f"wiki approve {proposal.name}")
    return Landing(proposal.name, None, False, approver, landed=False, approvals=count)


def rejected_prefix(wiki: Wiki) -> str:
    """Where rejected proposals are kept: ``refs/heads/<wiki>-rejected/``."""
    return f"refs/heads/{wiki.branch}-rejected/"


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
