"""A web server on 127.0.0.1 for the http source adapter's tests (never the network)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Page:
    """What the server answers for one path (``slow``: only after ``release``)."""

    body: bytes
    etag: str = ""
    status: int = 200
    slow: bool = False


@dataclass
class Site:
    """The running server: its base ``url`` and state."""

    url: str
    pages: dict[str, Page] = field(default_factory=dict)
    answered: list[tuple[str, int]] = field(default_factory=list)
    arrived: list[str] = field(default_factory=list)
    """Paths of the requests received so far (before any is answered)."""
    release: threading.Event = field(default_factory=threading.Event)


@pytest.fixture(name="site")
def site_fixture(monkeypatch) -> Iterator[Site]:
    """A running server whose ``pages`` a test fills; ``answered`` logs (path, status).
    The reader allows this one server (``WIKI_ALLOW_PRIVATE_NETWORK=127.0.0.1:<port>``):
    loopback is refused by the source policy otherwise (tests/test_source_policy.py)."""
    state = Site("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            state.arrived.append(self.path)
            page = state.pages.get(self.path)
            if page is None:
                status, body = 404, b"not found"
            elif page.slow:
                state.release.wait(10)
                status, body = 200, page.body
            elif page.etag and self.headers.get("If-None-Match") == page.etag:
                status, body = 304, b""
            else:
                status, body = page.status, page.body
            state.answered.append((self.path, status))
            self.send_response(status)
            if page is not None and page.etag:
                self.send_header("ETag", page.etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address) -> None:
            pass  # a client that timed out and left: expected here

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("WIKI_ALLOW_PRIVATE_NETWORK", f"127.0.0.1:{server.server_address[1]}")
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
