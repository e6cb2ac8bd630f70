"""Adversarial reproductions against issue 13's guarantees (review, identity, base,
masking, source policy): each test is an attack that once worked, now refused. Real git
repositories, the CLI in-process, no mocks of our own code."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git
from test_source_policy import cite, connections, reader  # noqa: F401 (fixture)

from wiki.errors import SelfApprovalError, SourceNotAllowedError
from wiki.review.gate import review_hash
from wiki.review.proposals import approve, get_proposal, propose
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

CAROL = Identity("Carol", "carol@example.com")
MALLORY = Identity("Mallory", "mallory@example.com")
TOKEN = "ghp_" + "Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"  # the shape of a GitHub token


def _env(who: Identity, committer: Identity | None = None) -> dict[str, str]:
    committer = committer or who
    return {**os.environ, "GIT_AUTHOR_NAME": who.name, "GIT_AUTHOR_EMAIL": who.email,
            "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}


def _git(repo: Path, *args: str, data: bytes | None = None,
         env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          check=True, env=env or os.environ)
    return done.stdout.decode().strip()


def commit_files(wiki: Wiki, parent: str, files: dict[str, bytes | None], message: str,
                 who: Identity = MALLORY, committer: Identity | None = None,
                 parents: list[str] | None = None) -> str:
    """A commit made with plain git plumbing on ``parent``'s tree (no wiki code)."""
    repo = wiki.root
    index = {**_env(who, committer), "GIT_INDEX_FILE": str(repo / ".git" / "breakit.index")}
    _git(repo, "read-tree", parent, env=index)
    for path, data in files.items():
        if data is None:
            _git(repo, "update-index", "--force-remove", "--", path, env=index)
            continue
        sha = _git(repo, "hash-object", "-w", "--stdin", data=data)
        _git(repo, "update-index", "--add", "--cacheinfo", f"100644,{sha},{path}", env=index)
    tree = _git(repo, "write-tree", env=index)
    args = [a for p in (parents or [parent]) for a in ("-p", p)]
    return _git(repo, "commit-tree", tree, *args, "-F", "-", data=message.encode(),
                env=_env(who, committer))


def empty_commit(wiki: Wiki, parent: str, message: str, who: Identity,
                 committer: Identity | None = None) -> str:
    tree = _git(wiki.root, "rev-parse", f"{parent}^{{tree}}")
    return _git(wiki.root, "commit-tree", tree, "-p", parent, "-F", "-",
                data=message.encode(), env=_env(who, committer))


def set_ref(wiki: Wiki, name: str, commit: str) -> None:
    _git(wiki.root, "update-ref", f"refs/heads/wiki-proposals/{name}", commit)


def set_review(wiki: Wiki, **settings: object) -> None:
    toml = wiki.snapshot().read("wiki.toml").decode()
    for key, value in settings.items():
        old = next(line for line in toml.splitlines() if line.startswith(f"{key} ="))
        toml = toml.replace(old, f"{key} = {str(value).lower()}")
    proposal = propose(wiki, {"wiki.toml": toml.encode()}, kind="config", base=None,
                          subject="review policy", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB, override="the team's policy")  # R008/R009


# --- approval records --------------------------------------------------------------------

def test_proposer_cannot_count_a_hand_made_approval_record_of_their_own(wiki: Wiki) -> None:
    set_review(wiki, approvals_required=2)
    head = wiki.require_head()
    tip = commit_files(wiki, head, {"a.md": entry_text("a1", "A", "mallory's").encode()},
                       "edit a\n")
    set_ref(wiki, "m", tip)
    reviewed = review_hash(wiki, get_proposal(wiki, "m"))
    record = empty_commit(wiki, tip, f"Approve proposal m\n\nWiki-Approval: {MALLORY}\n"
                          f"Wiki-Reviewed-Diff: {reviewed}\n", MALLORY)
    set_ref(wiki, "m", record)
    landing = approve(wiki, "m", approver=CAROL)
    assert not landing.landed, "Mallory's own approval record counted as a second approver"
    assert wiki.require_head() != tip and not landing.landed


def _record(wiki: Wiki, tip: str, who: Identity, reviewed: str,
            committer: Identity | None = None) -> str:
    return empty_commit(wiki, tip, f"Approve proposal\n\nWiki-Approval: {who}\n"
                        f"Wiki-Reviewed-Diff: {reviewed}\n", who, committer)


def test_record_authored_as_someone_else_but_committed_by_the_proposer_does_not_count(
        wiki: Wiki) -> None:
    set_review(wiki, approvals_required=2)
    tip = commit_files(wiki, wiki.require_head(), {"a.md": entry_text("a1", "A", "m").encode()},
                       "edit a\n")
    set_ref(wiki, "m", tip)
    reviewed = review_hash(wiki, get_proposal(wiki, "m"))
    set_ref(wiki, "m", _record(wiki, tip, BOB, reviewed, committer=MALLORY))
    assert not approve(wiki, "m", approver=CAROL).landed


def test_a_copied_approval_record_counts_once(wiki: Wiki) -> None:
    set_review(wiki, approvals_required=3)
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()}, base=None,
                          kind="edit", subject="a", author=ALICE).proposal
    first = approve(wiki, proposal.name, approver=BOB)
    assert not first.landed
    tip = wiki.store.resolve(proposal.ref)
    reviewed = review_hash(wiki, get_proposal(wiki, proposal.name))
    bob_tagged = Identity("Bob Reviewer", "bob+again@example.com")
    set_ref(wiki, proposal.name, _record(wiki, tip, bob_tagged, reviewed))
    second = approve(wiki, proposal.name, approver=CAROL)
    assert not second.landed and second.approvals == 2  # Bob once, Carol
    with pytest.raises(SelfApprovalError, match="already approved"):
        approve(wiki, proposal.name, approver=Identity("B", "BOB@example.com"))


# --- the proposal's base -------------------------------------------------------------------

def test_a_wiki_base_trailer_naming_a_commit_off_the_wiki_does_not_hide_it(cli,
                                                                          wiki: Wiki) -> None:
    head = wiki.require_head()
    hidden = commit_files(wiki, head, {"ops/keys.md": entry_text(
        "k1", "Keys", f"deploy token {TOKEN}").encode()}, "add keys\n")
    tip = commit_files(wiki, hidden, {"a.md": entry_text("a1", "A", "harmless").encode()},
                       f"edit a\n\nWiki-Base: {hidden}\n")
    set_ref(wiki, "lie", tip)
    proposal = get_proposal(wiki, "lie")
    assert proposal.base == head  # the trailer named a commit that is not on the wiki
    assert "ops/keys.md" in proposal.paths
    assert any(f.category == "secret" for f in proposal.flags)
    with acting_as(BOB):
        refused = cli("approve", "lie", "--override-flags", "looked fine")
    assert refused.exit_code == 5, refused.stdout
    assert wiki.require_head() == head
    landed_history = git(wiki.root, "rev-list", "wiki")
    assert hidden not in landed_history


# --- what the review check reads -----------------------------------------------------------

def _index_with(wiki: Wiki, path: str, extra: str) -> bytes:
    from wiki.store import indextree

    text = (wiki.snapshot().read(path) or b"").decode()
    if not text:
        text = "# Evil\n\n" + indextree.MARKER + "\n"
    return (text + extra).encode()


@pytest.mark.parametrize("path", ["index.md", "empty/index.md"])
def test_a_secret_below_the_index_marker_is_a_secret_flag(cli, wiki: Wiki, path: str) -> None:
    head = wiki.require_head()
    tip = commit_files(wiki, head, {path: _index_with(wiki, path, f"\nkey: {TOKEN}\n")},
                       "tidy the index\n")
    set_ref(wiki, "ix", tip)
    flags = get_proposal(wiki, "ix").flags
    assert any(f.category == "secret" and f.path == path for f in flags), flags
    with acting_as(BOB):
        refused = cli("approve", "ix", "--override-flags", "only the index")
    assert refused.exit_code == 5 and wiki.require_head() == head


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_a_secret_in_a_file_that_is_not_utf8_cannot_be_overridden_in(cli, wiki: Wiki,
                                                                     encoding: str) -> None:
    head = wiki.require_head()
    data = entry_text("u1", "U", f"token {TOKEN}").encode(encoding)
    tip = commit_files(wiki, head, {"u.md": data}, "add u\n")
    set_ref(wiki, "enc", tip)
    flags = get_proposal(wiki, "enc").flags
    assert any(f.category == "secret" and f.path == "u.md" for f in flags), flags
    with acting_as(BOB):
        refused = cli("approve", "enc", "--override-flags", "odd encoding, fine")
    assert refused.exit_code == 5 and wiki.require_head() == head


def test_a_secret_behind_nul_bytes_in_an_earlier_commit_is_not_missed(wiki: Wiki) -> None:
    head = wiki.require_head()
    first = commit_files(wiki, head, {"b.md": b"\0\0" + TOKEN.encode("utf-16-le")}, "b\n")
    tip = commit_files(wiki, first, {"b.md": None}, "drop b\n")
    set_ref(wiki, "nul", tip)
    flags = get_proposal(wiki, "nul").flags
    assert any(f.category == "secret" for f in flags), flags


# --- the reader's source policy ------------------------------------------------------------

@pytest.mark.parametrize("uri", [
    "http://[2002:7f00:1::]/",           # 6to4 of 127.0.0.1
    "http://[2002:a00:1::1]/",           # 6to4 of 10.0.0.1
    "http://[2002:a9fe:a9fe::]/latest",  # 6to4 of 169.254.169.254 (cloud metadata)
    "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/",  # Teredo, client 10.0.0.1
    "http://2130706433/", "http://0x7f.1/", "http://127.1/",
    "http://0/", "http://public@127.0.0.1/", "http://[::ffff:127.0.0.1]/",
    "http://[::127.0.0.1]/", "http://[64:ff9b::a00:1]/",
])
def test_addresses_that_carry_an_internal_ipv4_are_refused_before_any_connection(
        uri: str, connections: list) -> None:  # noqa: F811 (the imported fixture)
    with reader() as sources:
        check = sources.check(uri)
        with pytest.raises(SourceNotAllowedError):
            sources.read(uri)
    assert check.refused and "(not allowed: " in check.error, check
    assert connections == []


@pytest.mark.parametrize("uri", ["http://0177.0.0.1/", "http://[::1/", "http://exa mple.com/"])
def test_a_malformed_source_url_is_a_reason_not_a_crash(
        uri: str, connections: list) -> None:  # noqa: F811 (the imported fixture)
    with reader() as sources:
        check = sources.check(uri)  # httpx.InvalidURL escaped: ask and lint ended in 70
    assert check.error and check.fingerprint is None, check
    assert connections == []


def test_a_nul_byte_in_a_cited_path_is_a_reason_not_a_crash(cli, wiki: Wiki, tmp_path: Path,
                                                            monkeypatch) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    monkeypatch.setenv("WIKI_SOURCE_ROOTS", str(root))
    cite(wiki, f"{(root / 'a.md').as_uri()}%00.txt")
    linted = cli("lint", "--format", "json")
    assert linted.exit_code == 1, (linted.stdout, linted.stderr)  # findings, not exit 70
    assert "NUL byte" in linted.stdout


# --- masking -------------------------------------------------------------------------------

PASSWORD_URL = "postgres://billing:Zq8rT2vLx9pW@db.internal:5432/bills"


def test_wiki_diff_shows_that_there_is_a_secret_without_printing_it(cli, wiki: Wiki) -> None:
    head = wiki.require_head()
    tip = commit_files(wiki, head, {"ops/deploy.md": entry_text(
        "d1", f"Deploy {TOKEN}", f"Use {TOKEN} and {PASSWORD_URL}.").encode()},
        f"deploy notes {TOKEN}\n")
    set_ref(wiki, "sec", tip)
    for args in (("diff", "sec"), ("diff", "sec", "--json"), ("proposals",),
                 ("proposals", "--json")):
        shown = cli(*args)
        assert shown.exit_code == 0, shown.stderr
        for secret in (TOKEN, "Zq8rT2vLx9pW"):
            assert secret not in shown.stdout and secret not in shown.stderr, args
    assert "[REDACTED:" in cli("diff", "sec").stdout


def _land_raw(wiki: Wiki, path: str, text: str) -> None:
    from wiki.store.snapshot import write_commit

    head = wiki.require_head()
    new = write_commit(wiki.snapshot(head), {path: text.encode()}, "raw\n", author=ALICE)
    wiki.store.update_ref(wiki.ref, new, head, "test")


def test_secrets_in_frontmatter_keys_tags_and_source_uris_are_masked(cli, wiki: Wiki) -> None:
    uri = "https://deploy:Zq8rT2vLx9pW@git.example.com/ops.git"
    text = ("---\nid: s1\ntitle: Deploy notes\nsummary: How to deploy.\n"
            f"tags: [ops, {TOKEN}]\n{TOKEN}: a key that is a token\n"
            f"sources: [{{uri: '{uri}', fingerprint: 'sha256:00'}}]\n---\n"
            "Deploy with the pipeline.\n")
    _land_raw(wiki, "ops/notes.md", text)
    for args in (("show", "ops/notes.md"), ("show", "ops/notes.md", "--json"),
                 ("search", "deploy", "--json"), ("ask", "how to deploy?"),
                 ("ask", "how to deploy?", "--json"), ("lint",), ("lint", "--format", "json"),
                 ("log", "--json")):
        shown = cli(*args)
        assert shown.exit_code in (0, 1, 3), (args, shown.stdout, shown.stderr)
        for secret in (TOKEN, "Zq8rT2vLx9pW"):
            assert secret not in shown.stdout and secret not in shown.stderr, (args, shown.stdout,
                                                                                shown.stderr)


# --- the review policy changed by the proposal under review ---------------------------------

def _toml_with(wiki: Wiki, **settings: object) -> bytes:
    toml = wiki.snapshot().read("wiki.toml").decode()
    for key, value in settings.items():
        old = next(line for line in toml.splitlines() if line.startswith(f"{key} ="))
        toml = toml.replace(old, f"{key} = {str(value).lower()}")
    return toml.encode()


def test_a_proposal_that_weakens_the_review_policy_is_judged_by_the_policy_it_replaces(
        cli, wiki: Wiki) -> None:
    set_review(wiki, approvals_required=2)
    head = wiki.require_head()
    tip = commit_files(wiki, head, {
        "wiki.toml": _toml_with(wiki, approvals_required=1, allow_self_approval=True),
        "a.md": entry_text("a1", "A", "mallory's").encode()}, "tidy config\n")
    set_ref(wiki, "weak", tip)
    flags = get_proposal(wiki, "weak").flags
    assert {f.kind for f in flags if f.category == "review-policy"} == {
        "approvals-lowered", "self-approval-allowed"}, flags
    with acting_as(MALLORY):  # her own change: the head's rule still applies
        assert cli("approve", "weak", "--override-flags", "mine").exit_code == 5
    with acting_as(BOB):
        refused = cli("approve", "weak")
        assert refused.exit_code == 5 and "review-policy" in refused.stderr
        first = cli("approve", "weak", "--override-flags", "we agreed in the meeting")
        assert first.exit_code == 0 and wiki.require_head() == head  # 1 of the 2 needed
    with acting_as(CAROL):
        landed = cli("approve", "weak", "--override-flags", "we agreed in the meeting")
        assert landed.exit_code == 0, landed.stderr
    message = git(wiki.root, "log", "-1", "--format=%B", "wiki")
    assert "Wiki-Overridden-Flag: R008 approvals-lowered wiki.toml" in message


# --- lost update: the inferred base of an exported file -------------------------------------

def test_an_export_that_ties_between_two_revisions_is_based_on_the_older(cli, repo: Path,
                                                                          tmp_path: Path) -> None:
    from test_lost_update import A_PATH, _land, _seed, _show

    _seed(cli, repo)
    exported, _ = _show(cli, "a1")  # Alice exports A
    carol = tmp_path / "carol.md"  # Carol fixes a typo-like wording AND another line
    carol.write_text(exported.replace("within 30 days", "within thirty days")
                     .replace("Receipts are required.", "Receipts are required over 20 EUR."))
    _land(cli, str(carol), "--edit", "a1", who=CAROL)
    alice = tmp_path / "alice.md"  # Alice, from her old copy, makes the same first fix only
    alice.write_text(exported.replace("within 30 days", "within thirty days"))
    made = cli("propose", str(alice), "--edit", "a1")
    if made.exit_code == 0 and made.stdout.strip():
        with acting_as(BOB):
            cli("approve", made.stdout.strip())
    text = git(repo, "show", f"wiki:{A_PATH}")
    assert "Receipts are required over 20 EUR." in text, "Carol's landed line was reverted"
