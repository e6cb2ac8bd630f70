"""``wiki serve``'s request log: one line per HTTP request, on stderr (docs/serve.md).

A line reads ``2025-01-31T09:12:03Z 127.0.0.1:53412 reader GET /v1/repos 200 4 ms``: the
time (UTC), the client's address, the token's name (``-`` when none was accepted), the
method, the path, the status code and how long the answer took. The query string is never
written (a client may put a token there), nor any header; a path segment that looks like a
token (this server's ``wk_`` tokens, a long random-looking string) is written as
``[REDACTED]``, and :func:`wiki_cli.errors.report` masks the secrets it knows and keeps
control characters inert. Lines go through ``report``, so ``wiki --quiet serve`` writes
none. uvicorn's own access log (on stdout, with the query string) is off.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable

from wiki.serve.config import TOKEN_PREFIX

PATH_LIMIT = 200
"""Characters of the path a line keeps (an entry's path can be long)."""

_TOKEN_LIKE = re.compile(
    rf"{re.escape(TOKEN_PREFIX)}[A-Za-z0-9_\-]+"  # this server's tokens
    r"|(?<![A-Za-z0-9_\-])(?=[A-Za-z0-9_\-]*[0-9])(?=[A-Za-z0-9_\-]*[a-z])"
    r"(?=[A-Za-z0-9_\-]*[A-Z])[A-Za-z0-9_\-]{24,}(?![A-Za-z0-9_\-])")
"""A ``wk_`` token, or a run of 24 or more URL-safe characters mixing digits, lower and
upper case letters (what a random token looks like; entry paths and ids do not)."""


def masked_path(path: str) -> str:
    """``path`` as a log line shows it: token-like runs replaced by ``[REDACTED]``, clipped
    to :data:`PATH_LIMIT` characters with ``…``."""
    path = _TOKEN_LIKE.sub("[REDACTED]", path)
    return path if len(path) <= PATH_LIMIT else path[:PATH_LIMIT - 1] + "…"


def request_line(scope, status: int | None, millis: float) -> str:
    """The log line of one finished request (``status`` ``None``: no answer was sent, the
    client went away first)."""
    at = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    client = scope.get("client")
    where = f"{client[0]}:{client[1]}" if client else "-"
    token = scope.get("wiki.token")
    who = token.name if token is not None else "-"
    code = "-" if status is None else str(status)
    return (f"{at} {where} {who} {scope.get('method', '-')} {masked_path(scope['path'])} "
            f"{code} {millis:.0f} ms")


class AccessLog:
    """ASGI middleware: after each HTTP request, ``write`` its :func:`request_line` (also
    when the app fails: the status is then the one sent, else the 500 uvicorn sends)."""

    def __init__(self, app, write: Callable[[str], None]) -> None:
        self.app, self.write = app, write

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status: int | None = None

        async def sent(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sent)
        except Exception:
            status = status or 500
            raise
        finally:
            self.write(request_line(scope, status, (time.monotonic() - started) * 1000))
