"""Start-time hygiene (issue 17): what a ``wiki`` process imports, never how long it takes
(the timings are in ``make bench``, evals/bench_start.py). ``wiki --version`` loads neither
the typer app nor git, numpy or rich's progress bars; ``wiki search`` loads only the command
module that defines it, no model or LLM library and, over a fresh index,
not GitPython; the table that makes
that possible (:data:`wiki_cli.app.COMMANDS`) matches the commands the full app registers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOB, acting_as, write
from typer.main import get_command_name

from wiki_cli.app import COMMANDS, MODULES, app, build, command_module

MODEL_LIBRARIES = {"torch", "sentence_transformers", "transformers", "litellm",
                   "onnxruntime", "tokenizers", "llama_cpp"}
NOT_FOR_VERSION = MODEL_LIBRARIES | {"typer", "click", "pydantic", "git", "numpy",
                                     "yaml", "rich.progress", "indexes",
                                     "wiki.store", "wiki.answering", "wiki.llm", "wiki.lint",
                                     "wiki_cli.common"}
OTHER_COMMAND_MODULES = {f"wiki_cli.{m}" for m in MODULES if m != "query"}


def imported(argv: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -X importtime -m wiki_cli ARGV`` in ``cwd``; the process and the
    names of every module it imported (from the ``-X importtime`` lines on stderr)."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "wiki_cli", *argv],
                            cwd=cwd, text=True, capture_output=True, timeout=120)
    names = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
             if line.startswith("import time:") and "cumulative" not in line}
    return result, names


def full_app(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ARGV through the app with every command module imported (as before lazy
    loading: ``from wiki_cli.app import app``)."""
    code = "from wiki_cli.app import app; app(prog_name='wiki')"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=cwd, text=True,
                          capture_output=True, timeout=120)


def loaded(names: set[str], wanted: set[str]) -> list[str]:
    """The modules of ``names`` that are one of ``wanted`` or inside one of them."""
    return sorted(n for n in names if any(n == w or n.startswith(w + ".") for w in wanted))


def test_version_prints_the_version_without_building_the_app(tmp_path: Path) -> None:
    result, names = imported(["--version"], tmp_path)
    assert result.returncode == 0
    assert result.stdout == "wiki 0.1.0\n"
    assert "wiki_cli.app" in names  # the probe sees the imports at all
    assert loaded(names, NOT_FOR_VERSION) == []


def test_every_safety_pattern_compiles() -> None:
    """The table compiles on first use (:attr:`wiki.safety.patterns.Pattern.regex`): a row
    that would not compile must still fail a test, not a user's command."""
    from wiki.safety.patterns import PATTERNS

    assert all(p.regex.pattern == p.source for p in PATTERNS)


def test_version_after_another_option_still_goes_through_the_app(tmp_path: Path) -> None:
    result, names = imported(["-q", "--version"], tmp_path)
    assert (result.returncode, result.stdout) == (0, "wiki 0.1.0\n")
    assert "wiki_cli.common" in names


def test_importing_the_entry_module_loads_nothing_heavy() -> None:
    code = ("import sys, wiki_cli.app\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'typer', 'rich', 'git', 'numpy', 'pydantic', 'litellm', 'torch'}))")
    result = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True,
                            timeout=60, check=True)
    assert result.stdout.strip() == "[]"


@pytest.fixture
def landed(repo: Path, cli) -> Path:
    """``repo`` with one entry landed on its wiki branch."""
    write(repo / "docs" / "a.md", "# Alpha\n\nAlpha text about travel vouchers.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    return repo


def test_search_loads_only_its_command_module_and_no_model_library(landed: Path) -> None:
    imported(["search", "alpha"], landed)  # brings the index up to the branch (a write)
    result, names = imported(["search", "alpha"], landed)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "docs/a.md" in result.stdout
    assert "wiki_cli.query" in names and "wiki.answering.search" in names
    assert loaded(names, MODEL_LIBRARIES | OTHER_COMMAND_MODULES | {"wiki.lint"}) == []
    assert loaded(names, {"rich.progress"}) == []  # stderr is not a terminal: no bar
    before = full_app(["search", "alpha"], landed)
    assert (result.stdout, result.returncode) == (before.stdout, before.returncode)


def test_search_over_a_fresh_index_loads_no_gitpython(landed: Path) -> None:
    """The repository, its config and the wiki head come from the ``git`` command
    (:mod:`wiki.store.gitcli`); GitPython (and its ``git version`` runs) is for reading
    entries and writing, which a fresh index does not need."""
    imported(["search", "alpha"], landed)  # brings the index up to the branch
    for argv in (["search", "alpha"], ["search", "--json", "--explain", "alpha"],
                 ["search", "nothing-like-it"]):
        result, names = imported(argv, landed)
        assert result.returncode in (0, 1), result.stderr[-2000:]
        assert loaded(names, {"git", "gitdb", "smmap"}) == [], argv
    assert "docs/a.md" in imported(["search", "alpha"], landed)[0].stdout


def test_search_help_is_the_full_apps(landed: Path) -> None:
    result, names = imported(["search", "--help"], landed)
    assert result.returncode == 0
    assert loaded(names, OTHER_COMMAND_MODULES) == []
    assert result.stdout == full_app(["search", "--help"], landed).stdout


def test_the_command_table_matches_the_app() -> None:
    registered = {(info.name or get_command_name(info.callback.__name__),
                   info.callback.__module__) for info in app.registered_commands}
    registered |= {(info.name, info.typer_instance.registered_commands[0].callback.__module__)
                   for info in app.registered_groups}
    table = {(name, f"wiki_cli.{module}") for module, names in COMMANDS.items()
             for name in names}
    assert table == registered
    assert tuple(COMMANDS) == MODULES


def test_building_in_parts_keeps_the_help_order() -> None:
    code = ("from wiki_cli.app import build\n"
            "from typer.main import get_command\n"
            "build(('query',)); build(('hooks', 'review'))\n"
            "print(list(get_command(build()).commands))")
    parts = subprocess.run([sys.executable, "-c", code], text=True, capture_output=True,
                           timeout=60, check=True).stdout
    from typer.main import get_command

    assert parts.strip() == str(list(get_command(build()).commands))
    assert parts.split(", ")[:3] == ["['init'", "'ingest'", "'index'"]


@pytest.mark.parametrize(("argv", "module"), [
    (["search", "x"], "query"),
    (["-C", "search", "ask", "x"], "query"),
    (["--repo", "r", "--branch", "w", "-q", "hook", "install"], "hooks"),
    (["--repo=r", "approve", "p"], "review"),
    (["-v", "cron", "--help"], "cron"),
    (["--help"], None),
    (["--version"], None),
    (["serch", "x"], None),
    ([], None),
])
def test_the_command_is_found_past_the_global_options(argv: list[str],
                                                      module: str | None) -> None:
    assert command_module(argv) == module


def test_the_index_sets_recursive_triggers(tmp_path: Path) -> None:
    """:class:`indexes.sqlite.engine.SearchIndex` sets up its connection as it always has
    (``recursive_triggers`` on) and writes its metadata with plain SQL."""
    from indexes.sqlite.engine import SearchIndex

    with SearchIndex(tmp_path / "x.sqlite") as index:
        assert index.conn.execute("PRAGMA recursive_triggers").fetchone()[0] == 1
        index.set_meta("k", "v")
        index.set_meta("k", "w")
        assert index.get_meta("k") == "w"
