"""Everyday friction (issue 17, parts 4 and 6): what a person meets in daily use says what
is true, keeps identifiers whole at 80 columns, and takes the input a person has."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOB, acting_as, git, write

from wiki.doctor import LOCAL_MODEL_INSTALL, check_optional
from wiki_cli.mcp_command import ON_A_TERMINAL

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


# -- wiki diff: structured fields as YAML, --stat without blank lines ------------------------

def test_diff_shows_sources_as_yaml_and_stat_has_no_blank_lines(cli, repo: Path) -> None:
    write(repo / "docs" / "travel.md", "# Travel\n\nFile a travel voucher within five days.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs")
    assert cli("init").exit_code == 0
    first = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", first).exit_code == 0
    write(repo / "docs" / "travel.md", "# Travel\n\nFile a travel voucher within seven days.\n")
    git(repo, "commit", "-qam", "seven")
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    shown = cli("diff", name)
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    assert "   sources:" in lines and "   - uri: git:docs/travel.md" in lines
    assert any(line.startswith("  -  fingerprint: sha256:") for line in lines)
    assert any(line.startswith("  +  fingerprint: sha256:") for line in lines)
    assert "[{'uri'" not in shown.stdout and "{'" not in shown.stdout
    stat = cli("diff", name, "--stat")
    assert stat.exit_code == 0 and "" not in stat.stdout.splitlines()
    assert stat.stdout.splitlines()[-1].startswith("modified docs/travel.md (")


# -- wiki search without a confident hit says so and exits 1 ---------------------------------

def test_search_without_a_confident_hit_exits_1_with_its_weak_hits(cli, repo: Path) -> None:
    write(repo / "docs" / "travel.md", "# Travel\n\nFile a travel voucher within five days.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    weak = cli("search", "travel zzqx plugh frobnicate quux")
    assert weak.exit_code == 1 and "docs/travel.md" in weak.stdout
    assert "note: weak matches only" in weak.stderr
    as_json = cli("search", "travel zzqx plugh frobnicate quux", "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["gap"] is True
    none = cli("search", "zzqx")
    assert none.exit_code == 1 and none.stderr.endswith("no matches\n")
    good = cli("search", "travel voucher", "--json")
    assert good.exit_code == 0 and json.loads(good.stdout)["gap"] is False


# -- wiki facts without a key lists the keys -------------------------------------------------

def test_facts_without_a_key_lists_the_keys(cli, repo: Path) -> None:
    write(repo / "docs" / "travel.md", "# Travel\n\nKeep every receipt over 100 USD.\n")
    write(repo / "docs" / "office.md", "# Office\n\nOur office is in Denver.\n")
    assert cli("init").exit_code == 0
    landed = cli("ingest", str(repo / "docs"))
    with acting_as(BOB):
        assert cli("approve", landed.stdout.strip()).exit_code == 0
    empty = cli("facts")
    assert empty.exit_code == 0 and empty.stdout == ""
    assert "no keyed facts yet" in empty.stderr
    assert json.loads(cli("facts", "--json").stdout) == []
    for key, value in (("travel.receipt_threshold", "100"), ("office.city", "Denver")):
        name = cli("facts", "set", key, value, "--unit", "USD" if "travel" in key else "",
                   "--entry", f"docs/{key.split('.')[0]}.md")
        assert name.exit_code == 0, name.output
        with acting_as(BOB):
            assert cli("approve", name.stdout.strip()).exit_code == 0
    listed = cli("facts")
    assert listed.exit_code == 0
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["office.city", "travel.receipt_threshold"]
    assert rows[1][1:3] == ["100", "USD"] and rows[1][-1] == "docs/travel.md"
    as_json = json.loads(cli("facts", "--json").stdout)
    assert [k["key"] for k in as_json] == ["office.city", "travel.receipt_threshold"]
    assert as_json[1]["current"][0]["value"] == 100


# -- wiki gaps lists the recorded evidence gaps ----------------------------------------------

def _gap_log(repo: Path) -> Path:
    return repo / ".git" / "wiki" / "gaps.jsonl"


def test_gaps_lists_what_ask_recorded_newest_first(cli, repo: Path) -> None:
    write(repo / "docs" / "travel.md", "# Travel\n\nFile a travel voucher within five days.\n")
    assert cli("init").exit_code == 0
    none = cli("gaps")
    assert none.exit_code == 0 and none.stdout == "" and "no evidence gaps" in none.stderr
    assert json.loads(cli("gaps", "--json").stdout)["gaps"] == []
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    for question in ("what is the parking policy?", "who waters the office plants?"):
        assert cli("ask", question).exit_code == 3
    listed = cli("gaps")
    assert listed.exit_code == 0
    questions = [line for line in listed.stdout.splitlines() if "?" in line]
    assert len(questions) == 2 and "office plants" in questions[0]  # newest first
    data = json.loads(cli("gaps", "--json", "--limit", "1").stdout)
    assert data["total"] == 2 and len(data["gaps"]) == 1 and data["skipped"] == []
    assert data["gaps"][0]["question"] == "who waters the office plants?"
    assert data["gaps"][0]["commit"] and data["gaps"][0]["line"] == 2
    assert "1 of 2 gaps shown" in cli("gaps", "-n", "1").stderr


def test_gaps_skips_a_damaged_line_with_a_note(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    log = _gap_log(repo)
    log.parent.mkdir(parents=True, exist_ok=True)
    good = {"time": "2026-01-02T03:04:05Z", "question": "where is the VPN guide?",
            "commit": "a" * 40, "confidence": 0.1}
    log.write_bytes(b"not json\n" + json.dumps(good).encode() + b"\n[1, 2]\n\xff\xfe\n"
                    + b'{"time": "2026-01-03T00:00:00Z"}\n')
    listed = cli("gaps")
    assert listed.exit_code == 0 and "where is the VPN guide?" in listed.stdout
    notes = [line for line in listed.stderr.splitlines() if line.startswith("note:")]
    assert notes[0] == f"note: {log}:1: skipped (not JSON (Expecting value))"
    assert notes[1] == f"note: {log}:3: skipped (not a JSON object (a list))"
    assert notes[2] == f"note: {log}:4: skipped (not UTF-8 text)"
    assert notes[3].startswith("note: 1 more lines of ")
    data = json.loads(cli("gaps", "--json").stdout)
    assert [s["line"] for s in data["skipped"]] == [1, 3, 4, 5]
    assert data["skipped"][3]["reason"] == "no question"
    assert log.read_bytes().startswith(b"not json\n")  # read, never rewritten


def test_gaps_log_that_cannot_be_read_is_one_error_line(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    _gap_log(repo).mkdir(parents=True)
    failed = cli("gaps")
    assert failed.exit_code == 2  # a usage error naming the path (tests/test_bounded_calls.py)
    assert failed.stderr.startswith(f"error: {_gap_log(repo)}: is a directory, not a regular "
                                    "file")
    assert len(failed.stderr.strip().splitlines()) == 1


# -- wiki propose FILE takes plain markdown ---------------------------------------------------

def test_propose_plain_markdown_takes_its_title_from_the_first_heading(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    text = "```sh\n# not a heading\n```\n\n# Guest wifi\n\nThe password is on the fridge.\n"
    write(repo / "wifi.md", text)
    done = cli("propose", str(repo / "wifi.md"), "--category", "ops")
    assert done.exit_code == 0, done.output
    assert "note: " in done.stderr and "titled 'Guest wifi' from its first '#' heading" \
        in done.stderr
    with acting_as(BOB):
        assert cli("approve", done.stdout.strip()).exit_code == 0
    shown = cli("show", "ops/guest-wifi.md")
    assert shown.exit_code == 0 and "title: Guest wifi" in shown.stdout
    assert shown.stdout.endswith(text)  # the text kept as written under the frontmatter
    as_json = cli("propose", "-", "--json", input="# Parking\n\nLot B.\n")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["titled_from"] == "Parking"


def test_propose_plain_markdown_without_a_heading_is_a_usage_error(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    write(repo / "note.md", "## Only a second-level heading\n\nText.\n")
    failed = cli("propose", str(repo / "note.md"))
    assert failed.exit_code == 2 and failed.stdout == ""
    assert failed.stderr.startswith("error: ") and failed.stderr.count("\n") == 1
    assert "no '# ' heading to take the title from" in failed.stderr
    assert cli("proposals", "--json").stdout.strip() == "[]"


# -- wiki mcp on a terminal says what it is --------------------------------------------------

def _mcp_process(repo: Path, stdin) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WIKI_EMBED_MODEL": "none"}
    return subprocess.Popen([sys.executable, "-m", "wiki_cli", "-C", str(repo), "mcp"],
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)


def test_mcp_started_on_a_terminal_says_it_speaks_mcp_on_stdio(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    primary, secondary = pty.openpty()
    try:
        process = _mcp_process(repo, secondary)
        os.close(secondary)
        os.write(primary, b"\x04")  # Ctrl-D: end of input, the server stops
        _, stderr = process.communicate(timeout=120)
    finally:
        os.close(primary)
    lines = stderr.decode().splitlines()
    said = [line for line in lines if "Model Context Protocol" in line]
    assert len(said) == 1
    assert said[0] == ON_A_TERMINAL.format(repo=repo.resolve())
    assert "docs/mcp.md" in said[0] and "stdin/stdout" in said[0]


def test_mcp_started_by_a_client_says_nothing(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    process = _mcp_process(repo, subprocess.PIPE)
    _, stderr = process.communicate(input=b"", timeout=120)
    assert b"Model Context Protocol" not in stderr
