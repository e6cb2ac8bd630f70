"""A ``wiki serve`` app on a real socket (uvicorn on 127.0.0.1, a free port, in a thread),
and config files with real token hashes, for the serve tests and the serve benchmark."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from wiki.serve.config import ServeConfig, load_config, token_hash

READ_TOKEN, WRITE_TOKEN, OTHER_TOKEN = "wk_read-" + "r" * 40, "wk_write-" + "w" * 40, \
    "wk_other-" + "o" * 40


def ops_repository(folder: Path) -> Path:
    """A second repository ``folder/ops`` with a landed wiki of one entry (the pager
    rotation), for tests that serve two repositories."""
    from conftest import git, ingest_and_land, write

    from wiki.store.workspace import Wiki

    ops = folder / "ops"
    ops.mkdir()
    git(ops, "init", "-q", "-b", "main")
    write(ops / "README.md", "# ops\n")
    git(ops, "add", "README.md")
    git(ops, "commit", "-q", "-m", "first")
    ops_wiki = Wiki(ops)
    ops_wiki.init()
    write(ops / "runbooks" / "pager.md", "# Pager\n\nThe pager rotation changes on Mondays.\n")
    ingest_and_land(ops_wiki, ops / "runbooks")
    return ops


def write_config(path: Path, repos: dict[str, Path], *, extra_server: str = "") -> Path:
    """A config serving ``repos`` with three tokens: read on every repository, propose on
    the first (author Carol), read on the last only."""
    first, last = next(iter(repos)), list(repos)[-1]
    lines = ["[server]", "fetch_interval = 0", extra_server, ""]
    for name, where in repos.items():
        lines += [f"[repos.{name}]", f"path = {str(where)!r}", ""]
    lines += ["[[tokens]]", 'name = "reader"', f'hash = "{token_hash(READ_TOKEN)}"',
              'repos = ["*"]', "",
              "[[tokens]]", 'name = "writer"', f'hash = "{token_hash(WRITE_TOKEN)}"',
              f'repos = ["{first}"]', 'rights = "propose"',
              'author = "Carol Agent <carol@example.com>"', "",
              "[[tokens]]", 'name = "other"', f'hash = "{token_hash(OTHER_TOKEN)}"',
              f'repos = ["{last}"]', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@contextlib.contextmanager
def running(config: ServeConfig | Path, *, warm: bool = False, app=None) -> Iterator[str]:
    """Serve ``config`` (or the ``app`` built from it) on 127.0.0.1 (a free port) until the
    block ends; yields the base URL. The server is stopped the way Ctrl-C stops it
    (``should_exit``)."""
    import uvicorn

    from wiki_cli.serve_http import build_app

    if isinstance(config, Path):
        config = load_config(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app or build_app(config, warm=warm), log_level="warning",
                                           timeout_keep_alive=5, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
