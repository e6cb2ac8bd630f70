"""The CLI in-process: exit codes, JSON, one-line errors; plus real subprocess smoke tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOB, acting_as, identity_env, write

from wiki_cli.app import app


def _land_docs(cli, repo: Path) -> str:
    write(repo / "docs" / "travel.md", "---\ntitle: Travel vouchers\n---\n"
          "File a travel voucher in Concur within five days of returning.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    assert cli("init").exit_code == 0
    result = cli("ingest", str(repo / "docs"))
    assert result.exit_code == 0, result.output
    name = result.stdout.strip()
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output
    return name


def test_status_is_up_to_date_right_after_init(cli) -> None:
    assert cli("init").exit_code == 0
    status = cli("status")
    assert status.exit_code == 0, status.output
    assert "up to date" in status.stdout and "entries          0" in status.stdout


def test_full_flow_with_exit_codes(cli, repo: Path) -> None:
    _land_docs(cli, repo)
    found = cli("ask", "how do I file a travel voucher?")
    assert found.exit_code == 0
    assert "File a travel voucher in Concur within five days of returning. [1]" in found.stdout
    assert "[1] Travel vouchers — docs/travel.md" in found.stdout
    assert "git:docs/travel.md" in found.stdout
    gap = cli("ask", "zzqx plugh frobnicate")
    assert gap.exit_code == 3
    assert "does not say" in gap.stdout
    empty = cli("search", "   ")
    assert empty.exit_code == 2 and "error: the query is empty" in empty.stderr
    status = cli("status")
    assert status.exit_code == 0 and "up to date" in status.stdout


def test_search_json_and_explain(cli, repo: Path) -> None:
    _land_docs(cli, repo)
    result = cli("search", "tock #670", "--json")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["hits"][0]["path"] == "docs/tock.md"
    assert data["hits"][0]["legs"]["bm25"]["rank"] == 1
    assert data["hits"][0]["sources"][0]["uri"] == "git:docs/tock.md"
    explained = cli("search", "tock", "--explain")
    assert "bm25 #1" in explained.stdout
    none = cli("search", "zzqx")
    assert none.exit_code == 1 and "no matches" in none.stderr


@pytest.mark.robustness("W3")
def test_self_approval_exit_code_and_message(cli, repo: Path) -> None:
    cli("init")
    write(repo / "docs" / "a.md", "# A\n\nAlpha.\n")
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    refused = cli("approve", name)
    assert refused.exit_code == 5
    assert refused.stderr.count("\n") == 1 and "cannot approve" in refused.stderr
    listed = json.loads(cli("proposals", "--json").stdout)
    assert [p["name"] for p in listed] == [name]


def test_show_by_id_and_path(cli, repo: Path) -> None:
    _land_docs(cli, repo)
    by_path = cli("show", "docs/tock.md")
    assert by_path.exit_code == 0 and by_path.stdout.startswith("---\nid: e")
    entry_id = json.loads(cli("show", "docs/tock", "--json").stdout)["id"]
    assert cli("show", entry_id).stdout == by_path.stdout
    missing = cli("show", "nope")
    assert missing.exit_code == 1 and "no entry with id or path 'nope'" in missing.stderr


def test_errors_outside_a_repo_and_before_init(runner, tmp_path: Path, cli) -> None:
    outside = runner.invoke(app, ["-C", str(tmp_path), "status"])
    assert outside.exit_code == 2 and "not inside a git repository" in outside.stderr
    before = cli("search", "x")
    assert before.exit_code == 2 and "run `wiki init`" in before.stderr
    rebuild = cli("index", "--rebuild")
    assert rebuild.exit_code == 2
    assert cli("init").exit_code == 0
    again = cli("init")
    assert again.exit_code == 1 and "already exists" in again.stderr


@pytest.mark.robustness("F3")
def test_ingest_reports_bad_files_and_goes_on(cli, repo: Path) -> None:
    cli("init")
    write(repo / "kb" / "ok.md", "# Ok\n\nFine text.\n")
    write(repo / "kb" / "bad.md", "---\ntitle: x\ntitle: y\n---\nbody\n")
    result = cli("ingest", str(repo / "kb"))
    assert result.exit_code == 0
    assert "bad.md:3: invalid YAML: duplicate key 'title'" in result.stderr
    assert "1 sources read" in result.stderr and result.stdout.strip().startswith("ingest-")


def test_index_and_status_json(cli, repo: Path) -> None:
    _land_docs(cli, repo)
    rebuilt = json.loads(cli("index", "--rebuild", "--json").stdout)
    assert rebuilt["added"] == 2
    status = json.loads(cli("status", "--json").stdout)
    assert status["entries"] == 2 and status["indexed_commit"] == status["head"]


def test_every_command_is_documented() -> None:
    docs = Path(__file__).parent.parent.joinpath("docs", "cli.md").read_text()
    import typer.main
    names = typer.main.get_command(app).commands
    assert names
    for name in names:
        assert f"`wiki {name}" in docs, f"docs/cli.md does not document `wiki {name}`"


def _run(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wiki_cli", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=120)


@pytest.mark.slow
def test_subprocess_smoke_end_to_end(repo: Path) -> None:
    write(repo / "docs" / "a.md", "# Leave\n\nAnnual leave is requested in HR Links.\n")
    assert _run(["init"], repo).returncode == 0
    name = _run(["ingest", "docs"], repo).stdout.strip()
    landed = _run(["approve", name], repo, identity_env(BOB))
    assert landed.returncode == 0, landed.stderr
    asked = _run(["ask", "where is annual leave requested?"], repo)
    assert asked.returncode == 0
    assert "Annual leave is requested in HR Links. [1]" in asked.stdout
    assert _run(["ask", "zzqx"], repo).returncode == 3


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["search", "--help"]])
def test_light_commands_load_no_heavy_module(argv: list[str], repo: Path) -> None:
    code = ("import sys; from wiki_cli.app import main; sys.argv=['wiki', *sys.argv[1:]]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'torch', 'sentence_transformers', 'transformers', 'litellm', 'numpy'})\n"
            "print('HEAVY', heavy, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code, *argv], cwd=repo, text=True,
                            capture_output=True, timeout=60)
    assert "HEAVY []" in result.stderr


@pytest.mark.slow
def test_search_process_loads_no_model_library(repo: Path) -> None:
    write(repo / "docs" / "a.md", "# A\n\nAlpha text.\n")
    _run(["init"], repo)
    name = _run(["ingest", "docs"], repo).stdout.strip()
    _run(["approve", name], repo, identity_env(BOB))
    code = ("import sys; from wiki_cli.app import main; sys.argv=['wiki','search','alpha']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'torch', 'sentence_transformers', 'transformers', 'litellm'}), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, text=True,
                            capture_output=True, timeout=60)
    assert "HEAVY []" in result.stderr and "a.md" in result.stdout


def test_status_flags_duplicate_ids(cli, repo: Path) -> None:
    from conftest import ALICE, entry_text

    from wiki.store.snapshot import write_commit
    from wiki.store.workspace import Wiki
    cli("init")
    wiki = Wiki(repo)  # a hand-made commit on the branch: review would have refused it
    head = wiki.head()
    commit = write_commit(wiki.snapshot(head), {"a.md": entry_text("same", "A", "x").encode(),
                                                "b.md": entry_text("same", "B", "y").encode()},
                          "by hand", author=ALICE)
    wiki.store.update_ref(wiki.ref, commit, head, "by hand")
    cli("index")
    status = cli("status", "--json")
    assert status.exit_code == 1
    assert json.loads(status.stdout)["duplicate_ids"] == ["same"]


@pytest.mark.robustness("Q3")
def test_robustness_q3_query_punctuation_is_never_an_error_and_empty_exits_2(cli,
                                                                             repo: Path) -> None:
    _land_docs(cli, repo)
    for query in ["status: done", "retry OR", "why?", "50%", "a,b", "(x", "NEAR", "x" * 20_000]:
        result = cli("search", query)
        assert result.exit_code in (0, 1), (query[:40], result.output)  # hits, or no matches
        assert "error" not in result.output.lower(), (query[:40], result.output)
    dash = cli("search", "--", "-only")  # after "--" a leading hyphen is the query, not NOT
    assert dash.exit_code in (0, 1) and "error" not in dash.output.lower(), dash.output
    for query in ['"', "*"]:  # nothing searchable left: one clear line, exit 2
        result = cli("search", query)
        assert result.exit_code == 2 and "no searchable words" in result.stderr, result.output
    for command in ("search", "ask"):
        for query in ("", "   ", "\t\n"):
            result = cli(command, query)
            assert result.exit_code == 2, (command, query, result.output)
            assert result.stderr.count("\n") == 1 and "is empty" in result.stderr


@pytest.mark.robustness("I2")
def test_robustness_i2_rebuild_without_a_wiki_branch_fails_clearly(cli, repo: Path) -> None:
    result = cli("index", "--rebuild")
    assert result.exit_code == 2
    assert "no wiki branch 'wiki'" in result.stderr and "run `wiki init`" in result.stderr
    assert "indexed" not in result.output  # never a success that did nothing
    assert cli("index", "--rebuild", "--json").exit_code == 2


def test_dash_c_holds_for_one_invocation_only(runner, tmp_path: Path) -> None:
    """`wiki -C DIR` changes directory like `git -C`, but run in-process it must not leave
    the caller in DIR (a later test, or an embedding program, would run there)."""
    import os

    from wiki_cli.app import app

    before = os.getcwd()
    runner.invoke(app, ["-C", str(tmp_path), "status"])
    assert os.getcwd() == before
