"""``wiki serve``: the official MCP client over streamable HTTP on 127.0.0.1, the REST
surface's JSON (the same as ``--json``), tokens and their scopes, and bounded requests;
all against a real server on a real socket, in real repositories."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import anyio
import httpx
import pytest
from conftest import ALICE, BOB, ingest_and_land, write
from serve_helpers import (
    OTHER_TOKEN,
    READ_TOKEN,
    WRITE_TOKEN,
    ops_repository,
    running,
    write_config,
)

from wiki.review.proposals import approve, get_proposal, list_proposals
from wiki.store.workspace import Wiki

NEW_ENTRY = ("---\ntitle: Parking permits\nsummary: Where to get a parking permit.\n"
             "tags: [facilities]\n---\nParking permits are issued by the front desk on "
             "the ground floor.\n")


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def served(wiki: Wiki, repo: Path, tmp_path: Path) -> tuple[Path, Wiki, Path]:
    """Two repositories: ``handbook`` (leave and Tock entries) and ``ops`` (one entry);
    returns the config file, the handbook wiki and the ops repository."""
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    ops = ops_repository(tmp_path)
    config = write_config(tmp_path / "serve.toml", {"handbook": repo, "ops": ops},
                          extra_server="max_body_bytes = 20000\nbody_timeout = 1")
    return config, wiki, ops


def test_mcp_client_over_streamable_http(served, tmp_path: Path) -> None:
    """The official MCP client, over HTTP on 127.0.0.1: a read token lists no propose tool
    and is refused one; a propose token proposes as its configured author; approve is
    refused; every answer names the commit."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    config, wiki, _ops = served
    head = wiki.head()
    seen: dict = {}

    async def session_calls(url: str, token: str, calls) -> None:
        async with httpx2.AsyncClient(headers=_auth(token), timeout=60) as client, \
                streamable_http_client(url, http_client=client) as (read, write_), \
                ClientSession(read, write_) as session:
            await session.initialize()
            await calls(session)

    async def as_reader(session: ClientSession) -> None:
        seen["read_tools"] = {t.name for t in (await session.list_tools()).tools}
        seen["search"] = await session.call_tool("search", {"query": "tock #670"})
        seen["ask"] = await session.call_tool("ask", {"question": "where is annual leave "
                                                                  "requested?"})
        with pytest.raises(MCPError) as refused:
            await session.call_tool("propose", {"kind": "new", "content": NEW_ENTRY})
        seen["read_propose"] = refused.value

    async def as_writer(session: ClientSession) -> None:
        seen["write_tools"] = {t.name for t in (await session.list_tools()).tools}
        seen["propose"] = await session.call_tool("propose", {
            "kind": "new", "content": NEW_ENTRY, "category": "facilities"})
        with pytest.raises(MCPError) as refused:
            await session.call_tool("approve", {"name": "anything"})
        seen["approve"] = refused.value

    with running(config) as base:
        url = f"{base}/v1/repos/handbook/mcp"

        async def main() -> None:
            with anyio.fail_after(120):
                await session_calls(url, READ_TOKEN, as_reader)
                await session_calls(url, WRITE_TOKEN, as_writer)

        anyio.run(main)
        denied = httpx.post(url, headers=_auth("wk_wrong"), json={})
        out_of_scope = httpx.post(f"{base}/v1/repos/handbook/mcp", headers=_auth(OTHER_TOKEN),
                                  json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert seen["read_tools"] == {"search", "ask", "get", "lint"}
    assert seen["write_tools"] == {"search", "ask", "get", "lint", "propose"}
    search = seen["search"].structured_content
    assert search["commit"] == head and search["hits"][0]["title"] == "Tock"
    ask = seen["ask"].structured_content
    assert ask["gap"] is False and ask["commit"] == head and "HR Links" in ask["answer"]
    assert "read rights only" in str(seen["read_propose"])
    assert "can never approve" in str(seen["approve"])
    proposed = seen["propose"].structured_content
    assert proposed["created"] is True
    assert proposed["author"] == "Carol Agent <carol@example.com>"
    proposal = get_proposal(wiki, proposed["proposal"])
    assert [str(a) for a in proposal.authors] == ["Carol Agent <carol@example.com>"]
    assert wiki.head() == head  # nothing landed
    assert denied.status_code == 401 and denied.json()["kind"] == "unauthorized"
    assert out_of_scope.status_code == 404


def test_rest_surface_returns_the_cli_json(served, runner_json) -> None:
    config, wiki, _ops = served
    head = wiki.head()
    with running(config) as base, httpx.Client(base_url=base, headers=_auth(READ_TOKEN),
                                               timeout=60) as client:
        health = httpx.get(f"{base}/health")
        repos = client.get("/v1/repos").json()
        search = client.post("/v1/repos/handbook/search", json={"query": "tock #670",
                                                                  "explain": True})
        ask = client.post("/v1/repos/handbook/ask", json={"question": "where is annual "
                                                                       "leave requested?"})
        path = ask.json()["citations"][0]["path"]
        entry = client.get(f"/v1/repos/handbook/entries/{path}")
        status = client.get("/v1/repos/handbook/status")
        lint = client.post("/v1/repos/handbook/lint", json={})
        ops = client.post("/v1/repos/ops/search", json={"query": "pager"})
        pinned = client.post("/v1/repos/handbook/search", json={"query": "tock"},
                             headers={"X-Wiki-Commit": head[:12]})
        moved = client.post("/v1/repos/handbook/search", json={"query": "tock"},
                            headers={"X-Wiki-Commit": "0" * 40})
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert [r["name"] for r in repos["repositories"]] == ["handbook", "ops"]
    assert repos["repositories"][0]["head"] == head
    assert search.status_code == 200 and search.headers["X-Wiki-Commit"] == head
    cli = runner_json("search", "tock #670")
    assert search.json()["hits"] == cli["hits"]
    assert {k for k in cli} <= set(search.json())
    assert ask.json()["sentences"] == runner_json("ask", "where is annual leave requested?"
                                                  )["sentences"]
    assert entry.json()["commit"] == head and entry.json()["path"] == path
    cli_status = runner_json("status")
    assert {k: v for k, v in status.json().items() if k != "commit"} == cli_status
    assert lint.json()["commit"] == head and "findings" in lint.json()
    assert ops.json()["hits"][0]["title"] == "Pager"
    assert pinned.status_code == 200
    assert moved.status_code == 409 and moved.json()["exit_code"] == 4


@pytest.fixture
def runner_json(repo: Path):
    """``wiki <args> --json`` in ``repo``, in-process, as parsed JSON."""
    from typer.testing import CliRunner

    from wiki_cli.app import app

    def run(*args: str):
        result = CliRunner().invoke(app, ["-C", str(repo), *args, "--json"])
        assert result.exit_code in (0, 1), result.output
        return json.loads(result.stdout)

    return run


def test_tokens_scopes_and_rights(served) -> None:
    config, wiki, ops = served
    head = wiki.head()
    with running(config) as base, httpx.Client(base_url=base, timeout=60) as client:
        missing = client.post("/v1/repos/handbook/search", json={"query": "tock"})
        wrong = client.post("/v1/repos/handbook/search", json={"query": "tock"},
                            headers=_auth("wk_" + "x" * 43))
        basic = client.get("/v1/repos", headers={"Authorization": "Basic cmVhZDpyZWFk"})
        read_propose = client.post("/v1/repos/handbook/propose", headers=_auth(READ_TOKEN),
                                   json={"kind": "new", "content": NEW_ENTRY})
        scoped = client.post("/v1/repos/handbook/search", headers=_auth(OTHER_TOKEN),
                             json={"query": "tock"})
        unknown = client.post("/v1/repos/nowhere/search", headers=_auth(READ_TOKEN),
                              json={"query": "tock"})
        other_repos = client.get("/v1/repos", headers=_auth(OTHER_TOKEN)).json()
        writer_ops = client.post("/v1/repos/ops/propose", headers=_auth(WRITE_TOKEN),
                                 json={"kind": "new", "content": NEW_ENTRY})
        approve_route = [client.post(path, headers=_auth(WRITE_TOKEN), json={"name": "x"})
                         for path in ("/v1/repos/handbook/approve", "/v1/approve",
                                      "/v1/repos/handbook/proposals/x/approve")]
        sneaky = client.post("/v1/repos/handbook/propose", headers=_auth(WRITE_TOKEN),
                             json={"kind": "new", "content": NEW_ENTRY, "approve": True})
        proposed = client.post("/v1/repos/handbook/propose", headers=_auth(WRITE_TOKEN),
                               json={"kind": "new", "content": NEW_ENTRY,
                                     "category": "facilities"})
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"].startswith(
        "Bearer")
    assert wrong.status_code == 401 and basic.status_code == 401
    assert read_propose.status_code == 403 and "read rights only" in read_propose.json()[
        "error"]
    assert scoped.status_code == 404 and unknown.status_code == 404
    assert scoped.json()["error"] == "no repository 'handbook' for this token"
    assert [r["name"] for r in other_repos["repositories"]] == ["ops"]
    assert writer_ops.status_code == 404
    assert [r.status_code for r in approve_route] == [404, 404, 404]
    assert sneaky.status_code == 403 and sneaky.json()["kind"] == "review-policy"
    assert proposed.status_code == 200, proposed.text
    name = proposed.json()["proposal"]
    assert proposed.json()["author"] == "Carol Agent <carol@example.com>"
    assert wiki.head() == head and Wiki(ops).head() is not None
    assert [p.name for p in list_proposals(wiki)] == [name]
    assert ALICE.email not in str(get_proposal(wiki, name).authors)
    approve(wiki, name, approver=BOB)  # a person lands it, outside the server
    assert wiki.head() != head


def test_bad_input_is_a_clear_error_and_nothing_escapes(served) -> None:
    """Path traversal in entry names, bad JSON, bad arguments, huge bodies: each a one-line
    JSON error with its status; nothing outside the branch is read."""
    config, wiki, _ops = served
    with running(config) as base, httpx.Client(base_url=base, headers=_auth(READ_TOKEN),
                                               timeout=60) as client:
        traversal = [client.get(f"/v1/repos/handbook/entries/{target}") for target in (
            "..%2F..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "docs/..%2F..%2FREADME.md",
            "..%5C..%5Cwindows")]
        not_json = client.post("/v1/repos/handbook/search", content=b"{not json")
        not_object = client.post("/v1/repos/handbook/search", json=["tock"])
        bad_arg = client.post("/v1/repos/handbook/search", json={"query": "tock",
                                                                 "limit": 0})
        unknown_arg = client.post("/v1/repos/handbook/search", json={"query": "tock",
                                                                     "rm": "-rf"})
        empty = client.post("/v1/repos/handbook/search", json={"query": "  "})
        huge = client.post("/v1/repos/handbook/search",
                           json={"query": "tock " * 10_000})
        huge_mcp = client.post("/v1/repos/handbook/mcp", content=b"x" * 50_000)
        wrong_method = client.get("/v1/repos/handbook/search")
    for response in traversal:
        assert response.status_code == 404, response.text
        assert response.json()["kind"] == "NotFoundError"
        assert "root:" not in response.text
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]
    assert not_object.status_code == 400
    assert bad_arg.status_code == 400 and "limit" in bad_arg.json()["error"]
    assert unknown_arg.status_code == 400 and "rm" in unknown_arg.json()["error"]
    assert empty.status_code == 400 and empty.json()["exit_code"] == 2
    assert huge.status_code == 413 and huge.json()["kind"] == "payload-too-large"
    assert huge_mcp.status_code == 413
    assert wrong_method.status_code == 405


def test_a_slow_body_is_cut_off_with_408(served) -> None:
    """A client that declares a body and sends it too slowly (slowloris) gets 408 after
    ``body_timeout`` (1 s here), and the server keeps answering others."""
    config, _wiki, _ops = served
    with running(config) as base:
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(b"POST /v1/repos/handbook/search HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Authorization: Bearer " + READ_TOKEN.encode() + b"\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
            reply = b""
            while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
                chunk = slow.recv(4096)
                if not chunk:
                    break
                reply += chunk
        after = httpx.post(f"{base}/v1/repos/handbook/search", headers=_auth(READ_TOKEN),
                           json={"query": "tock"}, timeout=60)
    assert reply.startswith(b"HTTP/1.1 408")
    assert b"request-timeout" in reply
    assert after.status_code == 200


def test_a_call_past_the_time_limit_is_504_and_the_server_recovers(served) -> None:
    """A call that cannot finish in ``request_timeout`` (here: the repository is busy with
    another call, held by the test) is answered 504; once free, calls succeed again."""
    from dataclasses import replace

    from wiki.serve.config import load_config
    from wiki_cli.serve_http import build_app

    config_path, _wiki, _ops = served
    config = load_config(config_path)
    config = replace(config, limits=replace(config.limits, request_timeout=3.0))
    app = build_app(config, warm=False)
    lock = app.app.app.served["handbook"].tools.lock
    with running(config, app=app) as base:
        with lock:  # another call holds the repository
            slow = httpx.post(f"{base}/v1/repos/handbook/search", headers=_auth(READ_TOKEN),
                              json={"query": "tock"}, timeout=60)
            other_repo = httpx.post(f"{base}/v1/repos/ops/search", headers=_auth(READ_TOKEN),
                                    json={"query": "pager"}, timeout=60)
        after = httpx.post(f"{base}/v1/repos/handbook/search", headers=_auth(READ_TOKEN),
                           json={"query": "tock"}, timeout=60)
    assert slow.status_code == 504 and slow.json()["kind"] == "gateway-timeout"
    assert other_repo.status_code == 200  # repositories do not wait for each other
    assert after.status_code == 200


def test_a_foreign_host_header_is_refused_on_every_route(served) -> None:
    """DNS rebinding: a web page whose own name resolves to 127.0.0.1 sends its name as
    Host. On loopback the MCP SDK refused that for MCP only; REST and /health answered."""
    config, _wiki, _ops = served
    with running(config) as base, httpx.Client(base_url=base, headers=_auth(READ_TOKEN),
                                               timeout=60) as client:
        port = base.rsplit(":", 1)[1]
        foreign = {path: client.post(path, json={"query": "tock"},
                                     headers={"Host": f"attacker.example:{port}"})
                   for path in ("/v1/repos/handbook/search", "/v1/repos/handbook/mcp")}
        health = client.get("/health", headers={"Host": "attacker.example"})
        odd = [client.get("/health", headers={"Host": value}).status_code
               for value in ("127.0.0.1.attacker.example", "localhost:80@evil", "[::2]:1")]
        allowed = [client.post("/v1/repos/handbook/search", json={"query": "tock"},
                               headers={"Host": value}).status_code
                   for value in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST",
                                 f"[::1]:{port}")]
    for response in (*foreign.values(), health):
        assert response.status_code == 421, response.text
        assert response.json()["kind"] == "misdirected-request"
        assert "attacker.example" in response.json()["error"]
    assert odd == [421, 421, 421]
    assert allowed == [200, 200, 200, 200]


LOG_LINE = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ 127\.0\.0\.1:\d+ "
"""How every request line starts: the time (UTC) and the client's address."""


def test_each_request_is_one_line_on_stderr_without_its_token(served, capsys) -> None:
    """``wiki serve`` wrote no request line of its own (uvicorn's went to stdout, with the
    query string): each request is one line on stderr with the token's name, the method,
    the path, the status and the time taken; no token, in a header, the query or the path,
    is ever written."""
    import re

    config, _wiki, _ops = served
    bad = "wk_" + "Bad7Token" * 5
    with running(config) as base, httpx.Client(base_url=base, timeout=60) as client:
        listed = client.get("/v1/repos", params={"token": READ_TOKEN},
                            headers=_auth(READ_TOKEN))
        refused = client.get(f"/v1/repos/{bad}/status", headers=_auth(bad))
    assert (listed.status_code, refused.status_code) == (200, 401)
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if " /v1/repos" in line]
    assert len(lines) == 2, captured.err
    assert re.match(LOG_LINE + r"reader GET /v1/repos 200 \d+ ms$", lines[0]), lines[0]
    assert re.match(LOG_LINE + r"- GET /v1/repos/\[REDACTED\]/status 401 \d+ ms$",
                    lines[1]), lines[1]
    for secret in (READ_TOKEN, bad, "Bearer", "token="):
        assert secret not in captured.err + captured.out


@pytest.mark.parametrize("quiet", [False, True])
def test_wiki_serve_logs_requests_on_stderr_not_stdout(served, quiet: bool) -> None:
    """The command itself, as a process: request lines on stderr (none with ``--quiet``),
    nothing on stdout, and uvicorn's own access line (query string and all) gone."""
    import os
    import signal
    import subprocess
    import sys
    import time

    config, wiki, _ops = served
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "wiki_cli", *(["--quiet"] if quiet else []), "serve",
            "--config", str(config), "--port", str(port)]
    process = subprocess.Popen(argv, cwd=wiki.root, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=os.environ.copy())
    try:
        base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/health", timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, \
                    process.communicate(timeout=30)
                time.sleep(0.1)
        statuses = [httpx.get(f"{base}/v1/repos?token={token}", headers=_auth(token),
                              timeout=60).status_code for token in (READ_TOKEN, "wk_x")]
    finally:
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert statuses == [200, 401]
    assert stdout == ""
    assert READ_TOKEN not in stderr and "token=" not in stderr
    logged = [line.split()[-3] for line in stderr.splitlines() if " GET /" in line]
    assert logged == ([] if quiet else ["200", "200", "401"]), stderr
