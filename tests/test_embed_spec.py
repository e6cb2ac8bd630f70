"""The embedder is chosen once at the edge and passed down (issue 14); the embedding
server belongs to one install, queries go first, and preparing the ONNX copy is said on
stderr (issue 17.2)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import ALICE, BOB, entry_text

from indexes.embedding import embed_server, embed_service, embedders
from indexes.embedding.embed_socket import default_socket_path, install_key
from indexes.embedding.embed_spec import EmbedderSpec, installed_default
from wiki.answering.embed_settings import current_spec, resolve_spec, using
from wiki.answering.search import search_for
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki
from wiki_cli.mcp_server import build_server

ROOT = Path(__file__).resolve().parent.parent
ENV_READS = {("os", "getenv"), ("environ", "get"), ("environ", "pop")}


class Recorder:
    """A fake embedder that records the spec in force whenever it encodes."""

    def __init__(self, name: str) -> None:
        self.name, self.dim, self.specs = name, 8, []

    def encode(self, texts):
        self.specs.append(current_spec())
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, len(text) % self.dim] = 1
        return out


def _env_reads(path: Path) -> list[str]:
    """The names of the environment variables ``path`` reads (``os.environ.get``,
    ``os.getenv``, ``os.environ[...]``); a non-constant name is reported as ``?``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            owner_name = owner.attr if isinstance(owner, ast.Attribute) else \
                getattr(owner, "id", "")
            if (owner_name, node.func.attr) in ENV_READS:
                arg = node.args[0] if node.args else None
                found.append(arg.value if isinstance(arg, ast.Constant) else "?")
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) \
                and node.value.attr == "environ" and isinstance(node.ctx, ast.Load):
            found.append(getattr(node.slice, "value", "?"))
    return found


def test_indexes_reads_no_embedding_setting_from_the_environment() -> None:
    for path in sorted((ROOT / "indexes").rglob("*.py")):
        reads = _env_reads(path)
        assert all(str(name).startswith("XDG_") for name in reads), \
            f"{path.relative_to(ROOT)} reads {reads}: pass an EmbedderSpec instead"


def test_the_mcp_server_no_longer_writes_the_environment() -> None:
    tree = ast.parse((ROOT / "wiki_cli" / "mcp_server.py").read_text())
    writes = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
              for target in node.targets if isinstance(target, ast.Subscript)
              and isinstance(target.value, ast.Attribute) and target.value.attr == "environ"]
    assert writes == []


def test_resolve_spec_reads_the_three_settings() -> None:
    assert resolve_spec({}) == EmbedderSpec(installed_default(), "auto", "auto")
    assert installed_default() == "all-MiniLM-L6-v2-q8"  # make setup installs what it needs
    # PyTorch asked for, no model named: the float model (the int8 copy has no torch form)
    assert resolve_spec({"WIKI_EMBED_RUNTIME": "torch"}).model == "all-MiniLM-L6-v2"
    assert resolve_spec({"WIKI_EMBED_RUNTIME": "torch",
                         "WIKI_EMBED_MODEL": "all-MiniLM-L6-v2-q8"}).model == \
        "all-MiniLM-L6-v2-q8"  # named: kept, and its load says why it cannot run
    spec = resolve_spec({"WIKI_EMBED_MODEL": " fake-x ", "WIKI_EMBED_RUNTIME": " ONNX",
                         "WIKI_EMBED_SERVER": "Off"})
    assert (spec.model, spec.runtime, spec.server) == ("fake-x", "onnx", "off")
    assert resolve_spec({"WIKI_EMBED_MODEL": "None"}).model is None
    assert resolve_spec({"WIKI_EMBED_RUNTIME": "gpu"}).runtime == "gpu"  # checked at load
    with pytest.raises(embedders.EmbedderUnavailableError, match="WIKI_EMBED_RUNTIME"):
        embedders.load_default(EmbedderSpec(runtime="gpu"))
    with pytest.raises(embedders.EmbedderUnavailableError, match="WIKI_EMBED_SERVER"):
        embed_server.get_embedder(embedders.DEFAULT_MODEL, EmbedderSpec(server="sometimes"))


def test_a_scoped_spec_wins_over_the_environment_until_its_block_ends(monkeypatch) -> None:
    monkeypatch.setenv("WIKI_EMBED_MODEL", "none")
    assert current_spec().model is None
    with using(EmbedderSpec("fake-scoped")) as outer:
        monkeypatch.setenv("WIKI_EMBED_MODEL", "changed-meanwhile")
        assert current_spec() is outer
        with using(EmbedderSpec("fake-inner")):
            assert current_spec().model == "fake-inner"
        assert current_spec() is outer
    assert current_spec().model == "changed-meanwhile"


def _seed(wiki: Wiki) -> None:
    text = entry_text("leave", "Annual leave", "Employees take annual leave in days.")
    proposal = propose(wiki, {"hr/leave.md": text.encode()}, base=None, kind="seed",
                          subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


def test_a_cli_command_runs_under_the_spec_read_at_its_start(cli, wiki, monkeypatch) -> None:
    model = Recorder("fake-cli-spec")
    embedders.register(model.name, lambda: model)
    monkeypatch.setenv("WIKI_EMBED_MODEL", model.name)
    _seed(wiki)
    result = cli("search", "annual leave", "--json")
    assert result.exit_code == 0, result.output
    assert model.specs and {s.model for s in model.specs} == {model.name}
    assert all(s.notify is not None for s in model.specs)  # the CLI's voice on stderr
    assert current_spec().notify is None  # the scope ended with the command


def test_mcp_tools_use_the_spec_they_were_built_with(wiki, repo, monkeypatch) -> None:
    model = Recorder("fake-mcp-spec")
    embedders.register(model.name, lambda: model)
    _seed(wiki)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "none")  # the environment says no vectors...
    spec = EmbedderSpec(model.name, server="off")   # ...the server was handed a model
    _, tools = build_server(repo, spec=spec)
    assert tools.spec is spec
    with using(tools.spec):
        result = search_for(tools.wiki(), "annual leave")
    assert "vector" not in result.skipped and model.specs[-1] is spec


def test_two_installs_or_versions_never_share_a_socket() -> None:
    base = install_key("auto", prefix="/venv/a", package_root="/src", version="1.0")
    others = {install_key("auto", prefix="/venv/b", package_root="/src", version="1.0"),
              install_key("auto", prefix="/venv/a", package_root="/src2", version="1.0"),
              install_key("auto", prefix="/venv/a", package_root="/src", version="1.1"),
              install_key("onnx", prefix="/venv/a", package_root="/src", version="1.0")}
    assert base not in others and len(others) == 4
    assert default_socket_path("m", install=base) != default_socket_path("m", install="x")


def test_a_copy_of_the_code_elsewhere_gets_its_own_socket(tmp_path) -> None:
    shutil.copytree(ROOT / "indexes", tmp_path / "indexes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "from indexes.embedding.embed_socket import default_socket_path as d; print(d('m'))"
    paths = [subprocess.run([sys.executable, "-c", code], cwd=where, text=True,
                            capture_output=True, check=True,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)}
                            ).stdout.strip() for where in (ROOT, tmp_path)]
    assert paths[0] != paths[1] and all(p.endswith(".sock") for p in paths)


def test_new_server_code_in_the_same_place_gets_its_own_socket(tmp_path) -> None:
    """A release installed over this one, or an edited checkout: same prefix, same folder,
    other server code; a server of the old code must not be reused."""
    shutil.copytree(ROOT / "indexes", tmp_path / "indexes",
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = "from indexes.embedding.embed_socket import default_socket_path as d; print(d('m'))"

    def path() -> str:
        return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, text=True,
                              capture_output=True, check=True,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
                              ).stdout.strip()

    before = path()
    assert path() == before  # stable while nothing changes
    server = tmp_path / "indexes" / "embedding" / "embed_server.py"
    server.write_text(server.read_text() + "\n# a new release\n")
    assert path() != before
    # the code that computes the vectors counts too: a server of the old encoding (padded
    # batches, whose int8 vectors depended on their neighbours) must not answer the new
    again = path()
    encoder = tmp_path / "indexes" / "embedding" / "onnx_embedder.py"
    encoder.write_text(encoder.read_text() + "\n# one text per run\n")
    assert path() != again


def test_a_short_request_goes_before_waiting_batches() -> None:
    lock, order = embed_service._QueriesFirst(), []
    waiters = []
    with lock.hold(short=False):  # a batch being embedded
        for name, short in (("batch", False), ("query", True)):
            thread = threading.Thread(target=lambda n=name, s=short: _take(lock, s, n, order))
            thread.start()
            waiters.append(thread)
            while not _waiting(lock, short):
                threading.Event().wait(0.01)
    for thread in waiters:
        thread.join(10)
    assert order == ["query", "batch"]


def _take(lock, short: bool, name: str, order: list[str]) -> None:
    with lock.hold(short):
        order.append(name)


def _waiting(lock, short: bool) -> bool:
    # the long waiter is parked on the condition once it holds no lock and is not done;
    # the short one is counted
    return lock._short_waiting > 0 if short else lock._cond._waiters  # noqa: SLF001


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None
                    or embedders.load_default.probe() is not None,
                    reason="the real embedding model is not installed")
@pytest.mark.slow
def test_preparing_the_onnx_copy_is_said_on_stderr(cli, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    monkeypatch.setenv("WIKI_EMBED_SERVER", "off")
    saved = embedders._LOADED.pop(embedders.DEFAULT_MODEL, None)
    try:
        assert embedders.needs_preparing(resolve_spec())
        result = cli("doctor", "--deep")
        assert "preparing the embedding model, once, about 10 s" in result.stderr
        assert "embedding model ready (" in result.stderr
        assert not embedders.needs_preparing(resolve_spec())  # the copy is there now
        embedders._LOADED.pop(embedders.DEFAULT_MODEL, None)
        again = cli("doctor", "--deep")
        assert "preparing" not in again.stderr  # once
        quiet = replace(resolve_spec(), notify=None)
        assert quiet.notify is None
    finally:
        embedders._LOADED.pop(embedders.DEFAULT_MODEL, None)
        if saved is not None:
            embedders._LOADED[embedders.DEFAULT_MODEL] = saved
