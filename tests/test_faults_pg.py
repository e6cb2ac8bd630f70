"""Breaking the PostgreSQL index on purpose: a database that fails in the middle of a
command (a lock held elsewhere past the URL's ``lock_timeout``), text PostgreSQL refuses
(NUL), SQL metacharacters in every filter, and passwords in hostile index URLs; through
the CLI, the MCP tools and ``wiki serve``, each must be one clean line, never exit 70 or
HTTP 500, and never show the password."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import psycopg
import pytest
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, running, write_config

from wiki.store.workspace import Wiki
from wiki_cli.mcp_server import WikiTools
from wiki_cli.tool_calls import ToolFailure, run_tool

PASSWORD = "hunter2-Zq9"


@pytest.fixture
def landed(wiki: Wiki, repo: Path, on_postgres: str) -> Wiki:
    """A wiki with two entries, its index synced into a fresh PostgreSQL database."""
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    return wiki


def _with_option(url: str, option: str) -> str:
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={option.replace(' ', '%20').replace('=', '%3D')}"


@pytest.fixture
def locked(landed: Wiki, repo: Path, on_postgres: str, monkeypatch):
    """The index database stops answering in the middle of a command: the branch moved
    (landed while the index was elsewhere), another session holds this space's sync lock,
    and this wiki's URL gives up waiting for it after 200 ms (a statement the server
    cancels once connected, schema checked and rows read)."""
    from wiki.store.index_url import index_space

    tools = WikiTools(landed.root, None)
    run_tool(tools, tools.search, {"query": "leave"})  # schema and rows in place
    monkeypatch.delenv("WIKI_INDEX_URL")
    write(repo / "more" / "parking.md", "# Parking\n\nParking permits come from the desk.\n")
    ingest_and_land(landed, repo / "more")
    monkeypatch.setenv("WIKI_INDEX_URL", _with_option(on_postgres, "-c lock_timeout=200"))
    holder = psycopg.connect(on_postgres)
    holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                   (index_space(landed),))
    yield landed
    holder.rollback()
    holder.close()


def test_database_failing_mid_command_is_one_line_on_the_cli(locked, cli) -> None:
    for args in (["search", "annual leave"], ["ask", "where is leave requested?"],
                 ["status"]):
        result = cli(*args)
        assert result.exit_code not in (0, 70), (args, result.output)
        assert "Traceback" not in result.output
        if args[0] != "status":  # status reports the index as it finds it
            assert "index database failed" in result.output, (args, result.output)


def test_database_failing_mid_command_is_a_tool_error_over_mcp(locked) -> None:
    tools = WikiTools(locked.root, None)
    for method, kwargs in ((tools.search, {"query": "annual leave"}),
                           (tools.ask, {"question": "where is leave requested?"})):
        with pytest.raises(ToolFailure) as failed:
            run_tool(tools, method, kwargs)
        assert not failed.value.internal, failed.value.error
        assert "index database" in str(failed.value.error)


def test_database_failing_mid_command_is_503_over_serve(locked, repo, tmp_path) -> None:
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    with running(config) as base:
        auth = {"Authorization": f"Bearer {READ_TOKEN}"}
        for path, body in (("search", {"query": "annual leave"}),
                           ("ask", {"question": "where is leave requested?"})):
            answer = httpx.post(f"{base}/v1/repos/handbook/{path}", json=body, headers=auth,
                                timeout=60)
            assert answer.status_code == 503, (path, answer.text)
            assert "index database" in answer.json()["error"]
        status = httpx.get(f"{base}/v1/repos/handbook/status", headers=auth, timeout=60)
        assert status.status_code in (200, 503), status.text


NASTY = ["50%", "a_b", "back\\slash", "it's", 'say "hi"', "x'; DROP TABLE wiki_docs; --",
         "nul\x00byte", "%_%", "\\x00"]


@pytest.mark.parametrize("value", NASTY)
def test_sql_metacharacters_on_every_leg(landed: Wiki, value: str) -> None:
    tools = WikiTools(landed.root, None)
    for kwargs in ({"query": value}, {"query": "leave", "category": value},
                   {"query": "leave", "tags": [value]}, {"query": "leave", "scope": value},
                   {"query": value, "legs": ["alias"]}):
        try:
            result = run_tool(tools, tools.search, kwargs)
        except ToolFailure as failed:
            assert not failed.internal, (kwargs, failed.error)
            continue
        if "category" in kwargs or "tags" in kwargs or "scope" in kwargs:
            assert result["results"] == [], (kwargs, result)
    try:
        run_tool(tools, tools.ask, {"question": value, "category": value})
    except ToolFailure as failed:
        assert not failed.internal, failed.error
    try:
        run_tool(tools, tools.get, {"target": value})
    except ToolFailure as failed:
        assert not failed.internal, failed.error
    with psycopg.connect(os.environ["WIKI_INDEX_URL"]) as conn:
        assert conn.execute("SELECT count(*) FROM wiki_docs").fetchone()[0] >= 2


@pytest.mark.parametrize("url", [
    f"mysql://wiki:{PASSWORD}@127.0.0.1/wiki",
    f"postgresql://wiki:{PASSWORD}@127.0.0.1:1/wiki",
    f"postgresql://wiki@127.0.0.1:1/wiki?password={PASSWORD}",
    f"postgresql://wiki:{PASSWORD}%zz@127.0.0.1:1/wiki",
    f"postgresql://wiki:{PASSWORD}@127.0.0.1:1/wiki?sslmode=bogus",
    f"postgresql://wiki:{PASSWORD}@127.0.0.1:1/wiki?options=-c%20x",
    f"postgresql://wiki:{PASSWORD}@[::1:1/wiki",
])
def test_password_in_index_url_never_shown(landed: Wiki, cli, monkeypatch, url: str) -> None:
    monkeypatch.setenv("WIKI_INDEX_URL", url)
    for args in (["search", "leave"], ["search", "leave", "--json"], ["status"],
                 ["status", "--json"], ["doctor"], ["lint", "--json"]):
        result = cli(*args)
        assert PASSWORD not in result.output, (args, result.output)
        assert result.exit_code != 70, (args, result.output)
    tools = WikiTools(landed.root, None)
    with pytest.raises(ToolFailure) as failed:
        run_tool(tools, tools.search, {"query": "leave"})
    assert PASSWORD not in str(failed.value.error)
    assert not failed.value.internal



def test_a_password_in_a_working_url_is_never_served_or_logged(
        landed: Wiki, repo: Path, on_postgres: str, monkeypatch, tmp_path, caplog, cli) -> None:
    """A URL that connects and carries a password (trust auth ignores it): status, search
    and the server's answers and logs show ``***`` where the password was."""
    import logging

    url = f"{on_postgres}&password={PASSWORD}"
    monkeypatch.setenv("WIKI_INDEX_URL", url)
    for args in (["status"], ["status", "--json"], ["search", "leave", "--json"],
                 ["index", "--rebuild"], ["doctor"]):
        result = cli(*args)
        assert PASSWORD not in result.output, (args, result.output)
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    caplog.set_level(logging.DEBUG)
    with running(config, warm=True) as base:
        auth = {"Authorization": f"Bearer {READ_TOKEN}"}
        bodies = [httpx.get(f"{base}/v1/repos/handbook/status", headers=auth, timeout=60),
                  httpx.get(f"{base}/v1/repos", headers=auth, timeout=60),
                  httpx.post(f"{base}/v1/repos/handbook/search", headers=auth, timeout=60,
                             json={"query": "leave", "explain": True})]
    for answer in bodies:
        assert answer.status_code == 200, answer.text
        assert PASSWORD not in answer.text
    assert "password=***" in bodies[0].text
    assert PASSWORD not in caplog.text and READ_TOKEN not in caplog.text


@pytest.mark.parametrize("kwargs", [
    {"query": "leave", "as_of": "not a date"}, {"query": "leave", "as_of": "99999-01-01"},
    {"query": "leave", "as_of": "2020-02-30"}, {"query": "leave", "as_of": "\x00"},
    {"query": "leave", "limit": 0}, {"query": "leave", "limit": -1},
    {"query": "leave", "category": "../.."}, {"query": "leave", "legs": ["vector"]},
    {"query": "leave", "include_superseded": True, "scope": "%"},
    {"query": "'" * 5000}, {"query": "leave " * 3000},
])
def test_odd_search_arguments_on_postgres(landed: Wiki, kwargs: dict) -> None:
    tools = WikiTools(landed.root, None)
    try:
        run_tool(tools, tools.search, kwargs)
    except ToolFailure as failed:
        assert not failed.internal, failed.error
