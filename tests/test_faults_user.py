"""Faults a user can cause end in one clear line and an honest exit code (newcomer report
items 10-13): a filter naming nothing is a usage error, not an evidence gap; a leg named
in --legs that cannot run is an error, the default legs still degrade; a bad embedding
setting is a config error; Ctrl-C while starting says ``interrupted``; minor messages."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.memory_helpers import entry, land
from wiki.answering.filters import NoMatchingEntriesError
from wiki.answering.search import filters_for, search_for
from wiki.store.workspace import Wiki

QUESTION = "how do I file a travel voucher?"


def _build_travel(wiki: Wiki, repo: Path) -> None:
    land(wiki, {
        "travel/voucher.md": entry("e-voucher", "Travel vouchers",
                                   "File a travel voucher in the finance portal within "
                                   "30 days of the trip.", tags="[money]", scope="finance"),
        "ops/pager.md": entry("e-pager", "Pager duty", "The pager rotates weekly.",
                              tags="[oncall]")})


@pytest.fixture
def travel(from_template) -> Wiki:
    return from_template(_build_travel)


def _gaps(wiki: Wiki) -> str:
    path = wiki.state_dir / "gaps.jsonl"
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--category", "nosuch", "error: no entries in category 'nosuch' (categories: ops, travel)"),
    ("--scope", "nosuchscope", "error: no entries in scope 'nosuchscope' (scopes: finance, ops)"),
])
def test_ask_with_a_filter_naming_nothing_is_a_usage_error(cli, travel: Wiki, option: str,
                                                           value: str, message: str) -> None:
    result = cli("ask", QUESTION, option, value)
    assert result.exit_code == 2, result.output
    assert result.stderr == message + "\n"
    assert result.stdout == ""
    assert _gaps(travel) == ""  # nothing recorded as an evidence gap
    assert "nosuch" not in cli("gaps").output


def test_search_with_a_tag_nobody_has_is_a_usage_error(cli, travel: Wiki) -> None:
    result = cli("search", "voucher", "--tag", "nosuch")
    assert result.exit_code == 2, result.output
    assert result.stderr == "error: no entries tagged 'nosuch' (tags: money, oncall)\n"
    together = cli("search", "voucher", "--category", "ops", "--tag", "money")
    assert together.exit_code == 2
    assert together.stderr == ("error: no entry matches category 'ops', tag 'money' "
                               "together\n")


def test_filters_that_match_still_search_and_a_real_gap_is_still_a_gap(cli,
                                                                       travel: Wiki) -> None:
    found = cli("search", "voucher", "--category", "travel", "--tag", "money")
    assert found.exit_code == 0, found.output
    assert "travel/voucher.md" in found.stdout
    gap = cli("ask", "what is the parking policy for bicycles?", "--category", "ops")
    assert gap.exit_code == 3, gap.output
    assert "parking" in _gaps(travel)


def test_the_library_raises_a_typed_error(travel: Wiki) -> None:
    with pytest.raises(NoMatchingEntriesError, match="category 'nosuch'") as raised:
        search_for(travel, "voucher", filters=filters_for(category="nosuch"))
    assert (raised.value.option, raised.value.value) == ("category", "nosuch")


def test_a_vector_leg_named_in_legs_that_cannot_run_is_an_error(cli, travel: Wiki) -> None:
    named = cli("search", "voucher", "--legs", "bm25,vector")  # WIKI_EMBED_MODEL=none
    assert named.exit_code == 2, named.output
    assert named.stderr.startswith("error: --legs vector cannot run: turned off "
                                   "(WIKI_EMBED_MODEL=none)")
    assert named.stderr.count("\n") == 1
    default = cli("search", "voucher")  # the default legs degrade with a note
    assert default.exit_code == 0, default.output
    assert "travel/voucher.md" in default.stdout
    assert "note: vector leg skipped" in default.stderr


@pytest.mark.parametrize(("variable", "allowed"), [
    ("WIKI_EMBED_RUNTIME", "auto, onnx, torch"), ("WIKI_EMBED_SERVER", "auto, off")])
def test_a_bad_embedding_setting_is_a_config_error_whatever_the_legs(
        cli, travel: Wiki, monkeypatch, variable: str, allowed: str) -> None:
    monkeypatch.setenv(variable, "bogus")
    for args in (("search", "voucher"), ("search", "voucher", "--legs", "bm25"),
                 ("ask", QUESTION)):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr == f"error: {variable} must be one of {allowed}, not 'bogus'\n"
    assert _gaps(travel) == ""


def test_an_llm_leg_named_in_legs_whose_model_fails_is_an_error(cli, travel: Wiki,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("WIKI_MODEL", "nosuchprovider/xyz")
    result = cli("search", "voucher", "--legs", "llm")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --legs llm cannot run: the model "
                                    "WIKI_MODEL='nosuchprovider/xyz' failed")
    assert result.stderr.count("\n") == 1 and "litellm." not in result.stderr
    default = cli("search", "voucher")  # llm is not a default leg: nothing changes
    assert default.exit_code == 0, default.output


def test_approving_a_landed_proposal_names_its_commit(cli, travel: Wiki) -> None:
    landed = travel.repo.git.log(travel.head(), "-1", "--format=%H %s")
    commit, subject = landed.split(" ", 1)
    name = subject.removeprefix("Land proposal ").split(":", 1)[0]
    result = cli("approve", name)
    assert result.exit_code == 1, result.output
    assert result.stderr == f"error: proposal '{name}' already landed (as {commit[:12]})\n"


def test_not_a_repository_names_the_absolute_path(runner, tmp_path: Path) -> None:
    from wiki_cli.app import app

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(app, ["ask", "hello"])
    finally:
        os.chdir(here)
    assert result.exit_code == 2
    assert result.stderr == (f"error: {tmp_path}: not inside a git repository "
                             "(run `git init` first)\n")


def test_usage_lines_name_query_and_question(cli) -> None:
    assert "search [OPTIONS] QUERY\n" in cli("search", "--help").stdout
    asked = cli("ask")
    assert asked.exit_code == 2 and "ask [OPTIONS] QUESTION\n" in asked.output


def test_doctor_piped_has_no_padding(cli) -> None:
    result = cli("doctor")
    lines = result.stdout.splitlines()
    assert lines and all(line == line.rstrip() for line in lines)


def _as_from_a_terminal() -> None:
    """``preexec_fn``: Ctrl-C acts as it does for a command typed in a terminal. A child
    inherits an *ignored* SIGINT (a background job of a non-interactive shell, nohup, or a
    pytest-xdist worker: execnet ignores it), and Python then keeps ignoring it, so the
    signal these tests send did nothing and the command ran on ("no wiki branch", exit 2)
    when the suite was started in the background."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wiki_with_import_hook(repo: Path, prelude: str, on_import: str, argv: list[str]):
    """Run ``wiki ARGV`` in a real process whose import of ``wiki_cli.query`` (the
    command's heavy modules, before the CLI's own Ctrl-C handler is set) first runs the
    statement ``on_import``; ``prelude`` is code defined before it."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    code = ("import os, signal, sys, builtins\n" + prelude +
            "real = builtins.__import__\n"
            "def hook(name, *a, **k):\n"
            "    if name == 'wiki_cli.query':\n"
            f"        {on_import}\n"
            "    return real(name, *a, **k)\n"
            "builtins.__import__ = hook\n"
            f"sys.argv = ['wiki', *{argv!r}]\n"
            "from wiki_cli.app import main\n"
            "main()\n")
    return subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, text=True,
                          capture_output=True, timeout=120, preexec_fn=_as_from_a_terminal)


def test_ctrl_c_while_starting_says_interrupted(repo: Path) -> None:
    """A real process interrupted before the CLI's own handler is set: one line, 130."""
    result = _wiki_with_import_hook(repo, "", "os.kill(os.getpid(), signal.SIGINT)",
                                    ["ask", "x"])
    assert result.returncode == 130, result.stderr
    assert result.stderr == "interrupted\n"


def test_ctrl_c_inside_a_finalizer_says_interrupted(repo: Path) -> None:
    """Ctrl-C landing while a ``__del__`` runs (GitPython's config reader has one) printed
    "Exception ignored in ... Traceback ... KeyboardInterrupt" and the command went on."""
    finalized = ("class Finalized:\n"
                 "    def __del__(self):\n"
                 "        os.kill(os.getpid(), signal.SIGINT)\n"
                 "        sum(range(100000))  # the handler runs here, inside the finalizer\n")
    result = _wiki_with_import_hook(repo, finalized, "Finalized()", ["search", "x"])
    assert result.stderr == "interrupted\n"
    assert result.returncode == 130


def test_ctrl_c_on_python_m_wiki_cli_says_interrupted(wiki, repo: Path) -> None:
    """Ctrl-C on a running ``python -m wiki_cli`` command: one line, exit 130, never a
    traceback. The signal is sent once the command is known to run (``wiki mcp`` has
    answered ``initialize``), not after a fixed sleep: on a loaded machine a sleep landed
    inside the interpreter's own start-up (a traceback from ``<frozen io>``, before any code
    of ours runs). Ctrl-C while our modules import is the import-hook test above."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    process = subprocess.Popen([sys.executable, "-m", "wiki_cli", "mcp"], cwd=repo, env=env,
                               text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=_as_from_a_terminal)
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "test", "version": "0"}}}
    process.stdin.write(json.dumps(hello) + "\n")
    process.stdin.flush()
    assert '"id":1' in process.stdout.readline()  # the command runs: now press Ctrl-C
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert (process.returncode, stderr) == (130, "interrupted\n")
