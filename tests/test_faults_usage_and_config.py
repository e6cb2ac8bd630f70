"""Faults found by a break-it pass: each a kind, each pinned here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ALICE, BOB, acting_as, entry_text, git, ingest_and_land, write

from wiki.answering.search import search_for
from wiki.config import parse_config
from wiki.errors import BranchCheckedOutError, ConfigError, EntryError, NotInitializedError
from wiki.review.proposals import approve, propose
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki


@pytest.mark.parametrize("args", [["search", "-only"], ["search"], ["search", "x", "-n", "0"],
                                  ["nosuchcmd"], ["ingest"], ["status", "extra"],
                                  ["ask", "x", "--explain"]])
def test_usage_mistakes_exit_2_not_internal_error(cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output


def test_a_code_branch_is_never_used_as_the_wiki(repo: Path) -> None:
    wiki = Wiki(repo, "main")
    with pytest.raises(NotInitializedError, match="branch 'main' is not a wiki"):
        wiki.snapshot()
    head = git(repo, "rev-parse", "main")
    with pytest.raises(NotInitializedError):
        from wiki.ingest.pipeline import ingest
        ingest(wiki, [repo / "README.md"], author=ALICE)
    assert git(repo, "rev-parse", "main") == head


@pytest.mark.parametrize("name", ["HEAD", "refs/heads/foo", "", "-x", "a..b", "x.lock", "a b"])
def test_bad_branch_names_are_config_errors(repo: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid wiki branch name"):
        Wiki(repo, name)


def test_unicode_and_nested_branch_names_are_fine(repo: Path) -> None:
    assert Wiki(repo, "ünï").branch == "ünï"
    assert Wiki(repo, "team/kb").ref == "refs/heads/team/kb"


def test_approve_refuses_while_the_wiki_is_checked_out(wiki: Wiki, tmp_path: Path) -> None:
    git(wiki.root, "worktree", "add", "-q", str(tmp_path / "view"), "wiki")
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()}, base=None, kind="e",
                          subject="s", author=ALICE).proposal
    head = wiki.head()
    with pytest.raises(BranchCheckedOutError, match="--detach"):
        approve(wiki, proposal.name, approver=BOB)
    assert wiki.head() == head
    git(wiki.root, "worktree", "remove", str(tmp_path / "view"))
    git(wiki.root, "worktree", "add", "-q", "--detach", str(tmp_path / "view2"), "wiki")
    assert approve(wiki, proposal.name, approver=BOB).commit == wiki.head()


@pytest.mark.parametrize("damage", ["garbage", "zeros"])
def test_a_corrupt_derived_database_is_rebuilt_on_read(wiki: Wiki, repo: Path,
                                                       damage: str) -> None:
    write(repo / "kb" / "a.md", "# Alpha\n\nAlpha text.\n")
    ingest_and_land(wiki, repo / "kb")
    assert search_for(wiki, "alpha").hits
    path = wiki.database_path()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    path.write_bytes(b"garbage" * 500 if damage == "garbage" else b"\0" * 8192)
    assert [h.key for h in search_for(wiki, "alpha").hits] == ["kb/a.md"]


def test_recursive_yaml_anchor_is_one_file_error() -> None:
    with pytest.raises(EntryError, match="bad.md:2: invalid YAML"):
        Entry.parse("bad.md", b"---\nid: a1\ntitle: x\na: &a [*a]\n---\nBody.\n")


@pytest.mark.parametrize(("text", "fragment"), [
    ("[search]\ngap_threshold = 5\n", "gap_threshold must be from 0 to 1"),
    ("[search]\nweights = [1.0]\n", "weights needs 5 numbers"),
    ("[ingest]\nsplit_words = 0\n", "at least 1"),
    ("[ingest]\nextensions = []\n", "at least one file ending"),
    ("[wiki]\nversion = 99\n", "version 99 is not supported"),
    ("[search]\ntypo = 1\n", "unknown key 'typo'"),
])
def test_config_values_are_checked(text: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        parse_config(text)


@pytest.mark.robustness("F1")
def test_full_width_query_and_nfd_path(cli, wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "café.md", "# Travel\n\nTravel vouchers are filed in Concur.\n")
    ingest_and_land(wiki, repo / "kb")
    assert [h.key for h in search_for(wiki, "ｔｒａｖｅｌ").hits] == ["kb/café.md"]
    shown = cli("show", "kb/cafe\u0301.md")
    assert shown.exit_code == 0 and "Travel vouchers" in shown.stdout


def test_relative_paths_resolve_from_dash_c(runner, repo: Path, tmp_path: Path,
                                            monkeypatch) -> None:
    from wiki_cli.app import app
    write(repo / "docs" / "a.md", "# A\n\nAlpha.\n")
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["-C", str(repo), "init"]).exit_code == 0
    result = runner.invoke(app, ["-C", str(repo), "ingest", "docs"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().startswith("ingest-")


def test_show_prints_generated_and_invalid_files_as_stored(cli, wiki: Wiki) -> None:
    root = cli("show", "index.md")
    assert root.exit_code == 0 and "wiki:index" in root.stdout


def test_nothing_readable_is_not_reported_as_up_to_date(cli, wiki: Wiki) -> None:
    result = cli("ingest", "does-not-exist")
    assert result.exit_code == 1
    assert "nothing ingested" in result.stderr and "already matches" not in result.stderr
    assert cli("ingest", "").exit_code == 2


def test_search_json_without_hits_exits_1_like_plain_output(cli, wiki: Wiki) -> None:
    result = cli("search", "zzqx", "--json")
    assert result.exit_code == 1 and json.loads(result.stdout)["hits"] == []


def test_proposals_on_a_missing_branch_is_an_error(cli) -> None:
    result = cli("--branch", "nosuch", "proposals")
    assert result.exit_code == 2 and "no wiki branch 'nosuch'" in result.stderr


def test_identity_switch_helper_really_switches(wiki: Wiki) -> None:
    proposal = propose(wiki, {"a.md": entry_text("a1", "A", "x").encode()}, base=None, kind="e",
                          subject="s").proposal
    assert proposal.authors == [ALICE]
    with acting_as(BOB):
        proposal2 = propose(wiki, {"b.md": entry_text("b1", "B", "y").encode()}, base=None, kind="e",
                               subject="s").proposal
    assert proposal2.authors == [BOB]
