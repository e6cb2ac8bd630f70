"""CLI conventions: --quiet/--verbose, exit codes in --help and docs, --json on read
commands, shell completion, NO_COLOR, and no traceback for a user error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from conftest import write

from wiki_cli.app import app
from wiki_cli.errors import EXIT_CODE_MEANINGS, INTERNAL

ROOT = Path(__file__).parent.parent
NO_JSON = {"init", "reject", "rebase", "mcp", "hook run"}
"""Commands without --json: writes that print one name, the hook's own runner, the
MCP server (its protocol is JSON)."""


def _commands(group=None, prefix: str = ""):
    group = group or typer.main.get_command(app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_every_read_command_takes_json() -> None:
    names = dict(_commands())
    assert {"search", "ask", "show", "lint", "doctor", "hook status", "cron show"} <= set(names)
    for name, command in names.items():
        options = {o for p in command.params for o in getattr(p, "opts", [])}
        assert ("--json" in options) == (name not in NO_JSON), name


def test_lint_json_is_format_json(cli) -> None:
    cli("init")
    assert json.loads(cli("lint", "--json").stdout)["findings"] == []
    assert json.loads(cli("lint", "--json").stdout).keys() == \
        json.loads(cli("lint", "--format", "json").stdout).keys()
    clash = cli("lint", "--json", "--format", "markdown")
    assert clash.exit_code == 2 and "disagree" in clash.stderr


def test_exit_codes_in_help_and_docs(runner) -> None:
    help_text = runner.invoke(app, ["--help"]).stdout
    docs = (ROOT / "docs" / "cli.md").read_text()
    for code, meaning in EXIT_CODE_MEANINGS:
        assert re.search(rf"^\s+{code}\s+{re.escape(meaning)}$", help_text, re.M), code
        assert re.search(rf"^\| {code} \| ", docs, re.M), f"docs/cli.md lacks exit code {code}"
    assert [c for c, _ in EXIT_CODE_MEANINGS] == sorted({c for c, _ in EXIT_CODE_MEANINGS})


def test_quiet_and_verbose(cli, repo: Path) -> None:
    cli("init")
    write(repo / "e.md", "---\ntitle: Quiet things\n---\nSome body text.\n")
    quiet = cli("-q", "propose", str(repo / "e.md"))
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert quiet.stdout.strip().startswith("new-")
    assert cli("-q", "search", "zzqx").stderr == ""  # no "note:" or "no matches"
    failed = cli("-q", "show", "nope")
    assert failed.exit_code == 1 and failed.stderr.startswith("error: no entry")
    loud = cli("-v", "search", "zzqx")
    assert "wiki: branch 'wiki' of" in loud.stderr and "index " in loud.stderr
    assert re.search(r"^took \d+\.\d\ds$", loud.stderr, re.M)
    assert cli("status").stderr == ""  # nothing left over from -v in this process
    both = cli("-q", "-v", "status")
    assert both.exit_code == 2 and "cannot be used together" in both.stderr


def test_shell_completion_is_offered(runner) -> None:
    assert "--install-completion" in runner.invoke(app, ["--help"]).stdout
    # typer finds the shell among the process's ancestors (shellingham): run from bash,
    # as a user does, not from whatever started the suite (a suite started with no shell
    # above it got "Shell  not supported"); `; exit` keeps bash from exec-ing python
    script = subprocess.run(["bash", "-c", '"$0" -m wiki_cli --show-completion; exit $?',
                             sys.executable], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert script.returncode == 0, script.stderr
    assert "_WIKI_COMPLETE" in script.stdout and "complete -o" in script.stdout


def test_no_color_is_respected(repo: Path) -> None:
    def doctor(**env: str) -> str:
        base = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        return subprocess.run([sys.executable, "-m", "wiki_cli", "doctor"], cwd=repo,
                              capture_output=True, text=True, timeout=60,
                              env={**base, "PYTHONPATH": str(ROOT), "FORCE_COLOR": "1",
                                   **env}).stdout

    color = re.compile(r"\x1b\[(3\d|9\d|38;)")
    assert color.search(doctor())  # forced colour is on without NO_COLOR
    assert not color.search(doctor(NO_COLOR="1"))


USER_ERRORS = [
    ["propose", "missing.md"], ["propose", "bad.md"], ["propose", "--edit", "nope"],
    ["propose", "--retract", "nope"], ["diff", "nope"], ["approve", "nope"],
    ["reject", "nope"], ["rebase", "nope"], ["history", "nope"], ["show", ""],
    ["search", "--legs", "foo", "x"], ["ask", "--as-of", "yesterday", "x"],
    ["lint", "--select", "Z9"], ["lint", "--format", "xml"], ["sync", "nope"],
    ["hook", "run", "nope"], ["hook", "run", "--", "--output=/tmp/x"],
    ["--branch", "refs/x", "status"], ["search", "--limit", "0", "x"], ["ingest", ""],
    ["search", '"'], ["ask", "   "], ["init"],
]


@pytest.mark.parametrize("argv", USER_ERRORS, ids=" ".join)
def test_user_errors_are_one_line_without_traceback(cli, repo: Path, argv) -> None:
    cli("init")
    write(repo / "bad.md", "no frontmatter here\n")
    result = cli(*argv)
    assert result.exit_code not in (0, INTERNAL), result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 or "Usage:" in result.stderr, result.stderr


@pytest.mark.parametrize("columns", [60, 80, 200])
def test_help_summaries_are_whole_sentences(runner, columns: int) -> None:
    """Issue 28 item 6: `wiki --help` (and a group's) lists each command's whole first
    sentence, wrapped to the width, never cut with "..." at click's 45 characters."""
    from wiki_cli.help_text import first_sentence

    for args in (["--help"], ["hook", "--help"], ["cron", "--help"]):
        shown = runner.invoke(app, args, terminal_width=columns).output
        listing = shown.split("Commands:", 1)[1].split("Exit codes:", 1)[0]
        assert not [line for line in listing.splitlines() if line.rstrip().endswith("...")]
        assert " ".join(listing.split()).count(".") >= 2
    folded = "".join(runner.invoke(app, ["--help"], terminal_width=columns).output.split())
    for name, command in typer.main.get_command(app).commands.items():
        assert "".join(f"{name} {first_sentence(command.help)}".split()) in folded
    assert first_sentence("Do x (e.g. y). More.") == "Do x (e.g. y)."
    assert first_sentence("One line\nwrapped here.\n\nSecond paragraph.") == \
        "One line wrapped here."


def test_piped_tables_have_no_padding(cli, wiki, repo: Path) -> None:
    """Issue 28 item 6: piped, no line of any table (log, search --explain, status,
    proposals) ends in the spaces that pad it to the widest row."""
    from conftest import git, ingest_and_land

    write(repo / "docs" / "leave.md", "# A long title about annual leave requests in HR Links\n\n"
                                      "Annual leave is requested in HR Links.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line 670 is for time out of office.\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "docs")
    ingest_and_land(wiki, repo / "docs")
    for args in (["log"], ["search", "--explain", "annual leave"], ["status"],
                 ["history", "docs/leave.md"]):
        shown = cli(*args).stdout
        assert len(shown.splitlines()) >= 2, (args, shown)
        assert [line for line in shown.splitlines() if line.endswith(" ")] == [], args
