"""The approval rule against identity tricks, and the optional signature policy with real
SSH keys (ssh-keygen ed25519, made per test) and an allowed signers file (docs/review.md,
"Approver identity and signatures"; docs/security.md)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ALICE, BOB, entry_text, git

from wiki.errors import SelfApprovalError, SignaturePolicyError, SigningError
from wiki.review.approval_policy import signatures
from wiki.review.proposals import approve, get_proposal, list_proposals, propose
from wiki.store.gitrepo import Identity, normalise_email, normalise_name
from wiki.store.snapshot import Snapshot, with_indexes
from wiki.store.workspace import Wiki

CAROL = Identity("Carol", "carol@example.com")
DAVE = Identity("Dave", "dave@example.com")
MALLORY = Identity("Mallory", "mallory@example.com")
IDENTITY_VARIABLES = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
                      "GIT_COMMITTER_EMAIL", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0",
                      "GIT_CONFIG_VALUE_0")


@contextmanager
def acting(author: Identity, committer: Identity | None = None,
           key: Path | None = None) -> Iterator[None]:
    """Set the git environment a person (or a trickster) would: author and committer
    variables, and ``user.signingkey`` through GIT_CONFIG_* (no key: none configured)."""
    committer = committer or author
    saved = {name: os.environ.get(name) for name in IDENTITY_VARIABLES}
    os.environ.update({"GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
                       "GIT_COMMITTER_NAME": committer.name,
                       "GIT_COMMITTER_EMAIL": committer.email})
    for name in IDENTITY_VARIABLES[4:]:
        os.environ.pop(name, None)
    if key is not None:
        os.environ.update({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.signingkey",
                           "GIT_CONFIG_VALUE_0": str(key)})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _propose(wiki: Wiki, path: str = "a.md", text: str | None = None, **kwargs):
    """Propose as whoever the environment says (the CLI's path: no explicit author)."""
    text = text or entry_text("a1", "A", "alpha")
    opened = propose(wiki, {path: text.encode()}, kind="edit", base=None,
                                subject=f"edit {path}", **kwargs)
    proposal, created = opened.proposal, opened.created
    assert created
    return proposal


def _set_review(wiki: Wiki, **settings: object) -> None:
    """Land a wiki.toml change of [review] (proposed by Alice, approved by Bob)."""
    toml = wiki.snapshot().read("wiki.toml").decode()
    for key, value in settings.items():
        old = next(line for line in toml.splitlines() if line.startswith(f"{key} ="))
        toml = toml.replace(old, f"{key} = {str(value).lower()}")
    proposal = propose(wiki, {"wiki.toml": toml.encode()}, kind="config", base=None,
                          subject="review policy", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB, override="the team's policy")  # R008/R009


def _add_commit(wiki: Wiki, proposal_name: str, path: str, text: str, author: Identity,
                committer: Identity) -> str:
    """Another commit on a proposal branch, made with plain git (as a teammate would)."""
    ref = wiki.proposal_prefix + proposal_name
    tip = wiki.store.resolve(ref)
    # the index.md files are regenerated as `wiki propose` would: the review check flags a
    # listing that is not the generated one
    snapshot = Snapshot(wiki.store, tip)
    tree = wiki.store.write_tree(snapshot.files, with_indexes(snapshot, {path: text.encode()}))
    commit = wiki.store.commit(tree, [tip], f"also {path}\n", author=author,
                               committer=committer, sign=False)
    wiki.store.update_ref(ref, commit, tip, "test: a teammate's commit")
    return commit


# -- normalisation ---------------------------------------------------------------------

def test_emails_and_names_are_compared_normalised() -> None:
    assert normalise_email("Alice+Laptop@Example.COM") == "alice@example.com"
    assert normalise_email(" <alice@example.com> ") == "alice@example.com"
    assert normalise_email("ａｌｉｃｅ@example.com") == "alice@example.com"  # full-width
    assert normalise_email("+only@example.com") == "+only@example.com"
    assert normalise_name("  alice   AUTHOR ") == "alice author"
    assert ALICE.same_person(Identity("Someone", "ALICE+x@example.com")) == "the same email"
    assert ALICE.same_person(Identity("alice  author", "alice@home.example")) == \
        "the same name"
    assert ALICE.same_person(BOB) is None
    assert Identity("", "").keys() == frozenset()


# -- the identity rule, through the environment (as `wiki approve` sees it) ------------

@pytest.mark.parametrize("approver", [
    Identity("Reviewer", "alice+review@example.com"),   # +tag
    Identity("Reviewer", "ALICE@Example.Com"),          # case
    Identity("Totally Bob", "alice@example.com"),       # other name, same email
    Identity("Alice Author", "alice@laptop.example"),   # same name, other email
], ids=["plus-tag", "case", "other-name", "other-email"])
def test_the_proposer_cannot_approve_under_another_spelling(wiki: Wiki,
                                                             approver: Identity) -> None:
    proposal = _propose(wiki)  # the environment says Alice
    head = wiki.head()
    with acting(approver), pytest.raises(SelfApprovalError, match="cannot approve"):
        approve(wiki, proposal.name)
    assert wiki.head() == head
    assert get_proposal(wiki, proposal.name).tip == proposal.tip


def test_changing_only_the_author_variables_does_not_hide_the_proposer(wiki: Wiki) -> None:
    # propose as "Mallory" while git still commits as Alice (her config / committer vars)
    with acting(MALLORY, committer=ALICE):
        proposal = _propose(wiki)
    assert git(wiki.root, "log", "-1", "--format=%an <%ae> / %cn <%ce>", proposal.tip) == \
        "Mallory <mallory@example.com> / Alice Author <alice@example.com>"
    assert get_proposal(wiki, proposal.name).authors == [MALLORY, ALICE]
    with acting(ALICE), pytest.raises(SelfApprovalError, match="committed its commit"):
        approve(wiki, proposal.name)
    # and the other way round: approve as "Bob" while still committing as Alice
    with acting(BOB, committer=ALICE), pytest.raises(SelfApprovalError, match="Alice"):
        approve(wiki, proposal.name)
    with acting(BOB):
        assert approve(wiki, proposal.name).landed


def test_author_and_committer_split_across_commits(wiki: Wiki) -> None:
    proposal = _propose(wiki)  # Alice authored and committed the first commit
    _add_commit(wiki, proposal.name, "b.md", entry_text("b1", "B", "beta"),
                author=CAROL, committer=DAVE)
    assert set(get_proposal(wiki, proposal.name).authors) == {ALICE, CAROL, DAVE}
    for who in (ALICE, CAROL, DAVE):
        with acting(who), pytest.raises(SelfApprovalError):
            approve(wiki, proposal.name)
    with acting(BOB):
        landing = approve(wiki, proposal.name)
    assert landing.landed and wiki.snapshot().read("b.md") is not None


def test_a_second_commit_by_someone_else_makes_them_a_proposer(wiki: Wiki) -> None:
    proposal = _propose(wiki)
    _add_commit(wiki, proposal.name, "a.md", entry_text("a1", "A", "alpha, fixed"),
                author=Identity("Bob at home", "BOB+home@example.com"),
                committer=Identity("Bob at home", "BOB+home@example.com"))
    with acting(BOB), pytest.raises(SelfApprovalError, match="bob"):
        approve(wiki, proposal.name)
    with acting(CAROL):
        assert approve(wiki, proposal.name).landed


def test_an_approval_trailer_in_a_changing_commit_is_not_an_approval(wiki: Wiki) -> None:
    proposal = _propose(wiki, body="Wiki-Approval: Bob Reviewer <bob@example.com>")
    loaded = get_proposal(wiki, proposal.name)
    assert loaded.authors == [ALICE] and loaded.approvals == []
    assert loaded.subject == "edit a.md"
    with pytest.raises(SelfApprovalError):
        approve(wiki, proposal.name)  # the environment says Alice


def test_an_approver_cannot_count_twice_by_changing_the_author_variables(
        wiki: Wiki) -> None:
    _set_review(wiki, approvals_required=2)
    proposal = _propose(wiki)
    with acting(BOB):
        assert not approve(wiki, proposal.name).landed
    with acting(CAROL, committer=BOB), pytest.raises(SelfApprovalError,
                                                     match="already approved"):
        approve(wiki, proposal.name)
    with acting(CAROL):
        landing = approve(wiki, proposal.name)
    assert landing.landed and landing.approvals == 2


def test_cli_refuses_a_plus_tag_self_approval_with_exit_5(cli, repo: Path) -> None:
    from conftest import write

    cli("init")
    write(repo / "docs" / "a.md", "# A\n\nAlpha.\n")
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting(Identity("Alice (review)", "Alice+review@EXAMPLE.com")):
        refused = cli("approve", name)
    assert refused.exit_code == 5
    assert refused.stderr.count("\n") == 1 and "same email" in refused.stderr


# -- the signature policy, with real SSH keys ----------------------------------------------

@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    """ed25519 keys for alice, bob, carol and eve; alice, bob and carol are listed in an
    allowed signers file, eve is not."""
    folder = tmp_path / "keys"
    folder.mkdir()
    made = {}
    for name in ("alice", "bob", "carol", "eve"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                        "-f", str(folder / name)], check=True, capture_output=True)
        made[name] = folder / name
    allowed = folder / "allowed_signers"
    allowed.write_text("".join(f"{name}@example.com {(folder / f'{name}.pub').read_text()}"
                               for name in ("alice", "bob", "carol")))
    made["allowed"] = allowed
    return made


def _require_signatures(wiki: Wiki, keys: dict[str, Path], **more: object) -> Wiki:
    """Turn [review] require_signatures on (with ``more`` settings) in a repository whose
    git trusts alice, bob and carol through gpg.ssh.allowedSignersFile."""
    git(wiki.root, "config", "gpg.format", "ssh")
    git(wiki.root, "config", "gpg.ssh.allowedSignersFile", str(keys["allowed"]))
    _set_review(wiki, require_signatures=True, **more)
    assert wiki.config().review.require_signatures
    return wiki


@pytest.fixture
def signed_wiki(wiki: Wiki, keys: dict[str, Path]) -> Wiki:
    """A wiki under the signature policy (see :func:`_require_signatures`)."""
    return _require_signatures(wiki, keys)


def _verdict(wiki: Wiki, commit: str):
    return signatures(wiki.repo, "--no-walk", commit)[commit]


def test_signed_proposal_and_signed_approval_by_another_key_land(
        signed_wiki: Wiki, keys: dict[str, Path]) -> None:
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    assert _verdict(signed_wiki, proposal.tip).signer == "alice@example.com"
    assert _verdict(signed_wiki, proposal.tip).good
    with acting(BOB, key=keys["bob"]):
        landing = approve(signed_wiki, proposal.name)
    assert landing.landed and signed_wiki.head() == landing.commit
    verdict = _verdict(signed_wiki, landing.commit)
    assert verdict.good and verdict.signer == "bob@example.com"
    # git's own check agrees (what a teammate or CI runs)
    done = subprocess.run(["git", "-C", str(signed_wiki.root), "verify-commit",
                           landing.commit], capture_output=True, text=True)
    assert done.returncode == 0 and 'Good "git" signature for bob@example.com' in done.stderr


def test_an_unsigned_proposal_is_refused_under_the_policy(signed_wiki: Wiki,
                                                          keys: dict[str, Path]) -> None:
    head = signed_wiki.require_head()
    tree = signed_wiki.store.write_tree(signed_wiki.store.files(head),
                                        {"a.md": entry_text("a1", "A", "alpha").encode()})
    commit = signed_wiki.store.commit(tree, [head], f"edit a.md\n\nWiki-Base: {head}\n",
                                      author=ALICE, sign=False)  # pushed with plain git
    signed_wiki.store.update_ref(signed_wiki.proposal_prefix + "plain-1", commit, None, "t")
    with acting(BOB, key=keys["bob"]), \
            pytest.raises(SignaturePolicyError, match="has no signature"):
        approve(signed_wiki, "plain-1")
    assert signed_wiki.head() == head


def test_a_proposal_signed_by_an_unknown_key_is_refused(signed_wiki: Wiki,
                                                        keys: dict[str, Path]) -> None:
    with acting(ALICE, key=keys["eve"]):
        proposal = _propose(signed_wiki)
    assert _verdict(signed_wiki, proposal.tip).status == "U"
    head = signed_wiki.head()
    with acting(BOB, key=keys["bob"]), pytest.raises(SignaturePolicyError,
                                                     match="does not trust"):
        approve(signed_wiki, proposal.name)
    assert signed_wiki.head() == head


def test_one_unsigned_commit_among_signed_ones_is_refused(signed_wiki: Wiki,
                                                          keys: dict[str, Path]) -> None:
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    extra = _add_commit(signed_wiki, proposal.name, "b.md", entry_text("b1", "B", "beta"),
                        author=CAROL, committer=CAROL)
    with acting(BOB, key=keys["bob"]), pytest.raises(SignaturePolicyError, match=extra[:12]):
        approve(signed_wiki, proposal.name)


def test_an_approver_without_a_signing_key_is_refused(signed_wiki: Wiki,
                                                      keys: dict[str, Path]) -> None:
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    head = signed_wiki.head()
    with acting(BOB), pytest.raises(SignaturePolicyError, match="needs the approver to sign"):
        approve(signed_wiki, proposal.name)
    with acting(BOB, key=keys["eve"]), pytest.raises(SignaturePolicyError,
                                                     match="your signing key"):
        approve(signed_wiki, proposal.name)  # a key the repository does not trust
    assert signed_wiki.head() == head


def test_the_proposers_key_cannot_approve_under_any_name(signed_wiki: Wiki,
                                                         keys: dict[str, Path]) -> None:
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    # every identity variable says Bob, but the key is Alice's
    with acting(BOB, key=keys["alice"]), pytest.raises(SignaturePolicyError,
                                                       match="signed its commits"):
        approve(signed_wiki, proposal.name)


def test_proposing_under_the_policy_needs_a_signing_key(signed_wiki: Wiki) -> None:
    with acting(ALICE), pytest.raises(SigningError, match="could not sign"):
        _propose(signed_wiki)
    assert list_proposals(signed_wiki) == []


def test_two_signed_approvals_must_use_two_keys(wiki: Wiki,
                                                keys: dict[str, Path]) -> None:
    signed_wiki = _require_signatures(wiki, keys, approvals_required=2)
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    with acting(BOB, key=keys["bob"]):
        first = approve(signed_wiki, proposal.name)
    assert not first.landed
    record = signed_wiki.store.resolve(proposal.ref)
    assert _verdict(signed_wiki, record).signer == "bob@example.com"
    with acting(DAVE, key=keys["bob"]), pytest.raises(SignaturePolicyError,
                                                      match="already approved"):
        approve(signed_wiki, proposal.name)  # Bob again, calling himself Dave
    with acting(CAROL, key=keys["carol"]):
        landing = approve(signed_wiki, proposal.name)
    assert landing.landed and landing.approvals == 2


def test_an_unsigned_approval_record_does_not_count(wiki: Wiki,
                                                    keys: dict[str, Path]) -> None:
    signed_wiki = _require_signatures(wiki, keys, approvals_required=2)
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(signed_wiki)
    tip = proposal.tip
    tree = signed_wiki.repo.commit(tip).tree.hexsha
    reviewed = get_proposal(signed_wiki, proposal.name)
    from wiki.review.proposals import review_hash

    forged = signed_wiki.store.commit(
        tree, [tip], f"Approve\n\nWiki-Approval: {DAVE}\nWiki-Reviewed-Diff: "
        f"{review_hash(signed_wiki, reviewed)}\n", author=DAVE, sign=False)
    signed_wiki.store.update_ref(proposal.ref, forged, tip, "t")
    assert [who for who, _ in get_proposal(signed_wiki, proposal.name).approvals] == [DAVE]
    with acting(BOB, key=keys["bob"]):
        landing = approve(signed_wiki, proposal.name)
    assert not landing.landed and landing.approvals == 1  # Dave's unsigned one is ignored


def test_commit_gpgsign_signs_proposals_without_the_policy(wiki: Wiki,
                                                           keys: dict[str, Path]) -> None:
    git(wiki.root, "config", "gpg.format", "ssh")
    git(wiki.root, "config", "gpg.ssh.allowedSignersFile", str(keys["allowed"]))
    git(wiki.root, "config", "commit.gpgsign", "true")
    with acting(ALICE, key=keys["alice"]):
        proposal = _propose(wiki)
    assert _verdict(wiki, proposal.tip).good
    git(wiki.root, "config", "commit.gpgsign", "false")
    with acting(BOB):
        landing = approve(wiki, proposal.name)  # no policy: an unsigned landing is fine
    assert _verdict(wiki, landing.commit).status == "N"


def test_cli_refuses_an_approver_without_a_key_with_exit_5(cli, repo: Path,
                                                           keys: dict[str, Path]) -> None:
    from conftest import write

    cli("init")
    wiki = Wiki(repo)
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "gpg.ssh.allowedSignersFile", str(keys["allowed"]))
    _set_review(wiki, require_signatures=True)
    write(repo / "docs" / "a.md", "# A\n\nAlpha.\n")
    unsigned = cli("ingest", str(repo / "docs"))
    assert unsigned.exit_code == 2 and "could not sign" in unsigned.stderr
    with acting(ALICE, key=keys["alice"]):
        name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting(BOB):
        refused = cli("approve", name)
    assert refused.exit_code == 5 and refused.stderr.count("\n") == 1
    assert "needs the approver to sign" in refused.stderr
    with acting(BOB, key=keys["bob"]):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.stderr
