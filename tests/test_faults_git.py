"""Git states a user's repository can be in (issue 15, part 7): a shallow clone (history
before its edge is missing) and a source left half-merged with conflict markers. Real
clones (``git clone --depth N file://...``) of real repositories; never exit 70."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ALICE, BOB, entry_text, git, write
from typer.testing import CliRunner

from tests.memory_helpers import land
from wiki.ingest.merge_markers import conflict_line
from wiki.ingest.pipeline import ingest
from wiki.review.proposals import approve, propose
from wiki.store.shallow import ShallowHistoryError, boundary
from wiki.store.workspace import Wiki
from wiki_cli.app import app

FETCH = "git fetch --unshallow"


def _entry(body: str) -> str:
    return entry_text("pd", "Per diem", body, summary="Daily meal money.",
                      sources="[{uri: 'git:doc.md'}]")


@pytest.fixture
def origin(wiki: Wiki, repo: Path) -> Path:
    """A repository whose wiki has three landings touching one entry, and whose cited
    source ``doc.md`` was renamed to ``guide.md`` on main after them."""
    write(repo / "doc.md", "# Doc\n\nPer diem pays 75 percent on travel days.\n")
    git(repo, "add", "doc.md")
    git(repo, "commit", "-q", "-m", "doc")
    land(wiki, {"travel/per-diem.md": _entry("Per diem covers meals.")})
    land(wiki, {"travel/per-diem.md": _entry("Per diem covers meals and more.")})
    land(wiki, {"travel/lodging.md": entry_text("lg", "Lodging", "Hotels are booked.")})
    git(repo, "mv", "doc.md", "guide.md")
    git(repo, "commit", "-q", "-m", "rename doc")
    return repo


def clone(origin: Path, target: Path, depth: int) -> Path:
    subprocess.run(["git", "clone", "-q", f"--depth={depth}", "--no-single-branch",
                    f"file://{origin}", str(target)], check=True)
    git(target, "branch", "wiki", "origin/wiki")
    return target


def run(repo: Path, *args: str):
    return CliRunner().invoke(app, ["-C", str(repo), *args])


def test_history_in_a_depth_1_clone_says_what_is_missing(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 1)
    assert git(shallow, "rev-parse", "--is-shallow-repository") == "true"
    result = run(shallow, "history", "pd")
    assert result.exit_code == 1, result.output
    assert "this clone is shallow: the history of travel/per-diem.md before commit" in \
        result.stderr
    assert FETCH in result.stderr and "--deepen N" in result.stderr
    assert "internal error" not in result.output


def test_history_shows_the_revisions_it_has_before_the_edge(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 2)  # the lodging landing and one before
    result = run(shallow, "history", "pd", "--json")
    assert result.exit_code == 1, result.output
    shown = json.loads(result.stdout)
    assert shown["id"] == "pd" and [r["change"] for r in shown["revisions"]] == []
    deeper = clone(origin, tmp_path / "deeper", 3)
    result = run(deeper, "history", "pd", "--json")
    assert result.exit_code == 1 and FETCH in result.stderr
    assert [r["change"] for r in json.loads(result.stdout)["revisions"]] == ["modified"]
    git(deeper, "fetch", "-q", "--unshallow", "origin", "wiki:wiki")
    result = run(deeper, "history", "pd", "--json")
    assert result.exit_code == 0, result.output
    assert [r["change"] for r in json.loads(result.stdout)["revisions"]] == [
        "modified", "added"]


def test_log_lists_what_the_clone_has_then_fails(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 2)
    result = run(shallow, "log")
    assert result.exit_code == 1, result.output
    assert result.stdout.count("Land proposal") == 2
    assert "the wiki's history before commit" in result.stderr and FETCH in result.stderr
    enough = run(shallow, "log", "-n", "2")  # all it asks for is here
    assert enough.exit_code == 0, enough.output


def test_log_of_a_shallow_clone_that_holds_the_whole_wiki_is_complete(
        origin, tmp_path) -> None:
    """The wiki's first commit has no parent: at the edge, nothing is missing."""
    for number in range(5):  # main is deeper than the clone: the clone is shallow
        write(origin / "notes.txt", f"{number}\n")
        git(origin, "add", "notes.txt")
        git(origin, "commit", "-q", "-m", f"note {number}")
    shallow = clone(origin, tmp_path / "clone", 4)
    assert boundary(Wiki(shallow).repo)
    result = run(shallow, "log", "--json")
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 4  # init + three landings


def test_as_of_before_the_edge_is_not_mistaken_for_before_the_wiki(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 1)
    result = run(shallow, "search", "per diem", "--as-of", "2001-01-01")
    assert result.exit_code == 1, result.output
    assert "needed for --as-of 2001-01-01" in result.stderr and FETCH in result.stderr
    assert "did not exist yet" not in result.stderr
    complete = run(origin, "search", "per diem", "--as-of", "2001-01-01")
    assert complete.exit_code == 1 and "did not exist yet" in complete.stderr


def test_as_of_within_the_fetched_history_still_answers(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 1)
    result = run(shallow, "ask", "per diem meals", "--as-of", "2999-01-01")
    assert result.exit_code == 0, result.output
    assert "Per diem covers meals and more." in result.stdout


def test_lint_says_a_rename_past_the_edge_cannot_be_followed(origin, tmp_path) -> None:
    full = run(origin, "lint", "--format", "json", "--select", "W002,W011")
    assert [f["code"] for f in json.loads(full.stdout)["findings"]] == ["W011"]
    shallow = clone(origin, tmp_path / "clone", 1)
    result = run(shallow, "lint", "--format", "json", "--select", "W002,W011")
    assert result.exit_code == 1, result.output
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["code"] == "W002"
    assert "this clone is shallow: a rename before commit" in finding["message"]
    assert FETCH in finding["message"]


def test_a_proposal_lands_in_a_shallow_clone(origin, tmp_path) -> None:
    shallow = clone(origin, tmp_path / "clone", 1)
    wiki = Wiki(shallow)
    proposal = propose(wiki, {"hr/leave.md": entry_text("lv", "Leave", "Leave accrues.")
                                 .encode()}, base=None, kind="new", subject="leave", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    with pytest.raises(ShallowHistoryError) as caught:
        from wiki.review.history import log
        log(wiki)
    assert len(caught.value.partial) == 2  # the new landing and the clone's one


# -- conflict markers ------------------------------------------------------------------

CONFLICTED = ("# Expenses\n\nReceipts are kept for three years.\n\n<<<<<<< HEAD\n"
              "Claims are filed within 30 days.\n=======\nClaims are filed within 60 days.\n"
              ">>>>>>> policy-2026\n")


@pytest.mark.parametrize(("text", "line"), [
    (CONFLICTED, 5),
    ("a\n<<<<<<< ours\nx\n||||||| base\nw\n=======\ny\n>>>>>>> theirs\n", 2),  # diff3
    ("<<<<<<<\nx\n=======\n>>>>>>>\n", 1),  # markers without labels
    ("Title\n=======\n\nA setext heading, not a conflict.\n", None),
    ("Title\n=======\n\nSome text.\n\nOther\n=======\n>>>>>>> not after a <<<<<<<\n", None),
    ("<<<<<<< HEAD\nonly an opening and a close\n>>>>>>> x\n", None),
    ("```\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> b\n```\n", None),  # shown in code
    ("~~~~text\n<<<<<<< HEAD\n=======\n>>>>>>> b\n~~~~\n\n<<<<<<< a\n=======\n>>>>>>> b\n",
     7),
    ("<<<<<<<< eight, not a marker\nx\n=======\ny\n>>>>>>> b\n", None),
    ("> <<<<<<< quoted\n=======\n>>>>>>> b\n", None),
])
def test_conflict_markers_count_only_as_a_whole_sequence(text: str, line) -> None:
    assert conflict_line(text) == line


def test_ingest_skips_a_half_merged_source_and_compiles_the_rest(wiki, repo) -> None:
    bad = write(repo / "docs" / "expenses.md", CONFLICTED)
    heading = write(repo / "docs" / "setext.md", "Travel\n=======\n\nPer diem pays 75 "
                    "percent of the daily rate on travel days.\n")
    good = write(repo / "docs" / "leave.md", "# Leave\n\nLeave accrues every pay period.\n")
    report = ingest(wiki, [bad, heading, good], author=ALICE)
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        ("expenses.md", "unresolved merge-conflict markers at line 5 (finish the "
                             "merge, then ingest it)")]
    assert report.added == 2 and report.proposal is not None


def test_ingest_cli_reports_the_conflict_and_exits_like_other_skips(wiki, repo, cli) -> None:
    write(repo / "notes" / "expenses.md", CONFLICTED)
    write(repo / "notes" / "leave.md", "# Leave\n\nLeave accrues every pay period.\n")
    result = cli("ingest", str(repo / "notes"))
    assert result.exit_code != 70, result.output
    assert "unresolved merge-conflict markers at line 5" in result.output
    assert "internal error" not in result.output
