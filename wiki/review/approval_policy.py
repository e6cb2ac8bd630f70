"""Who may approve a proposal: the identity rule and the optional signature rule.

**Identity rule** (always, unless ``[review] allow_self_approval``). The approver is every
identity git resolves for them now (``GIT_AUTHOR_IDENT`` and ``GIT_COMMITTER_IDENT``:
environment, then config), or the identity a caller passes. None of them may be the same
person (:meth:`Identity.same_person`: the email compared without case and ``+tag``, or
the name compared without case and spacing) as the author or the committer of any
proposal commit, nor as an approver already recorded for the same review hash. Git
identities are self-declared, so this rule stops honest mistakes and casual tricks
(``GIT_AUTHOR_EMAIL=alice+x@...``), not a person who sets every variable to someone else.

**Signature rule** (``[review] require_signatures = true``). Every proposal commit must
carry a signature that git on the approver's machine verifies as good (``%G?`` is ``G``:
a key listed in ``gpg.ssh.allowedSignersFile`` for SSH, a trusted key for GPG; the same
verdict as ``git verify-commit``). The approver must be able to sign: a probe commit is
signed with their key (``git commit-tree -S``) and verified the same way; that key and its
signer name must have signed none of the proposal's commits. Approval records (for
``approvals_required`` above 1) count only when they are signed that way by a key that is
neither a proposer's nor one already counted. The approval record or landing commit is
then signed (:func:`signing`).

Approval records are recognised by shape, not by text alone: a commit with a
``Wiki-Approval:`` trailer, one parent and the same tree as that parent. A commit that
changes content is a proposal commit whatever its message says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import git

from wiki.errors import SelfApprovalError, SignaturePolicyError, SigningError
from wiki.store.gitrepo import Identity, current_committer, current_identity, normalise_email

if TYPE_CHECKING:
    from wiki.review.proposals import Proposal
    from wiki.store.workspace import Wiki

STATUS = {
    "G": "a good signature",
    "B": "a bad signature (the commit was altered after signing)",
    "U": "a signature by a key this repository does not trust (not in "
         "gpg.ssh.allowedSignersFile, or an untrusted GPG key)",
    "X": "a signature that has expired",
    "Y": "a signature by an expired key",
    "R": "a signature by a revoked key",
    "E": "a signature git cannot check (the key or gpg.ssh.allowedSignersFile is missing)",
    "N": "no signature",
}
PROBE_MESSAGE = "wiki: signing probe of an approver (on no branch)\n"


@dataclass(frozen=True)
class Signature:
    """git's verdict on one commit's signature: ``status`` is ``%G?`` (``G`` good, ``U``
    untrusted key, ``N`` none, ...), ``fingerprint`` the key (``%GF``, ``SHA256:...``
    for SSH) and ``signer`` the name the key is listed under (``%GS``: the SSH principal
    in the allowed signers file, the GPG user id)."""

    commit: str
    status: str
    fingerprint: str
    signer: str

    @property
    def good(self) -> bool:
        """Whether git calls it good and trusted (``G``)."""
        return self.status == "G"

    def handles(self) -> frozenset[str]:
        """What identifies whoever signed: the key's fingerprint and the normalised
        signer name (two keys listed under one principal are one person)."""
        found = []
        if self.fingerprint:
            found.append(f"key:{self.fingerprint}")
        if self.signer.strip():
            found.append(f"signer:{normalise_email(self.signer)}")
        return frozenset(found)

    def describe(self) -> str:
        """``a good signature by alice@example.com (key SHA256:...)``-style words."""
        what = STATUS.get(self.status, f"signature status {self.status!r}")
        who = f" by {self.signer}" if self.signer else ""
        key = f" (key {self.fingerprint})" if self.fingerprint else ""
        return what + who + key


def signing(wiki: Wiki) -> bool | None:
    """The ``sign`` argument for commits made on proposals and landings: ``True`` when
    ``[review] require_signatures`` is on, else ``None`` (git config ``commit.gpgsign``
    decides, see :meth:`wiki.store.branch.BranchStore.commit`)."""
    return True if wiki.config().review.require_signatures else None


def is_approval_record(commit: git.Commit) -> bool:
    """Whether ``commit`` is an approval record: a ``Wiki-Approval:`` trailer, exactly one
    parent, and that parent's tree (an approval changes no content)."""
    from wiki.review.proposals import APPROVAL_TRAILER  # proposals imports this module

    return (any(line.startswith(APPROVAL_TRAILER + ":") for line in _lines(commit.message))
            and len(commit.parents) == 1 and commit.tree == commit.parents[0].tree)


def check_approver(wiki: Wiki, proposal: Proposal, approver: Identity | None,
                   reviewed: str) -> Identity:
    """Apply the approval rules of the wiki head's ``[review]`` to ``approver`` (``None``:
    whoever git says is acting now) approving ``proposal`` (a
    :class:`wiki.review.proposals.Proposal`) at review hash ``reviewed``. Returns the approver's
    identity for the trailers and commits.

    Raises :class:`SelfApprovalError` (the identity rule) or
    :class:`SignaturePolicyError` (the signature rule); both exit 5. Under the signature
    rule, recorded approvals that do not count are removed from ``proposal.approvals``.
    Raises ``IdentityError`` when git cannot tell who is acting."""
    from wiki.review.proposals import REVIEWED_TRAILER

    review = wiki.config().review
    if approver is None:
        approver = current_identity(wiki.repo)
        actors = _unique([approver, current_committer(wiki.repo)])
    else:
        actors = [approver]
    commits = list(wiki.repo.iter_commits(f"{proposal.base}..{proposal.tip}"))
    records = [c for c in commits if is_approval_record(c)]
    changes = [c for c in commits if not is_approval_record(c)]
    if not review.allow_self_approval:
        _check_identities(proposal.name, changes, actors, author=actors[0])
    records = _countable(records, changes, review.allow_self_approval)
    for record in records:
        if _trailer(record.message, REVIEWED_TRAILER) != reviewed:
            continue
        for recorded in _people(record):
            for me in actors:
                if me.same_person(recorded):
                    raise SelfApprovalError(
                        f"{me} already approved proposal {proposal.name} (recorded as "
                        f"{recorded}); it needs {review.approvals_required} different "
                        "approvers")
    proposal.approvals[:] = [(_identity(r.author), _trailer(r.message, REVIEWED_TRAILER) or "")
                             for r in records]
    if review.require_signatures:
        _check_signatures(wiki, proposal, approver, changes, records, reviewed,
                          review.allow_self_approval)
    return approver


def _people(commit: git.Commit) -> list[Identity]:
    """The author and the committer of ``commit`` (one entry when they are the same)."""
    return _unique([_identity(commit.author), _identity(commit.committer)])


def _countable(records: list[git.Commit], changes: list[git.Commit],
               allow_self: bool) -> list[git.Commit]:
    """The approval records that may count, oldest first: none authored or committed by a
    proposer (an approval record is a plain commit anyone with push access can make, so a
    proposer could otherwise approve their own change by hand), unless ``allow_self``; and
    one per person (a record copied, or made again under the same or a ``+tag`` identity,
    counts once)."""
    proposers = [who for commit in changes for who in _people(commit)]
    kept: list[git.Commit] = []
    seen: list[Identity] = []
    for record in reversed(records):  # iter_commits lists newest first
        people = _people(record)
        if not allow_self and any(p.same_person(q) for p in people for q in proposers):
            continue
        if any(p.same_person(q) for p in people for q in seen):
            continue
        seen += people
        kept.append(record)
    return kept


def _check_identities(name: str, changes: list[git.Commit], actors: list[Identity], *,
                      author: Identity) -> None:
    """Raise :class:`SelfApprovalError` when one of ``actors`` (the approver's author
    identity ``author`` and, unless the same, their committer identity) authored or
    committed one of ``changes``. When only the committer identity matched, the message
    says so: someone who set ``GIT_AUTHOR_*`` to act as another person but not
    ``GIT_COMMITTER_*`` is still themselves as committer."""
    for commit in changes:
        for role, actor in (("authored", commit.author), ("committed", commit.committer)):
            theirs = _identity(actor)
            for me in actors:
                why = me.same_person(theirs)
                if not why:
                    continue
                if me != author and not author.same_person(theirs):
                    raise SelfApprovalError(
                        f"{me} cannot approve proposal {name}: that is your committer "
                        f"identity (your author identity is {author}), and {theirs} "
                        f"{role} its commit {commit.hexsha[:12]} ({why}, compared without "
                        "case and +tags); to act as another person set GIT_COMMITTER_NAME "
                        "and GIT_COMMITTER_EMAIL as well as GIT_AUTHOR_*, or ask someone "
                        "else to run `wiki approve`")
                raise SelfApprovalError(
                    f"{me} cannot approve proposal {name}: they authored or committed "
                    f"it ({theirs} {role} its commit {commit.hexsha[:12]}: {why}, "
                    "compared without case and +tags); ask someone else to run "
                    "`wiki approve`")


def _check_signatures(wiki: Wiki, proposal: Proposal, approver: Identity, changes: list[git.Commit],
                      records: list[git.Commit], reviewed: str, allow_self: bool) -> None:
    from wiki.review.proposals import REVIEWED_TRAILER

    verdicts = signatures(wiki.repo, f"{proposal.base}..{proposal.tip}")
    proposers: set[str] = set()
    for commit in changes:
        verdict = verdicts.get(commit.hexsha) or Signature(commit.hexsha, "N", "", "")
        if not verdict.good:
            raise SignaturePolicyError(
                f"proposal {proposal.name}: commit {commit.hexsha[:12]} "
                f"({commit.summary!s:.60}) has {verdict.describe()}; [review] "
                "require_signatures needs every proposal commit signed by a trusted key — "
                "ask its author to sign and propose again, or reject it")
        proposers |= verdict.handles()
    mine = _probe(wiki, approver, proposal.name)
    if not mine.good:
        raise SignaturePolicyError(
            f"{approver} cannot approve proposal {proposal.name} under [review] "
            f"require_signatures: your signing key gives {mine.describe()}; add it to the "
            "allowed signers file (gpg.ssh.allowedSignersFile) or trust it in GPG")
    if not allow_self and mine.handles() & proposers:
        raise SignaturePolicyError(
            f"{approver} cannot approve proposal {proposal.name}: your signing key "
            f"{mine.fingerprint} ({mine.signer or 'no signer name'}) signed its commits; "
            "ask someone else to run `wiki approve`")
    counted: list[tuple[Identity, str]] = []
    seen: set[str] = set()
    for record in records:
        verdict = verdicts.get(record.hexsha) or Signature(record.hexsha, "N", "", "")
        handles = verdict.handles()
        if not verdict.good or (proposers & handles and not allow_self) or seen & handles:
            continue  # an unsigned, proposer-signed or repeated approval does not count
        recorded = _trailer(record.message, REVIEWED_TRAILER) or ""
        if recorded == reviewed and handles & mine.handles():
            raise SignaturePolicyError(
                f"{approver} already approved proposal {proposal.name} with signing key "
                f"{mine.fingerprint}; it needs different approvers")
        seen |= handles
        counted.append((_identity(record.author), recorded))
    proposal.approvals[:] = counted


def _probe(wiki: Wiki, approver: Identity, name: str) -> Signature:
    """Sign a throw-away commit (the wiki head's tree, no parent, on no ref) with the
    approver's key and let git verify it: their key's fingerprint, signer and trust."""
    head = wiki.require_head()
    tree = wiki.repo.commit(head).tree.hexsha
    try:
        probe = wiki.store.commit(tree, [], PROBE_MESSAGE, author=approver, sign=True)
    except SigningError as exc:
        raise SignaturePolicyError(
            f"{approver} cannot approve proposal {name}: [review] require_signatures needs "
            f"the approver to sign, and {exc}") from None
    return signatures(wiki.repo, "--no-walk", probe).get(probe) or Signature(probe, "N", "",
                                                                              "")


def signatures(repo: git.Repo, *revisions: str) -> dict[str, Signature]:
    """git's verdict on the signature of every commit ``git log REVISIONS`` lists, as
    ``sha -> Signature`` (one ``git log`` with ``%G?``, ``%GF`` and ``%GS``; git runs
    ``ssh-keygen -Y verify`` or gpg with the reader's configuration)."""
    out = repo.git.log("--no-show-signature", "--format=%H%x00%G?%x00%GF%x00%GS%x1e",
                       *revisions)
    found = {}
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x00")
        if len(parts) == 4:
            found[parts[0]] = Signature(*parts)
    return found


def _identity(actor: git.Actor) -> Identity:
    return Identity(actor.name or "", actor.email or "")


def _unique(identities: Iterable[Identity]) -> list[Identity]:
    found: list[Identity] = []
    for identity in identities:
        if identity not in found:
            found.append(identity)
    return found


def _lines(message: str | bytes) -> list[str]:
    text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
    return text.splitlines()


def _trailer(message: str | bytes, key: str) -> str | None:
    for line in _lines(message):
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    return None
