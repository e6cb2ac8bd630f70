"""The warm embedding server: real processes, the real model, real Unix sockets.

Every server a test starts is stopped (SIGTERM to the pid its ping reports) or exits on a
short idle timeout, so no process outlives the session.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from indexes.embedding import embed_server, embedders
from indexes.embedding.embed_server import RemoteEmbedder, default_socket_path
from indexes.embedding.embed_socket import install_key
from indexes.embedding.embedders import EmbedderUnavailableError
from wiki.answering.embedding import get_embedder

MODEL = embedders.DEFAULT_MODEL
ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["How do I rotate the signing keys?", "Le café est fermé le lundi.", "", "x" * 50]

# the product's own check: on 3.12+ the model runs without PyTorch (indexes/embedding/onnx_build.py)
pytestmark = pytest.mark.skipif(
    embedders.load_default.probe() is not None,
    reason="the real embedding model is not installed")


def _alive(pid: int) -> bool:
    """Running (a zombie counts as gone; our own zombies are reaped)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _stop(pid: int) -> None:
    if _alive(pid):
        os.kill(pid, signal.SIGTERM)
    assert _wait_gone(pid), f"server {pid} did not stop"


def _servers_on(sock: Path) -> list[int]:
    """Pids of embed_server processes whose command line names ``sock``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"indexes.embedding.embed_server" in argv and os.fsencode(sock) in argv and \
                    _alive(int(entry.name)):
                pids.append(int(entry.name))
    return pids


@pytest.fixture()
def short_dir() -> Iterator[Path]:
    """A private directory with a short path (Unix socket paths max out at ~107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="es-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def reference() -> embedders.Embedder:
    return embedders.load(MODEL)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[RemoteEmbedder, int]]:
    """One server for the module, at the default socket path of a private runtime dir."""
    runtime = Path(tempfile.mkdtemp(prefix="es-", dir="/tmp"))
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    pid = None
    try:
        remote = RemoteEmbedder(MODEL, idle_seconds=120)
        pid = remote.ping()["pid"]
        yield remote, pid
    finally:
        if pid is not None:
            _stop(pid)
        if saved is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
        shutil.rmtree(runtime, ignore_errors=True)


def _raw(sock: Path, payload: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(30)
        conn.connect(str(sock))
        conn.sendall(payload)
        with conn.makefile("rb") as reader:
            return json.loads(reader.readline())


def test_import_does_not_load_the_model_libraries() -> None:
    code = ("import sys, indexes.embedding.embed_server; "
            "print([m for m in ('torch', 'sentence_transformers', 'transformers') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "[]"


def test_default_socket_path_is_private_and_short(served) -> None:
    remote, _ = served
    path = default_socket_path("org/model name")
    assert path.name == f"embed-org_model_name-{install_key()}.sock"  # this install's
    assert path.parent == Path(os.environ["XDG_RUNTIME_DIR"]) / "wiki"
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert remote.socket_path == default_socket_path(MODEL)
    assert len(os.fsencode(remote.socket_path)) < 107


def test_default_socket_path_refuses_a_planted_symlink(short_dir, monkeypatch) -> None:
    (short_dir / "elsewhere").mkdir()
    (short_dir / "wiki").symlink_to(short_dir / "elsewhere")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    with pytest.raises(EmbedderUnavailableError, match="not a directory owned by this user"):
        default_socket_path(MODEL)


def test_remote_vectors_equal_in_process_vectors(served, reference) -> None:
    remote, pid = served
    texts = TEXTS + [f"passage number {i}" for i in range(70)]  # more than one batch
    got = remote.encode(texts)
    want = reference.encode(texts)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert remote.dim == 384
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert remote.encode([]).shape == (0, 384)
    assert remote.ping() == {"ok": True, "model": MODEL, "dim": 384, "pid": pid}


@pytest.mark.slow
def test_large_batch_of_long_texts(served, reference) -> None:
    remote, _ = served
    texts = [f"{i} " + "the quick brown fox jumps over the lazy dog " * 35 for i in range(64)]
    assert len(texts[0]) > 1500
    got = remote.encode(texts)
    assert got.shape == (64, 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(got[:2], reference.encode(texts[:2]), atol=1e-5)


def test_bad_requests_get_error_replies_and_the_server_lives_on(served) -> None:
    remote, pid = served
    wrong = RemoteEmbedder("some-other-model", socket_path=remote.socket_path, start=False)
    with pytest.raises(EmbedderUnavailableError, match="serves 'all-MiniLM-L6-v2'"):
        wrong.encode(["hello"])
    reply = _raw(remote.socket_path, b'{"op": "encode", "model": "nope", "texts": ["a"]}\n')
    assert reply["ok"] is False and "nope" in reply["error"] and "\n" not in reply["error"]
    assert _raw(remote.socket_path, b"not json\n")["ok"] is False
    assert _raw(remote.socket_path, b'{"op": "dance"}\n')["ok"] is False
    assert _raw(remote.socket_path, b'{"op": "encode", "model": "all-MiniLM-L6-v2", '
                                    b'"texts": [1, 2]}\n')["ok"] is False
    assert remote.ping()["pid"] == pid


def test_get_embedder_modes(served, reference, monkeypatch) -> None:
    remote, pid = served
    monkeypatch.setenv("WIKI_EMBED_SERVER", "auto")
    auto = get_embedder(MODEL)
    assert auto.name == MODEL
    np.testing.assert_allclose(auto.encode(TEXTS), reference.encode(TEXTS), atol=1e-5)
    assert auto.dim == 384 and remote.ping()["pid"] == pid  # served, nothing new spawned

    class Fake:
        name, dim = "fake-embed-server-test", 3

        def encode(self, texts):
            return np.tile(np.float32([1, 0, 0]), (len(texts), 1))

    embedders.register(Fake.name, Fake)
    assert get_embedder(Fake.name) is embedders.load(Fake.name)  # only the default is served
    monkeypatch.setenv("WIKI_EMBED_SERVER", "off")
    assert get_embedder(MODEL) is reference
    monkeypatch.setenv("WIKI_EMBED_SERVER", "sometimes")
    with pytest.raises(EmbedderUnavailableError, match="WIKI_EMBED_SERVER"):
        get_embedder(MODEL)


def test_auto_falls_back_in_process_when_no_server_can_run(reference, monkeypatch,
                                                           short_dir) -> None:
    (short_dir / "wiki").write_text("a file where the socket directory should be")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short_dir))
    monkeypatch.setenv("WIKI_EMBED_SERVER", "auto")
    try:
        auto = get_embedder(MODEL)
        np.testing.assert_allclose(auto.encode(["hello"]), reference.encode(["hello"]))
        assert get_embedder(MODEL) is reference  # the fallback is remembered
    finally:
        embed_server._FALLBACK.discard(MODEL)


CLIENT = """
import json, sys
from pathlib import Path
from indexes.embedding.embed_server import RemoteEmbedder
remote = RemoteEmbedder("all-MiniLM-L6-v2", socket_path=Path(sys.argv[1]), idle_seconds=60)
vectors = remote.encode(["hello world", "concurrent start"])
print(json.dumps({"pid": remote.ping()["pid"], "vectors": vectors.tolist()}))
"""


def test_concurrent_first_calls_start_exactly_one_server(short_dir, reference) -> None:
    sock = short_dir / "embed.sock"
    clients = [subprocess.Popen([sys.executable, "-c", CLIENT, str(sock)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(3)]
    results, pids = [], set()
    try:
        for client in clients:
            out, err = client.communicate(timeout=90)
            assert client.returncode == 0, err
            results.append(json.loads(out))
        pids = {r["pid"] for r in results}
        assert len(pids) == 1
        assert _servers_on(sock) == list(pids)
        assert (short_dir / "embed.log").read_text().count("serving") == 1
        want = reference.encode(["hello world", "concurrent start"])
        for r in results:
            np.testing.assert_allclose(np.float32(r["vectors"]), want, atol=1e-5)
    finally:
        for client in clients:
            client.kill()
        for pid in pids | set(_servers_on(sock)):
            _stop(pid)


def test_stale_socket_is_replaced_and_idle_server_exits(short_dir) -> None:
    sock = short_dir / "embed.sock"
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays, nothing listens: what a killed server leaves behind
    assert sock.exists()
    remote = RemoteEmbedder(MODEL, socket_path=sock, idle_seconds=1.5)
    pid = remote.ping()["pid"]
    try:
        assert remote.encode(["still here"]).shape == (1, 384)
        assert _wait_gone(pid, timeout=20), "the idle server did not exit"
        assert not sock.exists()
        log = (short_dir / "embed.log").read_text()
        assert "idle for 1.5s, exiting" in log and "Loading weights" not in log
        with pytest.raises(EmbedderUnavailableError, match="no embedding server"):
            RemoteEmbedder(MODEL, socket_path=sock, start=False).encode(["gone"])
    finally:
        if _alive(pid):
            _stop(pid)


def test_a_server_that_cannot_load_its_model_is_reported(short_dir) -> None:
    remote = RemoteEmbedder("no-such-model", socket_path=short_dir / "embed.sock", timeout=30)
    with pytest.raises(EmbedderUnavailableError, match="exited with status 1.*no-such-model"):
        remote.encode(["hello"])
    assert not (short_dir / "embed.sock").exists()
