"""The embedding server ranks an index file's vectors for the query it encoded
(``nearest``, :mod:`indexes.embedding.embed_nearest`), so a ``wiki search`` process never imports
numpy; whenever the server cannot answer for the file as the client sees it (another
stamp, an unreadable file, a reply out of protocol) the client ranks them itself, with the
same result. Real model, real server process, real SQLite; the hostile server is a real
Unix socket."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import pytest
from served_vectors import MODEL, TOPICS, build_index, landed_with_server

from indexes.documents import Document
from indexes.embedding import embedders
from indexes.embedding.embed_reply import reply_hits
from indexes.embedding.embed_server import RemoteEmbedder
from indexes.embedding.embedders import EmbedderUnavailableError
from indexes.embedding.query_vector import QueryVector
from indexes.sqlite.engine import Filters, SearchIndex
from indexes.sqlite.vectors import RowFilter, embed_pending

pytestmark = pytest.mark.skipif(embedders.load_default.probe() is not None,
                                reason="the real embedding model is not installed")


def test_the_server_ranks_as_the_client_would(remote: RemoteEmbedder, tmp_path: Path) -> None:
    index = build_index(tmp_path / "index.sqlite", remote, TOPICS)
    query = remote.encode_query("how do I claim travel expenses")
    assert isinstance(query, QueryVector) and query.searcher is remote
    stamp = index.vectors.stamp()
    served = remote.nearest(query, str(index.path.resolve()), stamp, MODEL, limit=3,
                            rows=None)
    local = index.vectors.search(np.asarray(query), MODEL, rows=None, limit=3)
    assert served is not None and [k for k, _ in served] == [k for k, _ in local]
    assert served[0][0] == "travel.md"
    assert np.allclose([s for _, s in served], [s for _, s in local], atol=1e-6)
    # the index's own leg goes through the server and gives the same hits
    hits = index.search_vector(query, MODEL, limit=3)
    assert [(h.key, round(h.score, 6)) for h in hits] == \
        [(k, round(s, 6)) for k, s in local]
    # documents a filter leaves out are left out there too, named by rowid either way
    travel = index.conn.execute("SELECT rowid FROM docs WHERE key = 'travel.md'").fetchone()[0]
    without = remote.nearest(query, str(index.path.resolve()), stamp, MODEL, limit=3,
                             rows=RowFilter.of([travel], keep=False))
    assert without is not None and "travel.md" not in [k for k, _ in without]
    only = remote.nearest(query, str(index.path.resolve()), stamp, MODEL, limit=3,
                          rows=RowFilter.of([travel], keep=True))
    assert only is not None and [k for k, _ in only] == ["travel.md"]


def test_a_changed_or_rebuilt_index_is_never_answered_from_the_old_matrix(
        remote: RemoteEmbedder, tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    index = build_index(path, remote, TOPICS)
    query = remote.encode_query("who do I ask for a new computer")
    old = index.vectors.stamp()
    assert remote.nearest(query, str(path.resolve()), old, MODEL, limit=1,
                          rows=None)[0][0] == "laptops.md"
    # a new entry: a new stamp, and the server reads the file again
    index.upsert([Document(key="hardware.md", doc_id="hardware", title="Hardware",
                           body="New computers and monitors are ordered through IT.")])
    embed_pending(index.vectors, remote)
    new = index.vectors.stamp()
    assert new != old
    found = remote.nearest(query, str(path.resolve()), new, MODEL, limit=6, rows=None)
    assert found is not None and "hardware.md" in [k for k, _ in found]
    assert remote.nearest(query, str(path.resolve()), "0123:99", MODEL, limit=1,
                          rows=None) is None  # a stamp the file never had
    # the same file built again from other text: same version counter, another nonce
    index.close()
    path.unlink()
    rebuilt = build_index(path, remote, {name: "Nothing about computers here." if name == "laptops"
                                    else text for name, text in TOPICS.items()})
    assert rebuilt.vectors.stamp().split(":")[1] == old.split(":")[1]
    assert rebuilt.vectors.stamp() != old
    local = rebuilt.vectors.search(np.asarray(query), MODEL, rows=None, limit=5)
    assert [h.key for h in rebuilt.search_vector(query, MODEL, limit=5)] == \
        [k for k, _ in local]


def test_a_request_the_server_cannot_answer_is_ranked_here(remote: RemoteEmbedder,
                                                           tmp_path: Path) -> None:
    index = build_index(tmp_path / "index.sqlite", remote, TOPICS)
    query = remote.encode_query("payday")
    for path in ("relative/index.sqlite", str(tmp_path / "missing.sqlite"),
                 str(tmp_path)):  # not absolute; no such file; a folder
        assert remote.nearest(query, path, index.vectors.stamp(), MODEL, limit=3,
                              rows=None) is None
    assert remote.nearest(query, str(index.path), "x", "another-model", limit=3,
                          rows=None) is None
    assert index.search_vector(query, MODEL, limit=1)[0].key == "payroll.md"


class HostileServer:
    """A Unix socket that answers every request line with ``reply`` (bytes)."""

    def __init__(self, path: Path, reply: bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen()
        self.reply = reply
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as reader:
                while reader.readline():
                    conn.sendall(self.reply)


@pytest.mark.parametrize("hits", [
    "not a list", [["a.md", float("nan")]], [["a.md", 0.2], ["b.md", 0.9]],
    [["a.md", 0.5], ["a.md", 0.4]], [["a.md", 7.0]], [["a.md", True]], [[1, 0.5]],
    [["a.md", 0.5, "extra"]], [["k", 0.1]] * 0 + [[f"k{i}", 0.1] for i in range(9)]])
def test_a_reply_out_of_protocol_is_refused(hits) -> None:
    with pytest.raises(EmbedderUnavailableError):
        reply_hits({"ok": True, "hits": hits}, Path("/s"), limit=5)


def test_a_hostile_server_cannot_steer_the_vector_leg(remote: RemoteEmbedder,
                                                      tmp_path: Path) -> None:
    index = build_index(tmp_path / "index.sqlite", remote, TOPICS)
    query = remote.encode_query("rotate keys")
    expected = [h.key for h in index.search_vector(np.asarray(query), MODEL, limit=3)]
    short = Path(tempfile.mkdtemp(prefix="hs-", dir="/tmp"))
    try:
        for reply in (b'{"ok": true, "hits": [["payroll.md", 0.99], ["x", 1.5]]}\n',
                      b'{"ok": true, "hits": [["leave.md", 0.9], ["leave.md", 0.9]]}\n',
                      b"garbage\n", b'{"ok": false, "error": "\\u001b[31mred"}\n'):
            where = short / f"h{len(reply)}.sock"
            HostileServer(where, reply)
            hostile = QueryVector(query.data, query.dim,
                                  searcher=RemoteEmbedder(MODEL, socket_path=where,
                                                          start=False, request_timeout=5))
            assert [h.key for h in index.search_vector(hostile, MODEL, limit=3)] == expected
        # a hit the filters leave out is never shown, even in an otherwise well-formed reply
        where = short / "excl.sock"
        HostileServer(where, b'{"ok": true, "hits": [["payroll.md", 0.9]]}\n')
        squatter = QueryVector(query.data, query.dim,
                               searcher=RemoteEmbedder(MODEL, socket_path=where, start=False,
                                                       request_timeout=5))
        assert [h.key for h in index.search_vector(squatter, MODEL, limit=3)] == \
            ["payroll.md"]
        assert index.search_vector(squatter, MODEL, limit=3,
                                   filters=Filters(category="travel")) == []
    finally:
        shutil.rmtree(short, ignore_errors=True)


def test_a_served_wiki_search_process_never_imports_numpy(repo: Path, cli, served_runtime: Path,
                                                          monkeypatch) -> None:
    """The whole command, as a user runs it: same output as the in-process ranking."""
    env = landed_with_server(cli, repo, {f"{name}.md": f"# {name.title()}\n\n{text}\n"
                                         for name, text in TOPICS.items()}, served_runtime)
    argv = [sys.executable, "-X", "importtime", "-m", "wiki_cli", "search", "--json",
            "travel voucher"]
    first = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                           timeout=300)  # embeds the entries and starts the server
    assert first.returncode == 0, first.stderr[-2000:]
    served = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                            timeout=120)
    assert served.returncode == 0, served.stderr[-2000:]
    modules = {line.rsplit("|", 1)[1].strip() for line in served.stderr.splitlines()
               if line.startswith("import time:")}
    assert "wiki.answering.search" in modules
    assert not {m for m in modules if m == "numpy" or m.startswith("numpy.")}
    here = subprocess.run(argv[:1] + argv[3:], cwd=repo, capture_output=True, text=True,
                          env={**env, "WIKI_EMBED_SERVER": "off"}, timeout=300)
    assert here.returncode == 0, here.stderr[-2000:]
    ranked = [(h["path"], round(h["score"], 4)) for h in json.loads(served.stdout)["hits"]]
    assert ranked == [(h["path"], round(h["score"], 4))
                      for h in json.loads(here.stdout)["hits"]]
    assert "vector" in json.loads(served.stdout)["legs"]


def test_an_index_from_before_nonces_gets_a_stamp_when_opened(remote: RemoteEmbedder,
                                                              tmp_path: Path) -> None:
    """Schema migration 8: an index whose vectors were written by an older release (no
    nonce) is named by a stamp as soon as it is opened, so the server ranks it at once."""
    import sqlite3

    path = tmp_path / "index.sqlite"
    build_index(path, remote, TOPICS).close()
    with sqlite3.connect(path) as conn:  # as an older release left it
        conn.execute("DELETE FROM meta WHERE key = 'vectors_nonce'")
        conn.execute("PRAGMA user_version = 7")
    reopened = SearchIndex(path)
    stamp = reopened.vectors.stamp()
    assert stamp is not None and stamp.endswith(":" + reopened.get_meta("vectors_version"))
    query = remote.encode_query("annual leave")
    assert remote.nearest(query, str(path.resolve()), stamp, MODEL, limit=1,
                          rows=None)[0][0] == "leave.md"


@pytest.mark.parametrize("field", [
    [], "ids", {"keep": 1, "ids": ""}, {"keep": True}, {"keep": None, "ids": ""},
    {"keep": True, "ids": "not base64!"}, {"keep": True, "ids": "AAAAAAAAAA=="},  # 7 bytes
    {"keep": False, "ids": 5},
])
def test_a_malformed_rows_field_is_refused(field) -> None:
    """A nearest request's ``rows`` comes over the server's socket: anything but null or
    ``{keep: bool, ids: base64 of whole int64s}`` is a ValueError (the server answers
    ``ok: false``), never a filter that lets other documents through."""
    from indexes.embedding.embed_nearest import rows_from_request

    with pytest.raises(ValueError):
        rows_from_request(field)


def test_rows_travel_as_they_were_given() -> None:
    from indexes.embedding.embed_nearest import rows_from_request, rows_request

    assert rows_from_request(None) is None and rows_request(None) is None
    rows = RowFilter.of([7, -1, 2**40, 7], keep=True)
    back = rows_from_request(json.loads(json.dumps(rows_request(rows))))
    assert list(back.rowids) == [7, -1, 2**40, 7] and back.keep is True
