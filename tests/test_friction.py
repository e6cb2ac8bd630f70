"""Everyday friction (issue 17, parts 4 and 6): what a person meets in daily use says what
is true, keeps identifiers whole at 80 columns, and takes the input a person has."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import BOB, acting_as, write

from wiki.doctor import LOCAL_MODEL_INSTALL, check_optional

ROOT = Path(__file__).resolve().parent.parent


def _words(text: str) -> str:
    return " ".join(text.split())


# -- doctor and README give the same install advice for the local model ----------------------

def test_doctor_and_readme_agree_on_installing_the_local_model() -> None:
    fixes = {check.name: check.fix for check in check_optional()}
    readme = _words((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "make setup-llm" in LOCAL_MODEL_INSTALL and "wiki-kb[local]" in LOCAL_MODEL_INSTALL
    assert "after `make setup-llm`, or `pip install 'wiki-kb[local]'` outside a checkout" in readme
    if fixes["llama_cpp"]:  # not installed here: the fix shown is the README's
        assert fixes["llama_cpp"] == LOCAL_MODEL_INSTALL


# -- at 80 columns identifiers are never cut --------------------------------------------------

LONG_TITLE = "Reimbursement of travel expenses for international conference attendance"


@pytest.fixture
def terminal_80(monkeypatch):
    """stdout as an 80-column terminal (the console is sized once, at import)."""
    from wiki_cli.render import out

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(out, "width", 80)


def test_proposal_names_and_paths_stay_whole_at_80_columns(cli, repo: Path, terminal_80) -> None:
    assert cli("init").exit_code == 0
    names = []
    for n in range(2):
        write(repo / f"n{n}.md", f"---\ntitle: {LONG_TITLE} {n}\n---\nFile within five days.\n")
        done = cli("propose", str(repo / f"n{n}.md"), "--category",
                   "travel-and-expenses-policies-for-international-conferences")
        assert done.exit_code == 0, done.output
        names.append(done.stdout.strip())
    listed = cli("proposals")
    assert listed.exit_code == 0
    lines = listed.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    for name in names:  # each name whole on one line, never cut with … or folded
        assert any(name in line for line in lines), listed.stdout
    with acting_as(BOB):
        assert cli("approve", names[0]).exit_code == 0
    path = ("travel-and-expenses-policies-for-international-conferences/"
            "reimbursement-of-travel-expenses-for-international-conference-attendance-0.md")
    found = cli("search", "reimbursement international conference")
    assert found.exit_code == 0
    assert any(path in line for line in found.stdout.splitlines()), found.stdout
    revisions = cli("history", path)
    assert any(path in line for line in revisions.stdout.splitlines()), revisions.stdout


def test_a_wide_terminal_keeps_every_column(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    write(repo / "n.md", f"---\ntitle: {LONG_TITLE}\n---\nFile within five days.\n")
    assert cli("propose", str(repo / "n.md")).exit_code == 0
    header = cli("proposals").stdout.splitlines()[0].split()
    assert header == ["proposal", "author", "created", "paths", "state", "flags", "subject"]
