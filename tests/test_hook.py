"""The post-commit hook in a real repository: install/chain/uninstall, what it marks, and
that it never fails or blocks a commit (ROBUSTNESS H3: argument lists, no shell)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from conftest import git, ingest_and_land, write

from wiki.answering.ask import ask_for
from wiki.errors import ConfigError
from wiki.lint import hook, run_lint
from wiki.store.workspace import Wiki


@pytest.fixture
def cited(wiki: Wiki, repo: Path) -> Wiki:
    write(repo / "docs" / "leave.md", "# Leave\n\nAnnual leave is requested in HR Links.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line 670 is for time out of office.\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "docs")
    ingest_and_land(wiki, repo / "docs")
    return wiki


def _hooks(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def test_install_is_idempotent_chains_and_uninstall_restores(wiki: Wiki, repo: Path) -> None:
    foreign = _hooks(repo) / "post-commit"
    foreign.parent.mkdir(exist_ok=True)
    foreign.write_text("#!/bin/sh\necho foreign >> \"$(git rev-parse --git-dir)/foreign.log\"\n")
    foreign.chmod(0o755)
    first = hook.install(wiki, python=sys.executable)
    second = hook.install(wiki, python=sys.executable)
    assert first == second and first.installed and first.chained
    assert (_hooks(repo) / "post-commit.legacy").read_text().startswith("#!/bin/sh\necho")
    write(repo / "x.txt", "x")
    git(repo, "add", "x.txt")
    git(repo, "commit", "-q", "-m", "x")
    assert (repo / ".git" / "foreign.log").read_text() == "foreign\n"  # still runs
    restored = hook.uninstall(wiki)
    assert not restored.installed and not restored.chained
    assert foreign.read_text().startswith("#!/bin/sh\necho foreign")
    assert hook.uninstall(wiki) == restored  # twice is fine


def test_hooks_path_elsewhere_is_refused(wiki: Wiki, repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".husky")
    with pytest.raises(ConfigError, match="core.hooksPath"):
        hook.install(wiki)


def test_a_commit_marks_exactly_the_entries_citing_its_files(cited: Wiki, repo: Path) -> None:
    (repo / "docs" / "leave.md").write_text("# Leave\n\nAnnual leave now goes to the portal.\n")
    git(repo, "commit", "-q", "-am", "leave moved")
    assert hook.mark_commit(cited) == ["docs/leave.md"]
    answer = ask_for(cited, "where is annual leave requested?")
    assert answer.citations[0].changed_sources == ["git:docs/leave.md"]
    findings = run_lint(cited, select={"W010"}).findings
    assert [(f.code, f.path) for f in findings] == [("W010", "docs/leave.md")]


def test_no_marks_during_a_rebase(cited: Wiki, repo: Path) -> None:
    (repo / ".git" / "rebase-merge").mkdir()
    (repo / "docs" / "leave.md").write_text("changed\n")
    git(repo, "commit", "-q", "-am", "during rebase")
    assert hook.mark_commit(cited) == []


def test_installed_hook_runs_in_the_background_and_never_fails_the_commit(
        cited: Wiki, repo: Path) -> None:
    hook.install(cited, python=sys.executable)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    (repo / "docs" / "tock.md").write_text("# Tock\n\nTock line 670: out of office.\n")
    git(repo, "add", "-A")
    started = time.perf_counter()
    import subprocess
    done = subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "$(touch pwned); `x`"],
                          env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0 and done.stderr == ""
    assert elapsed < 5  # the marker is detached; its work is not waited for
    log = cited.state_dir / "hook.log"
    for _ in range(100):
        if log.exists() and "marked" in log.read_text():
            break
        time.sleep(0.1)
    assert "marked 1 entries: docs/tock.md" in log.read_text()
    assert not (repo / "pwned").exists()


def test_a_broken_wiki_never_breaks_the_commit(repo: Path) -> None:
    wiki = Wiki(repo)  # no wiki branch at all
    hook.install(wiki, python=sys.executable)
    write(repo / "y.txt", "y")
    git(repo, "add", "y.txt")
    git(repo, "commit", "-q", "-m", "y")  # would raise if the hook failed the commit
    assert git(repo, "log", "-1", "--format=%s") == "y"


def test_cli_hook_commands(cli, wiki: Wiki) -> None:
    assert cli("hook", "status").exit_code == 0
    assert cli("hook", "install").exit_code == 0
    assert "hook installed" in cli("hook", "status").stderr
    assert cli("hook", "uninstall").exit_code == 0
