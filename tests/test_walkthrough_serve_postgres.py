"""What a newcomer ran into following README.md, docs/serve.md and docs/postgres.md on a
fresh clone: `wiki ask` over a PostgreSQL index with vectors, the 409 of a pinned commit
that has moved, and keeping the demo repository to serve it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, running, write_config

from indexes.pg.vectors import as_array
from wiki.store.derived import open_index
from wiki.store.workspace import Wiki

ROOT = Path(__file__).resolve().parent.parent


# -- wiki ask on PostgreSQL with the vector leg on ---------------------------------------------

def test_ask_on_postgres_with_vectors_reads_the_stored_sentence_vectors(
        cli, wiki: Wiki, repo: Path, on_postgres, vectors_on) -> None:
    """docs/postgres.md: "wiki index --rebuild ... or just search". Search worked, but
    `wiki ask` ended in an internal error (exit 70): pgvector's loader gives `Vector`
    objects, which numpy could not read as the answer sentences' vectors."""
    write(repo / "docs" / "state.md", "# Derived state\n\nThe derived state lives in the "
          "git dir, in wiki/wiki.sqlite, and it can be rebuilt at any time.\n")
    ingest_and_land(wiki, repo / "docs")
    asked = cli("ask", "where does the derived state live?")
    assert asked.exit_code == 0, asked.output
    assert "wiki/wiki.sqlite" in asked.stdout
    index = open_index(wiki)
    try:
        matrix = index.vectors.matrix("fake-hash", vectors_on.dim)
        keys = [key for key, _ in index.vectors.chunk_keys()]
        found = index.vectors.sentence_vectors(keys, "fake-hash")
    finally:
        index.close()
    assert matrix.vectors.dtype == np.float32 and matrix.vectors.shape[1] == vectors_on.dim
    assert found and all(v.shape == (vectors_on.dim,) for v in found.values())


def test_as_array_takes_pgvectors_vector_and_plain_lists() -> None:
    from pgvector import Vector

    assert as_array(Vector([1.0, 2.5])).tolist() == [1.0, 2.5]
    assert as_array([0.5, -1.0]).dtype == np.float32


# -- wiki serve: a pinned commit that moved names the head to pin ------------------------------

def test_moved_commit_409_names_the_head_to_ask_again_with(wiki: Wiki, repo: Path,
                                                           tmp_path: Path) -> None:
    """The 409 said "ask again without X-Wiki-Commit, or with it": with what? It names
    the branch head now."""
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    head = wiki.head()
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    with running(config) as base:
        moved = httpx.post(f"{base}/v1/repos/handbook/search", json={"query": "tock"},
                           headers={"Authorization": f"Bearer {READ_TOKEN}",
                                    "X-Wiki-Commit": "0" * 12}, timeout=60)
    assert moved.status_code == 409
    assert f"X-Wiki-Commit: {head[:12]}" in moved.json()["error"]


# -- make demo: DEMO_DIR keeps the repository --------------------------------------------------

def _wiki_command(tmp_path: Path) -> Path:
    command = tmp_path / "bin" / "wiki"
    command.parent.mkdir()
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m wiki_cli "$@"\n',
                       encoding="utf-8")
    command.chmod(0o755)
    return command


@pytest.mark.slow
def test_demo_dir_keeps_the_demo_repository_and_refuses_a_full_folder(tmp_path: Path) -> None:
    """docs/serve.md over "the demo wiki": `make demo` removed its repository at exit;
    with DEMO_DIR it stays, with its landed wiki branch, and a folder that is not empty
    is refused (nothing in it is touched)."""
    corpus = tmp_path / "corpus"
    write(corpus / "start.md", "# Getting started\n\nTo get started, run `make setup` and "
          "read the guide in the docs folder.\n")
    kept = tmp_path / "kept"
    env = {**os.environ, "WIKI": str(_wiki_command(tmp_path)), "DEMO_CORPUS": str(corpus),
           "DEMO_DIR": str(kept), "WIKI_EMBED_MODEL": "none", "WIKI_EMBED_SERVER": "off",
           "HOME": str(tmp_path)}
    demo = ["bash", str(ROOT / "scripts" / "demo.sh")]
    done = subprocess.run(demo, capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"kept in {kept}/repo" in done.stderr
    assert Wiki(kept / "repo").head() is not None
    again = subprocess.run(demo, capture_output=True, text=True, env=env, timeout=300,
                           cwd=tmp_path)
    assert again.returncode == 2 and "not empty" in again.stderr
    assert Wiki(kept / "repo").head() is not None


# -- wiki serve token: its stderr is TOML, to append to the config as it is -------------------

def test_token_stderr_appends_to_the_config_file_as_it_is(tmp_path: Path) -> None:
    """docs/serve.md shows the hash lines going into the file; the line before them was
    prose, so `wiki serve token ... 2>> serve.toml` made a file that failed to load."""
    from typer.testing import CliRunner

    from wiki.serve.config import load_config
    from wiki_cli.app import app

    (tmp_path / "demo").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "demo")], check=True)
    config = tmp_path / "serve.toml"
    config.write_text('[repos.demo]\npath = "demo"\n', encoding="utf-8")
    made = CliRunner().invoke(app, ["serve", "token", "agents", "--repo", "demo", "--rights",
                                    "propose", "--author", "Team agents <agents@example.com>"])
    assert made.exit_code == 0, made.output
    with config.open("a", encoding="utf-8") as out:
        out.write(made.stderr)
    token = load_config(config).authenticate(made.stdout.strip())
    assert token is not None and token.may_propose and token.name == "agents"
