"""``wiki serve``: the wiki of one or more repositories over HTTP (docs/serve.md).

Two surfaces over the same tool bodies (:class:`wiki_cli.mcp_server.WikiTools`), so both
return the JSON that ``--json`` prints:

* ``/v1/repos/{name}/mcp``: the MCP tools over streamable HTTP (stateless, JSON replies);
* a small REST surface: ``GET /v1/repos``, ``GET /v1/repos/{name}/status``,
  ``POST /v1/repos/{name}/search|ask|lint|propose`` (a JSON object of the tool's
  arguments), ``GET /v1/repos/{name}/entries/{id or path}``; ``GET /health`` needs no token.

Every answer names the wiki commit it was computed against (``commit`` in the body and the
``X-Wiki-Commit`` header); a request may send ``X-Wiki-Commit`` to require that commit
(409 when the branch has moved). A token reaches the repositories its config names (404
for any other, as for a repository that does not exist); a read token cannot propose
(403, and its MCP server has no ``propose`` tool); nothing approves. Models and indexes
stay warm in this process; each wiki branch is fetched from its remote every
``fetch_interval`` seconds (fast-forward only, never pushed). Reads of one repository run
side by side, proposals alone (``Turns``); a REST call past ``request_timeout`` gets 504.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from indexes.backend import keep_connections
from indexes.errors import IndexUnavailableError
from wiki.errors import RefMovedError, UsageError
from wiki.serve.config import RepoSpec, ServeConfig, TokenSpec
from wiki_cli import __version__, serve_workers
from wiki_cli.errors import (
    CONFLICT,
    FINDINGS,
    INTERNAL,
    REFUSED,
    STORAGE,
    USAGE,
    exit_code_for,
    report,
    talk,
)
from wiki_cli.inert import mask_secrets
from wiki_cli.mcp_server import WikiTools, build_server, review_refusal
from wiki_cli.serve_guard import READERS, Guard, Turns, in_turn, problem
from wiki_cli.serve_log import AccessLog
from wiki_cli.tool_calls import WRITES, ToolFailure, run_tool

log = logging.getLogger("wiki.serve")

HTTP_STATUS = {FINDINGS: 404, USAGE: 400, CONFLICT: 409, REFUSED: 422, STORAGE: 503,
               INTERNAL: 500}
"""The HTTP status of a failed call, by the CLI's exit code for the same error."""
MCP_PATH = re.compile(r"^/v1/repos/([^/]+)/mcp/?$")
COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
READ_KEY = ""
"""The key of a repository's read-only MCP server (propose tokens' servers: their name)."""


@dataclass
class Served:
    """One served repository: its tools (one per propose token, for its author; all
    sharing one ``RepoLock``), its MCP apps by token key, and the last fetch."""

    spec: RepoSpec
    tools: WikiTools
    writers: dict[str, WikiTools] = field(default_factory=dict)
    mcp: dict[str, Any] = field(default_factory=dict)
    fetched: dict[str, Any] = field(default_factory=dict)
    turns: Turns = field(default_factory=Turns)
    """REST and MCP calls wait for their turn here (reads side by side, writes alone)."""

    def tools_for(self, token: TokenSpec) -> WikiTools:
        """The tools a token's calls run on (its author's, when it may propose)."""
        return self.writers.get(token.name, self.tools) if token.may_propose else self.tools


def build_app(config: ServeConfig, spec=None, *, warm: bool = True, write=report):
    """The ASGI app serving ``config``'s repositories (``spec``: the embedder settings of
    every call, default the environment's). With ``warm``, the embedding model is loaded
    and each index synced in the background at start. Returns the app (the request log
    around the guard in front of a Starlette app whose lifespan runs the MCP session
    managers and the fetch loop); each request's line goes to ``write`` (default
    ``report``: stderr, none with ``--quiet``)."""
    served = {name: _served(repo, config, spec) for name, repo in config.repos.items()}
    rest = partial(_rest, served, config.limits.request_timeout)
    routes = [
        Route("/health", partial(_health, served), methods=["GET"]),
        Route("/v1/repos", partial(_repos, served), methods=["GET"]),
        Route("/v1/repos/{name}/status", partial(rest, "status"), methods=["GET"]),
        Route("/v1/repos/{name}/entries/{target:path}", partial(rest, "get"),
              methods=["GET"]),
        *[Route(f"/v1/repos/{{name}}/{tool}", partial(rest, tool), methods=["POST"])
          for tool in ("search", "ask", "lint", "propose")],
    ]

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        async with contextlib.AsyncExitStack() as stack:
            for repo in served.values():
                for app in repo.mcp.values():
                    await stack.enter_async_context(app.session_manager.run())
            if warm:
                for repo in served.values():
                    threading.Thread(target=_warm, args=(repo,), daemon=True,
                                     name=f"wiki-serve-warm-{repo.spec.name}").start()
            async with anyio.create_task_group() as group:
                if config.fetch_interval > 0:
                    group.start_soon(_fetch_loop, served, config.fetch_interval)
                yield
                group.cancel_scope.cancel()

    app = Starlette(routes=routes, lifespan=lifespan,
                    exception_handlers={404: _not_found, 405: _not_allowed})
    return AccessLog(Guard(_Dispatch(app, served), config), write)


def _served(repo: RepoSpec, config: ServeConfig, spec) -> Served:
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    tools = WikiTools(repo.path, repo.branch, spec)
    served = Served(repo, tools)
    for token in config.tokens:
        if token.may_propose and token.may_use(repo.name):
            served.writers[token.name] = WikiTools(repo.path, repo.branch, tools.spec,
                                                   author=token.author, lock=tools.lock)
    for key, each in [(READ_KEY, tools), *served.writers.items()]:
        server, _ = build_server(repo.path, repo.branch, tools=each, read_only=key == READ_KEY,
                                 turns=served.turns)
        server.streamable_http_app(stateless_http=True, json_response=True, host=config.host,
                                   max_request_body_size=config.limits.max_body_bytes)
        app = StreamableHTTPASGIApp(server.session_manager)
        served.mcp[key] = app
    return served


class _Dispatch:
    """``/v1/repos/{name}/mcp`` to that repository's MCP app for the caller's token
    (read-only or the token's own), every other path to the REST app. Only POST reaches
    the MCP app: in stateless mode a GET would open an event stream that nothing ever
    writes to and nothing ever closes, one held connection per request."""

    def __init__(self, rest, served: dict[str, Served]) -> None:
        self.rest, self.served = rest, served

    async def __call__(self, scope, receive, send) -> None:
        match = MCP_PATH.match(scope["path"]) if scope["type"] == "http" else None
        if match is None:
            await self.rest(scope, receive, send)
            return
        token: TokenSpec = scope["wiki.token"]
        repo = self.served.get(match[1])
        if repo is None or not token.may_use(match[1]):
            await _no_repo(match[1])(scope, receive, send)
            return
        if scope["method"] != "POST":  # stateless: no stream for the server to push on
            await problem(405, f"{scope['method']} is not allowed on {scope['path']}: this "
                          "MCP endpoint is stateless, POST each JSON-RPC message",
                          "method-not-allowed")(scope, receive, send)
            return
        app = repo.mcp[token.name if token.may_propose else READ_KEY]
        await app(scope, receive, send)


def _no_repo(name: str) -> JSONResponse:
    return problem(404, f"no repository {name!r} for this token", "NotFoundError", FINDINGS)


async def _not_found(request: Request, _exc) -> JSONResponse:
    return problem(404, f"no such route: {request.method} {request.url.path} (there is no "
                   "approve: a person approves with `wiki approve`)", "not-found")


async def _not_allowed(request: Request, _exc) -> JSONResponse:
    return problem(405, f"{request.method} is not allowed on {request.url.path}",
                   "method-not-allowed")


async def _health(served: dict[str, Served], _request: Request) -> JSONResponse:
    failing = sum(1 for repo in served.values() if repo.fetched.get("error"))
    return JSONResponse({"status": "degraded" if failing else "ok", "version": __version__,
                         "repositories": len(served), "fetch_errors": failing})


async def _repos(served: dict[str, Served], request: Request) -> JSONResponse:
    token: TokenSpec = request.scope["wiki.token"]
    listed = []
    for name, repo in served.items():
        if token.may_use(name):
            state = await anyio.to_thread.run_sync(lambda r=repo: _branch_state(r))
            listed.append({"name": name, **state, "rights": token.rights,
                           "remote": repo.spec.remote, "fetch": repo.fetched or None})
    return JSONResponse({"repositories": listed})


def _branch_state(repo: Served) -> dict[str, Any]:
    """``{"branch", "head"}`` of a served repository, or ``{"branch": None, "head": None,
    "error": message}`` when it cannot be read now (moved or deleted while serving)."""
    from wiki.errors import WikiError

    try:
        wiki = repo.tools.wiki()
        return {"branch": wiki.branch, "head": wiki.head()}
    except (WikiError, OSError) as exc:
        return {"branch": None, "head": None, "error": str(exc).splitlines()[0][:300]}


async def _rest(served: dict[str, Served], limit: float, tool: str,
                request: Request) -> JSONResponse:
    """One REST call: scope and rights, the arguments, then, in the repository's turn
    (waited for without a thread; reads side by side, a proposal alone), the tool body
    under its lock, all within the time limit."""
    token: TokenSpec = request.scope["wiki.token"]
    name = request.path_params["name"]
    repo = served.get(name)
    if repo is None or not token.may_use(name):
        return _no_repo(name)
    if tool == "propose" and not token.may_propose:
        return problem(403, f"token {token.name!r} has read rights only: it cannot propose",
                       "forbidden", REFUSED)
    try:
        kwargs = await _arguments(request, tool)
    except UsageError as error:
        return problem(400, str(error), "UsageError", USAGE)
    if tool == "propose" and (why := review_refusal("propose", kwargs)):
        return problem(403, why, "review-policy", REFUSED)
    wanted = request.headers.get("x-wiki-commit")
    if wanted is not None and not COMMIT.match(wanted):
        return problem(400, f"X-Wiki-Commit {wanted!r} is not a commit id (7-40 hex digits)",
                       "UsageError", USAGE)
    tools = repo.tools_for(token)
    call = partial(_at_commit, tools, _body(tools, tool), wanted)
    run = partial(run_tool, tools, call, kwargs, writes=tool in WRITES)
    try:
        with anyio.fail_after(limit):
            result = await in_turn(repo.turns.of(tool), run)
    except TimeoutError:
        return problem(504, f"the call did not finish within {limit:g} s (it may still "
                       "complete on the server)", "gateway-timeout")
    except ToolFailure as failed:
        return _failure(failed)
    return JSONResponse(result, headers={"X-Wiki-Commit": result.get("commit") or ""})


async def _arguments(request: Request, tool: str) -> dict[str, Any]:
    """The call's arguments: the path's entry for ``get``, none for ``status``, else the
    JSON object in the body. Raises :class:`UsageError` for a body that is not one."""
    if tool == "get":
        return {"target": request.path_params["target"]}
    if tool == "status":
        return {}
    import json

    body = await request.body()
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"the request body is not JSON: {exc}") from None
    except RecursionError:
        raise UsageError("the request body is nested too deeply to read") from None
    if not isinstance(data, dict):
        raise UsageError("the request body must be a JSON object of the tool's arguments")
    return data


def _body(tools: WikiTools, tool: str):
    """The function a REST call runs: the MCP tool body with its arguments checked by its
    own signature (a bad argument is a :class:`UsageError`, 400), or the status."""
    if tool == "status":
        return partial(_status, tools)
    from pydantic import ValidationError

    checked = _checked(tools, tool)

    def call(**kwargs):
        try:
            return checked(**kwargs)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "arguments"
            raise UsageError(f"{tool}: {where}: {first.get('msg')}") from None

    return call


@lru_cache(maxsize=512)
def _checked(tools: WikiTools, tool: str):
    """``tools.<tool>`` wrapped by pydantic's ``validate_call``, made once per tools object
    and tool (making the validators was 9 % of a served call's CPU, measured with py-spy)."""
    from pydantic import validate_call

    return validate_call(getattr(tools, tool))


def _status(tools: WikiTools) -> dict[str, Any]:
    """``wiki status --json``'s object."""
    from wiki.status import wiki_status
    from wiki_cli.render import to_jsonable

    return to_jsonable(wiki_status(tools.wiki()))


def _at_commit(tools: WikiTools, body, wanted: str | None, **kwargs) -> dict[str, Any]:
    """``body(**kwargs)`` with the commit it was computed against: the body's own
    ``commit`` when it reports one, else the head read just before. With ``wanted``, a
    head that is not that commit is a conflict (:class:`RefMovedError`, 409)."""
    head = tools.wiki().require_head()
    if wanted is not None and not head.startswith(wanted):
        raise RefMovedError(f"the wiki branch is at {head[:12]}, not at the requested "
                            f"commit {wanted}: ask again with X-Wiki-Commit: {head[:12]} (or "
                            f"without it) for the answer at the head")
    result = body(**kwargs)
    commit = result.get("commit") or result.get("head") or head
    return {**result, "commit": commit}


def _failure(failed: ToolFailure) -> JSONResponse:
    error = failed.error
    code = INTERNAL if failed.internal else exit_code_for(error)
    status = 503 if isinstance(error, IndexUnavailableError) else HTTP_STATUS.get(code, 500)
    message = (f"internal error: {type(error).__name__}: {error} (please report it)"
               if failed.internal else str(error))
    return problem(status, mask_secrets(message), type(error).__name__,
                   code, notices=failed.notices)


def _warm(repo: Served) -> None:
    """Load the model and sync the index now, so the first call does not wait for them."""
    repo.tools.warm_up()
    try:
        run_tool(repo.tools, partial(_status, repo.tools), {})
        run_tool(repo.tools, repo.tools.search, {"query": "warm up", "limit": 1})
    except ToolFailure as failed:
        log.warning("%s: not warmed up: %s", repo.spec.name, failed.error)


async def _fetch_loop(served: dict[str, Served], interval: float) -> None:
    """Fetch every repository that names a remote, now and then every ``interval`` s."""
    while True:
        for repo in served.values():
            if repo.spec.remote:
                repo.fetched = await anyio.to_thread.run_sync(fetch_once, repo)
        await anyio.sleep(interval)


def fetch_once(repo: Served) -> dict[str, Any]:
    """Fetch one repository's wiki branch; what happened, as ``GET /v1/repos`` shows it.
    A failure is logged and reported, never raised: the server keeps serving."""
    from wiki.errors import WikiError
    from wiki.serve.fetch import fetch_wiki

    at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    try:
        done = fetch_wiki(repo.tools.wiki(), repo.spec.remote)
    except WikiError as error:
        log.warning("%s: fetch from %s failed: %s", repo.spec.name, repo.spec.remote, error)
        return {"at": at, "action": None, "head": None, "error": str(error)}
    if done.action in ("ahead", "diverged"):
        log.warning("%s: the wiki branch is %s of %s; left alone (a person runs `wiki "
                    "sync`)", repo.spec.name, done.action, repo.spec.remote)
    return {"at": at, "action": done.action, "head": done.after, "error": None}


def check_repositories(config: ServeConfig) -> None:
    """Open every configured repository and its wiki branch now, so a wrong path fails at
    start with its name. Raises :class:`ConfigError` naming the repository."""
    from wiki.errors import ConfigError, WikiError
    from wiki.store.workspace import Wiki

    for name, repo in config.repos.items():
        try:
            Wiki(repo.path, repo.branch).require_head()
        except WikiError as error:
            raise ConfigError(f"repository {name!r} ({repo.path}): {error}") from None


def run(config: ServeConfig) -> None:
    """Serve ``config`` until interrupted (Ctrl-C or SIGTERM: uvicorn stops taking
    requests and lets the running ones finish), in ``config.workers`` processes
    (:mod:`wiki_cli.serve_workers`; each request line then ends with its worker's number).
    The embedding model is loaded in each process, as ``wiki mcp`` does. Requests are
    logged by :class:`AccessLog`, not by uvicorn (its access log goes to stdout and keeps
    the query string)."""
    from dataclasses import replace

    import uvicorn

    from wiki.answering.embed_settings import resolve_spec

    workers = serve_workers.start(config.host, config.port, config.workers)
    if not workers.parent:  # the first process alone fetches remotes
        config = replace(config, fetch_interval=0)
    spec = replace(resolve_spec(notify=lambda line: log.info("%s", line)), server="off")
    # a PostgreSQL index's connections stay open between calls: as many as can run at once
    keep_connections((READERS + 1) * max(1, len(config.repos)))
    level = "warning" if talk.level < 0 else "info"  # --quiet: uvicorn's warnings only
    write = report if config.workers == 1 else (
        lambda line, n=workers.number: report(f"{line} worker {n}"))
    settings = uvicorn.Config(build_app(config, spec, write=write), host=config.host,
                              port=config.port, log_level=level, access_log=False,
                              timeout_keep_alive=5, h11_max_incomplete_event_size=16384,
                              server_header=False)
    try:
        with workers.supervising():
            uvicorn.Server(settings).run(sockets=[workers.sock])
    finally:
        workers.sock.close()
