"""Adversarial checks of the embedding server's ``nearest`` request (session 8): the
server must never rank from a matrix of another state of the file than the one the client
sees, must not create or hang on files a request names, and the one-process read of the
``[wiki]`` git config section must answer what ``git config --get`` answers. Real model,
real server process, real SQLite files, real git."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import numpy as np
import pytest
from served_vectors import MODEL, TOPICS, build_index, docs, landed_with_server

from indexes.embedding import embedders
from indexes.embedding.embed_server import RemoteEmbedder
from indexes.sqlite.dbfile import borrow_embeddings
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.vectors import NONCE_KEY, VERSION_KEY, embed_pending
from wiki.store import gitcli

needs_model = pytest.mark.skipif(embedders.load_default.probe() is not None,
                                 reason="the real embedding model is not installed")


def _served_and_local(index: SearchIndex, query, limit: int = 6):
    """The vector leg as a served search runs it, and as WIKI_EMBED_SERVER=off would."""
    served = [(h.key, round(h.score, 6)) for h in index.search_vector(query, MODEL,
                                                                       limit=limit)]
    local = [(k, round(s, 6)) for k, s in index.vectors.search(
        np.asarray(query), MODEL, rows=None, limit=limit)]
    return served, local


@pytest.mark.slow
@needs_model
def test_a_restored_copy_that_diverged_is_not_answered_from_the_other_history(
        remote: RemoteEmbedder, tmp_path: Path) -> None:
    """A backup of the index restored over it (``cp -a wiki wiki.bak`` ... ``mv``) carries
    the original's nonce: after the same number of writes both histories had one stamp,
    and the server answered the restored file from the other history's matrix."""
    path, backup = tmp_path / "index.sqlite", tmp_path / "backup.sqlite"
    build_index(path, remote, TOPICS).close()  # closed: checkpointed, one file
    shutil.copy(path, backup)
    query = remote.encode_query("who do I ask for a new computer")
    index = SearchIndex(path)
    index.upsert(docs({"hardware": "New computers and monitors are ordered through IT."}))
    embed_pending(index.vectors, remote)
    served, local = _served_and_local(index, query)
    assert served == local and served[0][0] == "hardware.md"  # cached by the server now
    index.close()
    shutil.copy(backup, path)  # restored; then the same number of writes, other text
    index = SearchIndex(path)
    index.upsert(docs({"garden": "Water the office plants on Mondays."}))
    embed_pending(index.vectors, remote)
    served, local = _served_and_local(index, query)
    assert "hardware.md" not in [k for k, _ in local]
    assert served == local
    index.close()


@needs_model
def test_embeddings_borrowed_from_the_live_index_change_the_stamp(
        remote: RemoteEmbedder, tmp_path: Path) -> None:
    """``--as-of``'s snapshot borrows the live file's vectors: a write to ``embeddings``
    like any other, so a matrix the server read before it is not used after it."""
    live = build_index(tmp_path / "live.sqlite", remote, TOPICS)
    snapshot = SearchIndex(tmp_path / "snapshot.sqlite")
    snapshot.upsert(docs(TOPICS))  # chunks, no vectors yet
    query = remote.encode_query("payday")
    assert _served_and_local(snapshot, query) == ([], [])
    before = snapshot.vectors.stamp()
    borrow_embeddings(snapshot, live.path)
    assert snapshot.vectors.stamp() != before
    # the answer sentences' vectors come too: --as-of embedded all of them every time
    assert snapshot.vectors.pending(MODEL) == []
    served, local = _served_and_local(snapshot, query)
    assert served == local and local[0][0] == "payroll.md"
    live.close()
    snapshot.close()


@needs_model
def test_a_file_without_a_nonce_is_ranked_here(remote: RemoteEmbedder,
                                               tmp_path: Path) -> None:
    """A file whose vectors were last written before stamps had a nonce (or whose meta a
    migration cleared) has a stamp ``:N`` that another such file at the same path can
    share; the server is not asked for it."""
    path = tmp_path / "index.sqlite"
    query = remote.encode_query("who do I ask for a new computer")
    other = {name: text for name, text in TOPICS.items() if name != "laptops"}
    versions = []
    for topics in (TOPICS, {**other, "garden": "Water the office plants on Mondays."}):
        index = build_index(path, remote, topics)
        index.conn.execute("DELETE FROM meta WHERE key = ?", (NONCE_KEY,))  # an old file
        versions.append(index.get_meta(VERSION_KEY))
        served, local = _served_and_local(index, query)
        assert served == local
        index.close()
        for name in ("index.sqlite", "index.sqlite-wal", "index.sqlite-shm"):
            (tmp_path / name).unlink(missing_ok=True)
    assert versions[0] == versions[1]  # the stamp such a file had: ":<version>"
    assert "laptops.md" not in [k for k, _ in local]


def _ask(remote: RemoteEmbedder, request: dict, seconds: float = 60) -> dict | None:
    """The server's raw reply to ``request``; ``None`` when none came in ``seconds``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(seconds)
        sock.connect(str(remote.socket_path))
        sock.sendall(json.dumps(request).encode() + b"\n")
        try:
            with sock.makefile("rb") as reader:
                return json.loads(reader.readline())
        except TimeoutError:
            return None


def _nearest(remote: RemoteEmbedder, path: Path, stamp: str, query) -> dict:
    import base64

    return {"op": "nearest", "model": MODEL, "index": str(path), "stamp": stamp,
            "vector": base64.b64encode(query.data).decode(), "limit": 3, "rows": None}


@needs_model
def test_a_request_never_makes_the_server_create_files(remote: RemoteEmbedder,
                                                       tmp_path: Path) -> None:
    """SQLite's read-only open of a WAL file that no connection holds creates its -wal
    and -shm (and leaves them): a request naming such a file is not read by the server."""
    path = tmp_path / "index.sqlite"
    index = build_index(path, remote, TOPICS)
    stamp = index.vectors.stamp()
    index.close()
    before = sorted(os.listdir(tmp_path))
    query = remote.encode_query("payday")
    reply = _ask(remote, _nearest(remote, path, stamp, query))
    assert reply == {"ok": True, "hits": None}
    assert sorted(os.listdir(tmp_path)) == before


@needs_model
def test_a_fifo_named_as_the_index_does_not_hang_the_server(remote: RemoteEmbedder,
                                                            tmp_path: Path) -> None:
    fifo = tmp_path / "index.sqlite"
    os.mkfifo(fifo)
    query = remote.encode_query("payday")
    reply = _ask(remote, _nearest(remote, fifo, "a:1", query), seconds=60)
    if reply is None:  # the server thread blocks in open(): let it go before failing
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert reply is not None and reply["ok"] is False


GIT_CONFIG = """\
[wiki]
\tBranch = a
\tbranch = b
\tflag
\tempty =
\tmulti = "line1\\nline2"
\tspaced = "  x  "
\tcomment = a ; b
[WIKI]
\tindexUrl = u1
[wiki "sub"]
\tbranch = subval
[include]
\tpath = {include}
"""


def test_the_wiki_section_in_one_read_is_what_git_config_get_gives(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    git_dir = tmp_path / "r" / ".git"
    include = tmp_path / "included"
    include.write_text("[wiki]\n\tindexurl = from-include\n\textra = \xe9t\xe9\n")
    with open(git_dir / "config", "a", encoding="utf-8") as config:
        config.write(GIT_CONFIG.format(include=include))
    section = gitcli.section_values(git_dir, "wiki")
    for key in ("wiki.branch", "wiki.Branch", "WIKI.BRANCH", "wiki.flag", "wiki.empty",
                "wiki.multi", "wiki.spaced", "wiki.comment", "wiki.indexUrl",
                "wiki.extra", "wiki.missing"):
        assert section.get(key.lower()) == gitcli.config_value(git_dir, key), key
    assert "wiki.sub.branch" not in section
    with open(git_dir / "config", "a", encoding="utf-8") as config:
        config.write("[broken\n")
    with pytest.raises(gitcli.GitUnclear):
        gitcli.section_values(git_dir, "wiki")
    with pytest.raises(gitcli.GitUnclear):
        gitcli.config_value(git_dir, "wiki.branch")


@pytest.mark.slow
@needs_model
def test_served_searches_equal_unserved_ones_with_filters_and_as_of(
        repo: Path, cli, served_runtime: Path) -> None:
    """Whole ``wiki search`` processes, server on and off: the same hits and scores with
    a category filter, ``--as-of`` (a temporary snapshot index) and ``--route``."""
    import sys

    folders = {"payroll": "hr", "leave": "hr", "laptops": "it", "security": "it",
               "travel": "travel"}
    env = landed_with_server(cli, repo, {
        f"{folders[name]}/{name}.md": f"# {name.title()}\n\n{text}\n"
        for name, text in TOPICS.items()}, served_runtime)
    base = [sys.executable, "-m", "wiki_cli", "search", "--json", "--limit", "5"]
    asked = [["new computer"], ["new computer", "--as-of", "2999-01-01"],
             ["keys", "--legs", "vector"], ["paid", "--route"]]
    category = json.loads(subprocess.run(
        base + ["payday"], cwd=repo, env=env, capture_output=True, text=True,
        timeout=300).stdout)["hits"][0].get("category")
    if category:
        asked.append(["payday", "--category", category])
    assert len(asked) == 5  # the entries have categories: the filter is exercised
    for args in asked:
        runs = [subprocess.run(base[:1] + ["-X", "importtime"] * (mode == "auto") + base[1:]
                               + args, cwd=repo, capture_output=True, text=True,
                               env={**env, "WIKI_EMBED_SERVER": mode}, timeout=300)
                for mode in ("auto", "off")]
        assert [r.returncode for r in runs] in ([0, 0], [1, 1]), runs[0].stderr[-2000:]
        numpy = re.search(r"^import time:.*\|\s+numpy$", runs[0].stderr, re.MULTILINE)
        # ranked by the server; routing reads the matrix here, and --as-of builds the
        # snapshot's answer sentences with wiki.answering.picker (which imports numpy)
        if "--route" not in args and "--as-of" not in args:
            assert numpy is None, args
        served, here = ([(h["path"], round(h["score"], 5)) for h in json.loads(r.stdout)["hits"]]
                        for r in runs)
        assert served == here and served, args
