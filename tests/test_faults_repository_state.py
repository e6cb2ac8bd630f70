"""Adversary pass of session 7 (trust): a hostile teammate and a careless user against
review, sync, output and the user's setup. Each test names the kind of fault it holds;
the fix is in the shared path, not at the example."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
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
    proposal = propose(wiki, {"ops/index.md": text.encode()}, base=None, kind="edit",
                          subject="ops overview", author=ALICE).proposal
    return proposal.name


def _land_other_entry(wiki) -> None:
    from wiki.review.proposals import approve, propose

    other = propose(wiki, {"ops/b.md": b"---\nid: b1\ntitle: Pager\n---\nPage Bob.\n"},
                       base=None, kind="new", subject="pager", author=ALICE).proposal
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
    again = propose(wiki, {"ops/index.md": mine.encode()}, base=None, kind="edit",
                       subject="dana", author=ALICE).proposal
    approve(wiki, again.name, approver=BOB)
    synced = cli("sync")
    assert synced.exit_code == 0, synced.output
    assert "Ask Dana first." in _overview(wiki) and "[Rota](c.md)" in _overview(wiki)


# -- kind: a name on the branch that is not UTF-8 is one bad file, not a broken wiki ---------

def _land_bytes_name(wiki: Wiki, name: bytes) -> None:
    """Land a file named ``name`` (raw bytes) with plain git plumbing, as a direct push can."""
    root = str(wiki.root)
    blob = subprocess.run(["git", "-C", root, "hash-object", "-w", "--stdin"], check=True,
                          input=b"---\nid: ff1\ntitle: Bad name\n---\nBad name body.\n",
                          capture_output=True).stdout.decode().strip()
    head = wiki.require_head()
    env = {**os.environ, "GIT_INDEX_FILE": str(wiki.root / ".git" / "scratch-index")}
    subprocess.run(["git", "-C", root, "read-tree", head], check=True, env=env)
    subprocess.run(["git", "-C", root, "update-index", "--add", "-z", "--index-info"],
                   input=f"100644 {blob} 0\t".encode() + name + b"\0", check=True, env=env)
    tree = subprocess.run(["git", "-C", root, "write-tree"], check=True, env=env,
                          capture_output=True).stdout.decode().strip()
    commit = subprocess.run(["git", "-C", root, "commit-tree", tree, "-p", head, "-m", "raw"],
                            check=True, capture_output=True).stdout.decode().strip()
    wiki.store.update_ref(wiki.ref, commit, head, "test: a direct push")


def test_a_file_name_that_is_not_utf8_leaves_every_command_working(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n"})
    _land_bytes_name(wiki, b"ops/bad\xff.md")
    for command in (("search", "deploy"), ("ask", "how to deploy"), ("index",),
                    ("show", "a1"), ("history", "a1")):
        result = cli(*command)
        assert result.exit_code == 0, (command, result.output)  # was exit 2 "not UTF-8"
    linted = cli("lint", "--json")
    assert linted.exit_code == 1
    assert any(f["code"] == "W007" and f["path"] == "ops/bad\N{REPLACEMENT CHARACTER}.md"
               for f in __import__("json").loads(linted.stdout)["findings"])
    from wiki.review.proposals import approve, propose

    proposal = propose(wiki, {"ops/b.md": b"---\nid: b1\ntitle: Pager\n---\nPage.\n"},
                          base=None, kind="new", subject="pager", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)  # a later write keeps the file, unread
    names = subprocess.run(["git", "-C", str(wiki.root), "ls-tree", "-r", "-z", "--name-only",
                            wiki.ref], check=True, capture_output=True).stdout.split(b"\0")
    assert b"ops/bad\xff.md" in names and b"ops/b.md" in names


def test_the_review_check_flags_a_name_that_is_not_utf8(cli, wiki: Wiki) -> None:
    head = wiki.require_head()
    _land_bytes_name(wiki, b"ops/bad\xff.md")
    tip = wiki.require_head()
    wiki.store.update_ref(wiki.ref, head, tip, "test: back")
    wiki.store.update_ref(wiki.proposal_prefix + "bytes", tip, None, "test: as a proposal")
    shown = cli("proposals", "--json")
    assert shown.exit_code == 0, shown.output
    flags = __import__("json").loads(shown.stdout)[0]["flags"]
    assert any(f["rule"] == "R003" and "not UTF-8" in f["detail"] for f in flags), flags


# -- kind: an override may not land what stops every later approval ----------------------------

def test_an_invalid_wiki_toml_cannot_be_overridden_into_the_wiki(cli, wiki: Wiki) -> None:
    from wiki.store.snapshot import write_commit

    head = wiki.require_head()
    text = wiki.snapshot(head).read("wiki.toml").decode()
    broken = text.replace("approvals_required = 1", "approvals_required = 0")
    assert broken != text
    tip = write_commit(wiki.snapshot(head), {"wiki.toml": broken.encode()}, "policy\n",
                       author=ALICE)
    wiki.store.update_ref(wiki.proposal_prefix + "policy", tip, None, "test: plain git")
    with acting_as(BOB):
        result = cli("approve", "policy", "--override-flags", "we know")
    assert result.exit_code == 5, result.output  # it landed, then every command exited 2
    assert "an invalid wiki.toml cannot be overridden" in result.stderr
    assert wiki.require_head() == head
    assert cli("search", "anything").exit_code == 1  # the wiki still answers


# -- kind: a correction landed by hand is not undone by the next text that repeats the old value

def test_a_distilled_ingest_does_not_bring_back_a_replaced_fact_value(wiki: Wiki, repo: Path,
                                                                      monkeypatch) -> None:
    from conftest import write
    from fake_llm import install
    from memory_helpers import land_mileage_fact

    from wiki.ingest.pipeline import ingest
    from wiki.knowledge.distill import Distiller
    from wiki.knowledge.facts import current, set_fact
    from wiki.llm.settings import open_client
    from wiki.review.proposals import approve

    land_mileage_fact(wiki)
    corrected = set_fact(wiki, "mileage_rate", "0.70", author=ALICE)  # the hand correction
    approve(wiki, corrected.proposal.name, approver=BOB)
    fake = install(monkeypatch)
    fake.distilled = [{"title": "Mileage rate", "type": "fact", "key": "mileage_rate",
                       "value": "0.67", "claim": "The mileage rate is 0.67 dollars per mile."}]
    write(repo / "docs" / "mileage.md", "# Mileage\n\nThe mileage rate is 0.67 dollars per "
                                        "mile for all staff.\n")
    distiller = Distiller(wiki, open_client(wiki))
    report = ingest(wiki, [repo / "docs"], author=ALICE, distiller=distiller)
    assert distiller.report.superseded == 0, distiller.report  # it superseded the correction
    assert any("replaced" in d["why"] for d in distiller.report.dropped)
    if report.proposal is not None:
        approve(wiki, report.proposal.name, approver=BOB)
    (fact,) = current(wiki, "mileage_rate")
    assert str(fact.value) == "0.7"


# -- kind: every git: source rule applies to the file a committed symbolic link leads to -------

@pytest.mark.parametrize(("link", "target", "question", "leak"), [
    ("docs/cfg.md", "../.git/config", "what is the remote origin url", "hunter2host"),
    ("docs/env.md", "../.env", "what is the deploy host value", "hunter2host"),
])
def test_a_committed_link_to_git_config_or_an_ignored_file_is_not_read(
        cli, wiki: Wiki, repo: Path, link: str, target: str, question: str, leak: str) -> None:
    subprocess.run(["git", "-C", str(repo), "config", "remote.origin.url",
                    "https://git.hunter2host.example/x.git"], check=True)
    (repo / ".env").write_text("DEPLOY_HOST=hunter2host.internal\n")
    (repo / ".gitignore").write_text(".env\n")
    (repo / link).parent.mkdir(exist_ok=True)
    os.symlink(target, repo / link)
    subprocess.run(["git", "-C", str(repo), "add", ".gitignore", link], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "links"], check=True)
    _land_raw(wiki, {"ops/a.md": (
        f"---\nid: a1\ntitle: Settings\nsources:\n- uri: 'git:{link}'\n"
        "  fingerprint: sha256:00\n---\nThe remote origin url and the deploy host value "
        "are set per clone.\n")})
    asked = cli("ask", question, "--json")
    assert leak not in asked.output  # the reader's .git/config or .env, printed as the source
    assert "not allowed" in asked.output
    linted = cli("lint", "--select", "W002")
    assert linted.exit_code == 1 and "not allowed" in linted.stdout


def test_emptying_a_folder_while_an_entry_lands_there_keeps_its_overview(wiki: Wiki) -> None:
    from wiki.review.proposals import approve, propose

    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n"})
    approve(wiki, _overview_proposal(wiki), approver=BOB)
    gone = propose(wiki, {"ops/a.md": None}, base=None, kind="delete", subject="gone",
                      author=ALICE).proposal
    _land_other_entry(wiki)
    approve(wiki, gone.name, approver=BOB)
    assert "Ask Carol first." in _overview(wiki) and "[Pager](b.md)" in _overview(wiki)


# -- kind: what a Windows editor writes is text like any other -------------------------------

@pytest.mark.parametrize("text", [
    b"\xef\xbb\xbf---\ntitle: Hotels\n---\nHotels up to 100 EUR.\n",
    b"\xef\xbb\xbf---\r\ntitle: Hotels\r\n---\r\nHotels up to 100 EUR.\r\n",
    b"\xef\xbb\xbf# Hotels\r\n\r\nHotels up to 100 EUR.\r\n",
])
def test_a_file_starting_with_a_byte_order_mark_is_proposed(cli, wiki: Wiki, text) -> None:
    result = cli("propose", "-", input=text)  # was "field 'id': missing required field"
    assert result.exit_code == 0, result.output
    (entry,) = [e for e in wiki.snapshot(
        wiki.store.resolve(wiki.proposal_prefix + result.stdout.strip())).entries()[0]]
    assert entry.title == "Hotels" and not entry.to_bytes().startswith(b"\xef\xbb\xbf")


def test_a_nul_byte_is_refused_when_proposing_not_left_unlandable(cli, wiki: Wiki) -> None:
    result = cli("propose", "-", input=b"---\ntitle: Hotels\n---\nHotels\0 up to 100 EUR.\n")
    assert result.exit_code == 2, result.output  # was a proposal no approval could land
    assert result.stderr == ("error: -:4: a NUL byte: an entry is UTF-8 text, and no "
                             "approval lands binary content\n")
    assert wiki.store.list_refs(wiki.proposal_prefix) == {}


def _committed_and_landed(wiki: Wiki, repo: Path) -> Path:
    """``docs/good.md`` written, committed on the work tree's branch and landed as an
    entry; returns its path."""
    from conftest import ingest_and_land, write

    good = write(repo / "docs" / "good.md", "# Good\n\nGood text here.\n")
    subprocess.run(["git", "-C", str(repo), "add", "docs"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "good"], check=True)
    ingest_and_land(wiki, good)
    return good


def test_the_hook_marks_the_other_files_of_a_commit_holding_a_name_that_is_not_utf8(
        cli, wiki: Wiki, repo: Path) -> None:
    good = _committed_and_landed(wiki, repo)
    good.write_text("# Good\n\nGood text, edited.\n")
    (repo / "docs" / "bad\udcff.md").write_bytes(b"# Bad\n\nBad name.\n")
    subprocess.run(["git", "-C", str(repo), "add", "docs"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "both"], check=True)
    marked = cli("hook", "run")
    assert marked.exit_code == 0, marked.output  # was exit 2, and nothing marked
    linted = cli("lint", "--select", "W010")
    assert "docs/good.md" in linted.stdout


def test_a_source_renamed_to_a_name_that_is_not_utf8_is_missing_not_a_broken_lint(
        cli, wiki: Wiki, repo: Path) -> None:
    _committed_and_landed(wiki, repo)
    subprocess.run(["git", "-C", str(repo), "mv", "docs/good.md", b"docs/g\xffood.md"],
                   check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "rename"], check=True)
    linted = cli("lint")
    assert linted.exit_code == 1, linted.output  # was exit 2: the W011 fix held the name
    assert "W002" in linted.stdout and "no longer exists" in linted.stdout
