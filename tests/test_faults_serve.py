"""Breaking ``wiki serve`` on purpose, on 127.0.0.1 in scratch repositories: token
tricks, repository names and entry ids built to slip past a scope, malformed and hostile
bodies (deep nesting, JSON-RPC that is not), method confusion and config files an operator
gets wrong. Every answer must be a clean 4xx (never 500), never cross a token's scope, and
never propose or approve with a read token."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from conftest import git, ingest_and_land, write
from serve_helpers import (
    OTHER_TOKEN,
    READ_TOKEN,
    WRITE_TOKEN,
    ops_repository,
    running,
    write_config,
)

from wiki.errors import ConfigError
from wiki.serve.config import load_config, token_hash
from wiki.store.workspace import Wiki


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def two(wiki: Wiki, repo: Path, tmp_path: Path) -> Path:
    """``handbook`` (one entry) and ``ops`` (one entry): the config file."""
    write(repo / "docs" / "leave.md", "# Annual leave\n\nLeave is requested in HR Links.\n")
    ingest_and_land(wiki, repo / "docs")
    ops = ops_repository(tmp_path)
    return write_config(tmp_path / "serve.toml", {"handbook": repo, "ops": ops},
                        extra_server="max_body_bytes = 200000\nbody_timeout = 2")


def _rpc(method: str, params=None, ident=1) -> dict:
    message = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}


def test_hostile_requests_get_clean_answers(two: Path) -> None:
    with running(two) as base, httpx.Client(base_url=base, timeout=60) as client:
        read, other = _auth(READ_TOKEN), _auth(OTHER_TOKEN)
        statuses = {}

        def check(name, response, allowed):
            statuses[name] = response.status_code
            assert response.status_code in allowed, (name, response.status_code,
                                                      response.text[:300])
            assert response.status_code != 500

        deep = "[" * 50000 + "]" * 50000
        check("deep json", client.post("/v1/repos/handbook/search", headers=read,
                                       content=f'{{"query": {deep}}}'), {400})
        check("deep object", client.post("/v1/repos/handbook/search", headers=read,
                                         content='{"a":' * 20000 + "1" + "}" * 20000), {400})
        check("deep args", client.post("/v1/repos/handbook/search", headers=read,
                                       json={"query": "leave", "tags": _nested(200)}), {400})
        check("nul query", client.post("/v1/repos/handbook/search", headers=read,
                                       json={"query": "leave\x00"}), {200, 400})
        check("bad utf-8", client.post("/v1/repos/handbook/search", headers=read,
                                       content=b'{"query": "\xff\xfe"}'), {400})
        check("lone surrogate", client.post("/v1/repos/handbook/search", headers=read,
                                            content=b'{"query": "\\udcff"}'), {400})
        check("huge limit", client.post("/v1/repos/handbook/search", headers=read,
                                        json={"query": "leave", "limit": 10**12}), {400})
        check("float limit", client.post("/v1/repos/handbook/search", headers=read,
                                         json={"query": "leave", "limit": 1e308}), {400})
        for target in ("..%2F..%2F..%2Fetc%2Fpasswd", "%00", "a%00b", "x" * 5000,
                       "%ff%fe", "..", ".git/config", "%2e%2e/%2e%2e/README.md",
                       "docs/../../README.md", "%0a%0d"):
            check(f"entry {target[:20]}", client.get(f"/v1/repos/handbook/entries/{target}",
                                                     headers=read), {400, 404})
        for name in ("HANDBOOK", "handbook%2F", "handbook%00", "%2e%2e", "..%2Fhandbook",
                     "handbook%20", "ｈａｎｄｂｏｏｋ", "*"):
            check(f"repo {name}", client.post(f"/v1/repos/{name}/search", headers=other,
                                              json={"query": "leave"}), {404})
            check(f"mcp {name}", client.post(f"/v1/repos/{name}/mcp", headers={
                **other, **MCP_HEADERS}, json=_rpc("tools/list")), {404})
        for method, path in (("PUT", "/v1/repos/handbook/search"),
                             ("GET", "/v1/repos/handbook/search"),
                             ("POST", "/health"), ("DELETE", "/v1/repos/handbook/status"),
                             ("POST", "/v1/repos/handbook/approve"),
                             ("POST", "/v1/repos/handbook/reject"),
                             ("TRACE", "/v1/repos"), ("OPTIONS", "/v1/repos/handbook/mcp")):
            check(f"{method} {path}", client.request(method, path, headers=read),
                  {401, 404, 405})
        for header in ("Bearer", "bearer", "Basic " + READ_TOKEN,
                       "Bearer " + READ_TOKEN.upper(), "Bearer " + READ_TOKEN + "x",
                       "Bearer " + READ_TOKEN[:-1]):
            check(f"auth {header[:12]}", client.get("/v1/repos", headers={
                "Authorization": header}), {401})
        check("health", client.get("/health"), {200})


def _nested(depth: int):
    value: list = ["x"]
    for _ in range(depth):
        value = [value]
    return value


def test_malformed_mcp_messages_are_protocol_errors(two: Path) -> None:
    with running(two) as base, httpx.Client(base_url=base, timeout=60) as client:
        url = "/v1/repos/handbook/mcp"
        headers = {**_auth(READ_TOKEN), **MCP_HEADERS}
        bodies = [b"", b"not json", b"[]", b"{}", b"null", b'{"jsonrpc": "1.0"}',
                  b'{"jsonrpc":"2.0","id":1,"method":' + b"[" * 30000 + b"]" * 30000 + b"}",
                  b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}',
                  b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}']
        for body in bodies:
            answer = client.post(url, headers=headers, content=body)
            assert answer.status_code < 500, (body[:60], answer.status_code, answer.text[:300])
        for name, arguments in (("propose", {"kind": "new", "content": "# x\n\nbody\n"}),
                                ("approve", {"name": "x"}), ("search", "not a dict"),
                                ("search", {"query": "leave", "tags": _nested(300)}),
                                ("search", {"query": "leave\x00"}),
                                ("get", {"target": "../../etc/passwd"})):
            answer = client.post(url, headers=headers, json=_rpc(
                "tools/call", {"name": name, "arguments": arguments}))
            assert answer.status_code < 500, (name, answer.status_code, answer.text[:300])
            reply = answer.json() if answer.status_code == 200 else {}
            if name in ("propose", "approve"):
                assert "error" in reply or reply.get("result", {}).get("isError"), reply
        listed = client.post(url, headers=headers, json=_rpc("tools/list")).json()
        assert {t["name"] for t in listed["result"]["tools"]} == {"search", "ask", "get",
                                                                   "lint"}
        assert not [b for b in git_branches(two) if "proposal" in b]


def git_branches(config: Path) -> list[str]:
    repos = load_config(config).repos
    return [line for spec in repos.values()
            for line in git(spec.path, "branch", "--list", "--format=%(refname)").split()]


def _config(tmp_path: Path, repo: Path, tokens: str, server: str = "") -> Path:
    path = tmp_path / "serve.toml"
    path.write_text(f"[server]\n{server}\n[repos.handbook]\npath = {str(repo)!r}\n{tokens}",
                    encoding="utf-8")
    return path


def _token(name: str, secret: str, rights: str = "read", author: str = "") -> str:
    lines = ["[[tokens]]", f'name = "{name}"', f'hash = "{token_hash(secret)}"',
             'repos = ["*"]', f'rights = "{rights}"']
    if author:
        lines.append(f'author = "{author}"')
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("tokens", "server", "words"), [
    (_token("agents", "wk_a" * 10, "propose", "Ann <ann@example.com>")
     + _token("agents", "wk_b" * 10, "propose", "Bob <bob@example.com>"), "",
     "token 'agents' is named twice"),
    (_token("one", "wk_same" * 6) + _token("two", "wk_same" * 6, "propose",
                                           "Bob <bob@example.com>"), "",
     "the same hash as token 'one'"),
    ("", "request_timeout = nan", "request_timeout"),
    ("", "body_timeout = nan", "body_timeout"),
    ("", "fetch_interval = nan", "fetch_interval"),
])
def test_config_faults_are_one_line(tmp_path: Path, wiki: Wiki, tokens: str, server: str,
                                    words: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(_config(tmp_path, wiki.root, tokens, server))
    assert words in str(refused.value)
    assert "\n" not in str(refused.value)


def test_write_token_sees_only_its_own_repository_for_propose(two: Path) -> None:
    """The propose token names handbook only: ops is 404 to it, even over MCP."""
    with running(two) as base, httpx.Client(base_url=base, timeout=60) as client:
        headers = {**_auth(WRITE_TOKEN), **MCP_HEADERS}
        answer = client.post("/v1/repos/ops/mcp", headers=headers, json=_rpc("tools/list"))
        assert answer.status_code == 404
        answer = client.post("/v1/repos/ops/propose", headers=_auth(WRITE_TOKEN),
                             json={"kind": "new", "content": "# x\n\nbody\n"})
        assert answer.status_code == 404


def test_calls_waiting_for_a_busy_repository_hold_no_threads(two: Path) -> None:
    """60 calls queued behind a held handbook lock (more than the worker threads): ops,
    /health and the listing still answer, the queued calls end in 504, and those that
    timed out while waiting for their turn left no thread behind (each would otherwise
    block a thread until the lock frees, then run its search for nobody)."""
    import threading

    import anyio

    from wiki_cli.serve_http import build_app

    text = two.read_text(encoding="utf-8").replace("[server]", "[server]\nrequest_timeout = 3")
    two.write_text(text, encoding="utf-8")
    app = build_app(load_config(two), warm=False)
    held = app.app.app.served["handbook"].tools.lock
    answers: dict[str, list[int]] = {"handbook": [], "ops": [], "health": [], "repos": []}

    async def main(base: str) -> None:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
            async def call(kind: str, method: str, path: str, body=None) -> None:
                response = await client.request(method, path, headers=_auth(READ_TOKEN),
                                                json=body)
                answers[kind].append(response.status_code)

            async with anyio.create_task_group() as group:
                for _ in range(60):
                    group.start_soon(call, "handbook", "POST", "/v1/repos/handbook/search",
                                     {"query": "leave"})
                await anyio.sleep(0.5)  # let them queue (not an assertion on time)
                await call("health", "GET", "/health")
                await call("ops", "POST", "/v1/repos/ops/search", {"query": "pager"})
                await call("repos", "GET", "/v1/repos")

    held.acquire()
    try:
        with running(two, app=app) as base:
            before = threading.active_count()
            anyio.run(main, base)
            left = threading.active_count() - before
    finally:
        held.release()
    assert answers["health"] == [200] and answers["ops"] == [200], answers
    assert answers["repos"] == [200], answers
    assert set(answers["handbook"]) == {504}, answers
    assert left <= 5, f"{left} threads left behind by calls that timed out"


@pytest.mark.parametrize(("where", "words"), [
    ("nul", "handbook"),
    ("missing", "handbook"), ("branch", "handbook"),
])
def test_a_repository_the_server_cannot_open_is_one_line_at_start(
        tmp_path: Path, wiki: Wiki, runner, where: str, words: str) -> None:
    from wiki_cli.app import app

    target = {"file": str(wiki.root / "README.md"), "nul": str(wiki.root) + "\\u0000x",
              "locked": str(tmp_path / "locked"), "missing": str(tmp_path / "nowhere"),
              "branch": str(wiki.root)}[where]
    (tmp_path / "locked").mkdir(mode=0)
    extra = 'branch = "no/such\\u0000branch"\n' if where == "branch" else ""
    config = tmp_path / "serve.toml"
    config.write_text(f'[repos.handbook]\npath = "{target}"\n{extra}', encoding="utf-8")
    try:
        result = runner.invoke(app, ["serve", "--config", str(config)])
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert result.exit_code == 2, result.output
    assert words in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


def test_a_port_in_use_is_one_line_and_exit_2(tmp_path: Path, wiki: Wiki, runner) -> None:
    """uvicorn exits 3 (the CLI's "evidence gap") after a log line when it cannot bind."""
    import socket

    from wiki_cli.app import app

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    config = tmp_path / "serve.toml"
    config.write_text(f"[server]\nport = {port}\n[repos.handbook]\npath = {str(wiki.root)!r}\n"
                      + _token("reader", READ_TOKEN), encoding="utf-8")
    try:
        result = runner.invoke(app, ["serve", "--config", str(config)])
    finally:
        taken.close()
    assert result.exit_code == 2, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: cannot listen on 127.0.0.1:") and "in use" in last, last


def test_mcp_get_does_not_open_an_endless_stream(two: Path) -> None:
    """GET on the stateless MCP endpoint opened an event stream that never ended (a token
    holder could hold any number of connections); it is 405 now, as are the others."""
    with running(two) as base, httpx.Client(base_url=base, timeout=20) as client:
        headers = {**_auth(READ_TOKEN), **MCP_HEADERS}
        for method in ("GET", "DELETE", "PUT", "PATCH"):
            answer = client.request(method, "/v1/repos/handbook/mcp", headers=headers)
            assert answer.status_code == 405, (method, answer.text)
        listed = client.post("/v1/repos/handbook/mcp", headers=headers, json=_rpc("tools/list"))
        assert listed.status_code == 200


def test_mcp_calls_queued_on_a_busy_repository_hold_no_threads(two: Path) -> None:
    """60 MCP tool calls queued behind a held handbook lock: a REST call to ops still gets
    a worker thread and answers (before, the queued calls took every worker and ops got
    504), and the queued calls hold no threads while they wait."""
    import threading

    import anyio

    from wiki_cli.serve_http import build_app

    text = two.read_text(encoding="utf-8").replace("[server]", "[server]\nrequest_timeout = 20")
    two.write_text(text, encoding="utf-8")
    app = build_app(load_config(two), warm=False)
    held = app.app.app.served["handbook"].tools.lock
    codes: dict[str, list] = {"mcp": [], "ops": []}

    async def main(base: str) -> None:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
            async def mcp() -> None:
                answer = await client.post("/v1/repos/handbook/mcp", headers={
                    **_auth(READ_TOKEN), **MCP_HEADERS}, json=_rpc(
                    "tools/call", {"name": "search", "arguments": {"query": "leave"}}))
                codes["mcp"].append((answer.status_code,
                                     answer.json()["result"].get("isError")))

            async with anyio.create_task_group() as group:
                for _ in range(60):
                    group.start_soon(mcp)
                await anyio.sleep(0.5)  # let them queue (not an assertion on time)
                codes["waiting threads"] = threading.active_count() - before
                ops = await client.post("/v1/repos/ops/search", headers=_auth(READ_TOKEN),
                                        json={"query": "pager"})
                codes["ops"].append(ops.status_code)
                await anyio.to_thread.run_sync(held.release)

    held.acquire()
    with running(two, app=app) as base:
        before = threading.active_count()
        anyio.run(main, base)
    assert codes["ops"] == [200], codes
    assert codes["mcp"] == [(200, False)] * 60, codes["mcp"][:3]
    assert codes["waiting threads"] <= 5, codes["waiting threads"]


def test_a_huge_question_does_not_grow_the_gap_log_by_its_size(two: Path, wiki: Wiki) -> None:
    """Each unanswerable question appended its whole size to gaps.jsonl (900 KB a call under
    the default body limit: a read token could fill the server's disk); the record keeps
    the question's first 2,000 characters."""
    question = "zebra1 " * 25_000  # 175 KB, under this config's 200 KB body limit
    with running(two) as base:
        answer = httpx.post(f"{base}/v1/repos/handbook/ask", headers=_auth(READ_TOKEN),
                            json={"question": question}, timeout=120)
    assert answer.status_code == 200, answer.text[:200]
    assert answer.json()["gap"] is True
    assert (wiki.state_dir / "gaps.jsonl").stat().st_size < 5_000


def test_a_repository_deleted_while_serving_is_listed_with_its_error(two: Path,
                                                                     tmp_path: Path) -> None:
    import shutil

    with running(two) as url:
        shutil.rmtree(tmp_path / "ops")
        answer = httpx.get(f"{url}/v1/repos", headers=_auth(READ_TOKEN), timeout=30)
        assert answer.status_code == 200
        listed = {r["name"]: r for r in answer.json()["repositories"]}
        assert listed["handbook"]["head"] and "error" not in listed["handbook"]
        assert listed["ops"]["head"] is None and listed["ops"]["error"]
        assert httpx.get(f"{url}/health", timeout=30).status_code == 200


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    """The listening socket says TCP, so asyncio sets TCP_NODELAY on every connection it
    accepts (with proto 0 it did not, and each response waited ~40 ms for the client's
    delayed ACK: /health took 44 ms instead of 1)."""
    import asyncio
    import socket

    from wiki_cli.serve_guard import listening_socket

    host = "127.0.0.1"
    sock = listening_socket(host, 0)
    port = sock.getsockname()[1]
    seen: list[int] = []

    async def main() -> None:
        def accepted(reader, writer) -> None:
            conn = writer.get_extra_info("socket")
            seen.append(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(accepted, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(host, port)
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
            writer.close()

    asyncio.run(main())
    assert seen and seen[0] != 0, seen
