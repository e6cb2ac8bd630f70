"""``wiki doctor`` on real repositories: each finding, its fix, the exit code and --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ALICE, git, ingest_and_land, write
from typer.testing import CliRunner

from indexes.embedding import embedders
from wiki.store.snapshot import write_commit
from wiki.store.workspace import Wiki
from wiki_cli.app import app


def _checks(cli, *args: str) -> tuple[int, dict[str, dict]]:
    result = cli("doctor", "--json", *args)
    data = json.loads(result.stdout)
    assert data["errors"] == sum(c["level"] == "error" for c in data["checks"])
    return result.exit_code, {c["name"]: c for c in data["checks"]}


def test_outside_a_repository_is_an_error_with_a_fix(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["-C", str(tmp_path), "doctor", "--json"])
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["repository"]["level"] == "error"
    assert "not inside a git repository" in checks["repository"]["message"]
    assert "-C PATH" in checks["repository"]["fix"]
    assert checks["git"]["level"] == "ok" and checks["git"]["message"].startswith("git version")
    assert "wiki branch" not in checks


def test_no_wiki_branch_says_run_init(cli) -> None:
    code, checks = _checks(cli)
    assert code == 1
    assert checks["wiki branch"]["level"] == "error"
    assert "wiki init" in checks["wiki branch"]["fix"]


def test_healthy_wiki_with_hook_and_cron(cli, repo: Path, tmp_path: Path, monkeypatch) -> None:
    program = tmp_path / "crontab"  # a stand-in crontab keeping its table in a file
    program.write_text('#!/bin/sh\nif [ "$1" = "-l" ]; then cat "$TABLE" 2>/dev/null || '
                       '{ echo "no crontab for user" >&2; exit 1; }\n'
                       'else cat > "$TABLE"; fi\n')
    program.chmod(0o755)
    monkeypatch.setenv("WIKI_CRONTAB", str(program))
    monkeypatch.setenv("TABLE", str(tmp_path / "table"))
    cli("init")
    assert _checks(cli)[1]["index"]["level"] == "ok"  # init builds the (empty) index
    ingest_and_land(Wiki(repo), write(repo / "docs" / "a.md", "# A\n\nSome text.\n"))
    code, checks = _checks(cli)  # approve brought the index to the landed head
    assert code == 0
    assert checks["wiki branch"]["level"] == "ok" and checks["config"]["level"] == "ok"
    assert checks["index"]["level"] == "ok"
    assert checks["embedding model"]["level"] == "info"  # WIKI_EMBED_MODEL=none in tests
    assert checks["post-commit hook"]["level"] == "warning"
    assert checks["post-commit hook"]["fix"] == "run `wiki hook install`"
    assert checks["weekly lint"]["level"] == "info"
    assert "wiki cron install" in checks["weekly lint"]["fix"]
    assert cli("hook", "install").exit_code == 0 and cli("cron", "install").exit_code == 0
    cli("index")
    code, checks = _checks(cli)
    assert code == 0
    assert {checks[n]["level"] for n in ("post-commit hook", "weekly lint", "index")} == {"ok"}
    table = cli("doctor")
    assert table.exit_code == 0 and "post-commit hook" in table.stdout


def test_index_behind_the_branch_is_a_warning(cli, repo: Path) -> None:
    cli("init")
    cli("index")
    write(repo / "docs" / "a.md", "# A\n\nAlpha text.\n")
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    wiki = Wiki(repo)  # landed by plain git (a fast-forward), which never reads the index
    git(repo, "update-ref", wiki.ref, f"{wiki.proposal_prefix}{name}")
    code, checks = _checks(cli)
    assert code == 0
    assert checks["index"]["level"] == "warning" and "behind" in checks["index"]["message"]
    assert checks["index"]["fix"] == "run `wiki index`"


def test_invalid_config_is_an_error(cli, repo: Path) -> None:
    cli("init")
    wiki = Wiki(repo)  # a hand-made commit: review would normally catch it
    head = wiki.head()
    commit = write_commit(wiki.snapshot(head), {"wiki.toml": b"[search]\nbogus = 1\n"},
                          "by hand", author=ALICE)
    wiki.store.update_ref(wiki.ref, commit, head, "by hand")
    code, checks = _checks(cli)
    assert code == 1
    assert checks["config"]["level"] == "error" and "bogus" in checks["config"]["message"]
    assert "wiki.toml" in checks["config"]["fix"]


def test_model_and_embed_server_settings(cli, monkeypatch, tmp_path) -> None:
    cli("init")
    monkeypatch.setenv("WIKI_EMBED_MODEL", "no-such-model")
    code, checks = _checks(cli)
    assert code == 1 and checks["embedding model"]["level"] == "error"
    assert "unknown embedding model 'no-such-model'" in checks["embedding model"]["message"]
    assert "WIKI_EMBED_MODEL" in checks["embedding model"]["fix"]

    class Fake:
        name, dim = "fake-doctor", 8

        def encode(self, texts):
            return embedders.normalize(np.ones((len(texts), self.dim)))

    embedders.register("fake-doctor", Fake)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-doctor")
    code, checks = _checks(cli, "--deep")
    assert code == 0 and checks["embedding model"]["level"] == "ok"
    assert checks["model load"]["level"] == "ok" and "8 dimensions" in checks["model load"][
        "message"]
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "gpu")
    code, checks = _checks(cli)
    assert code == 1 and "WIKI_EMBED_RUNTIME" in checks["embedding model"]["message"]
    assert checks["embedding model"]["fix"].startswith("set WIKI_EMBED_RUNTIME to auto")
    # the int8 model named with PyTorch asked for: it has no PyTorch form, and the fix says so
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.QUANTIZED_MODEL)
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "torch")
    code, checks = _checks(cli)
    assert code == 1 and "ONNX Runtime only" in checks["embedding model"]["message"]
    assert checks["embedding model"]["fix"].startswith(
        f"unset WIKI_EMBED_RUNTIME, or set WIKI_EMBED_MODEL={embedders.DEFAULT_MODEL}")
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "auto")
    # a cache of its own: the run's shared model cache holds an ONNX copy once any test
    # before this one used the real model
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    code, checks = _checks(cli)  # no ONNX copy yet
    assert checks["embedding model"]["level"] == "ok"
    assert checks["embedding runtime"]["level"] == "info"
    assert "--deep" in checks["embedding runtime"]["fix"]
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-doctor")
    monkeypatch.setenv("WIKI_EMBED_SERVER", "sometimes")
    code, checks = _checks(cli)
    assert code == 1 and checks["embed server"]["level"] == "error"
    assert "'auto'" in checks["embed server"]["fix"]


@pytest.mark.parametrize("module", ["litellm", "llama_cpp"])
def test_optional_extras_are_reported(cli, module: str) -> None:
    _, checks = _checks(cli)
    assert checks[module]["level"] in ("ok", "info")


def test_doctor_loads_no_model_library(repo: Path) -> None:
    code = ("import sys; from wiki_cli.app import main; sys.argv=['wiki','doctor']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'torch', 'sentence_transformers', 'transformers', 'litellm'}), file=sys.stderr)")
    env = {"WIKI_EMBED_MODEL": "all-MiniLM-L6-v2", "WIKI_EMBED_SERVER": "off"}
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, text=True,
                            capture_output=True, timeout=60, env={**os.environ, **env})
    assert "HEAVY []" in result.stderr, result.stderr
    assert "embedding model" in result.stdout


def test_the_fix_names_how_wiki_was_installed(tmp_path):
    from wiki.doctor import reinstall_hint

    checkout = tmp_path / "checkout"
    (checkout / "wiki").mkdir(parents=True)
    (checkout / "Makefile").write_text("setup:\n")
    (checkout / "pyproject.toml").write_text("[project]\n")
    assert reinstall_hint(checkout / "wiki") == f"run `make setup` in {checkout}"
    site = tmp_path / "venv" / "lib" / "python3.13" / "site-packages"
    (site / "wiki").mkdir(parents=True)
    pipx = tmp_path / ".local" / "pipx" / "venvs" / "wiki-kb"
    assert reinstall_hint(site / "wiki", pipx) == "run `pipx reinstall wiki-kb`"
    venv_hint = reinstall_hint(site / "wiki", tmp_path / "venv")
    assert venv_hint.startswith(f"reinstall wiki-kb into {tmp_path / 'venv'} (")
    assert "make setup" not in venv_hint


def test_status_and_doctor_with_vectors_off_or_pending(cli, wiki, repo, monkeypatch) -> None:
    """helper-30: with WIKI_EMBED_MODEL=none, status still showed the recorded model's
    counts and doctor said "not used (vectors are off): each process loads the model";
    with vectors pending, status did not say what to run."""
    from test_hybrid import HashingEmbedder

    model = HashingEmbedder("fake-status", 16)
    embedders.register("fake-status", lambda: model)
    notes = repo / "notes"
    notes.mkdir()
    for i in range(20):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nRunbook step {i} for team {i}.\n")
    ingest_and_land(wiki, notes)
    status = cli("status")
    assert "off (WIKI_EMBED_MODEL=none)" in status.stdout, status.stdout
    _, checks = _checks(cli)
    assert checks["embed server"]["message"] == "not used: vectors are off"
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-status")
    pending = " ".join(cli("status").stdout.split())
    assert "pending: run `wiki index`" in pending, pending
    assert cli("index").exit_code == 0
    assert "pending" not in cli("status").stdout


@pytest.mark.parametrize("url, said", [
    ("postgresql://wiki:hunter2hunter2@/wiki?host=/nowhere/at/all", "cannot reach"),
    ("mysql://wiki@localhost/wiki", "only postgresql:// URLs")])
def test_an_index_database_that_cannot_be_used_is_one_finding(cli, monkeypatch, url: str,
                                                               said: str) -> None:
    """The install checks and the repository's other checks still run; the index is an
    error-level finding with how to fix it (before: one error line, exit 2, no checks)."""
    assert cli("init").exit_code == 0
    monkeypatch.setenv("WIKI_INDEX_URL", url)
    code, checks = _checks(cli)
    assert code == 1
    assert checks["index"]["level"] == "error" and said in checks["index"]["message"]
    assert "hunter2" not in json.dumps(checks)
    assert "WIKI_INDEX_URL" in checks["index"]["fix"]
    assert {"git", "embedding model", "wiki branch", "config"} <= set(checks)


def test_a_healthy_index_says_where_it_lives(cli, repo: Path) -> None:
    assert cli("init").exit_code == 0
    assert cli("index").exit_code == 0
    _, checks = _checks(cli)
    assert checks["index"]["level"] == "ok"
    assert str(Wiki(repo).database_path()) in checks["index"]["message"]
