"""``wiki mcp``: an MCP client from the official SDK drives the server as a real subprocess
over stdio, in a real repository; plus in-process checks of the refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import ALICE, BOB, acting_as, git, ingest_and_land, write
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from wiki.answering.filters import NoMatchingEntriesError
from wiki.review.proposals import approve, get_proposal, list_proposals
from wiki.store.workspace import Wiki

ROOT = Path(__file__).parent.parent
TOKEN = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"  # built here: no scanner bait in git
NEW_ENTRY = ("---\ntitle: Parking permits\nsummary: Where to get a parking permit.\n"
             "tags: [facilities]\n---\nParking permits are issued by the front desk on "
             "the ground floor.\n")


@pytest.fixture
def small_wiki(wiki: Wiki, repo: Path) -> Wiki:
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    return wiki


def _server(repo: Path, errlog: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT), os.environ.get("PYTHONPATH")])),
        "WIKI_EMBED_MODEL": "none", "WIKI_EMBED_SERVER": "off"}
    return StdioServerParameters(command=sys.executable, args=["-m", "wiki_cli", "mcp"],
                                 env=env, cwd=str(repo))


async def _session_calls(repo: Path, errlog: Path, calls):
    """Run ``calls(session)`` against a fresh ``wiki mcp`` subprocess."""
    with anyio.fail_after(120), open(errlog, "w") as log:
        async with stdio_client(_server(repo, errlog), errlog=log) as (read, write_), \
                ClientSession(read, write_, read_timeout_seconds=60) as session:
            await session.initialize()
            return await calls(session)


def test_mcp_client_over_stdio(small_wiki: Wiki, repo: Path, tmp_path: Path) -> None:
    head = small_wiki.head()
    seen: dict = {}

    async def calls(session: ClientSession) -> None:
        listed = await session.list_tools()
        seen["tools"] = {t.name: t for t in listed.tools}
        seen["search"] = await session.call_tool("search", {"query": "tock #670",
                                                            "explain": True})
        seen["filtered"] = await session.call_tool("search", {"query": "tock",
                                                              "category": "nowhere"})
        seen["answer"] = await session.call_tool("ask", {"question": "where is annual "
                                                                     "leave requested?"})
        seen["gap"] = await session.call_tool("ask", {"question": "zzqx plugh frobnicate"})
        path = seen["answer"].structured_content["citations"][0]["path"]
        seen["get"] = await session.call_tool("get", {"target": path})
        seen["missing"] = await session.call_tool("get", {"target": "nope"})
        seen["empty"] = await session.call_tool("search", {"query": "   "})
        seen["propose"] = await session.call_tool("propose", {
            "kind": "new", "content": NEW_ENTRY, "category": "facilities"})
        leaky = NEW_ENTRY.replace("Parking", "Garage").replace("ground floor.", "ground "
                                                               f"floor. Token: {TOKEN}")
        seen["secret"] = await session.call_tool("propose", {"kind": "new", "content": leaky})
        seen["redacted"] = await session.call_tool("propose", {"kind": "new", "content": leaky,
                                                               "redact": True})
        seen["lint"] = await session.call_tool("lint", {"select": ["W"]})
        seen["bad_lint"] = await session.call_tool("lint", {"select": ["nope"]})
        for name, arguments in [("approve", {"proposal": "x"}),
                                ("propose", {"kind": "new", "content": NEW_ENTRY,
                                             "approve": True})]:
            try:
                await session.call_tool(name, arguments)
            except MCPError as error:
                seen[f"refused {name}"] = error

    anyio.run(_session_calls, repo, tmp_path / "server.log", calls)

    tools = seen["tools"]
    assert sorted(tools) == ["ask", "get", "lint", "propose", "search"]
    schema = tools["search"].input_schema
    assert schema["required"] == ["query"] and schema["properties"]["limit"]["maximum"] == 100
    assert schema["properties"]["legs"]["anyOf"][0]["items"]["enum"] == ["alias", "bm25", "vector"]
    assert tools["propose"].input_schema["properties"]["kind"]["enum"] == [
        "new", "edit", "retract", "supersede"]
    assert tools["search"].annotations.read_only_hint is True
    assert all(t.description for t in tools.values())

    found = seen["search"].structured_content
    assert not seen["search"].is_error and not found["gap"]
    assert found["hits"][0]["path"] == "docs/tock.md"
    assert found["hits"][0]["legs"]["bm25"]["rank"] == 1
    assert found["hits"][0]["sources"][0]["uri"] == "git:docs/tock.md"
    filtered = seen["filtered"]  # a category naming nothing: an error naming it
    assert filtered.is_error and "no entries in category 'nowhere'" in filtered.content[0].text

    answer = seen["answer"].structured_content
    assert answer["gap"] is False
    assert answer["answer"] == ("Annual leave is requested in HR Links at least two weeks "
                                "ahead. [1]")
    assert answer["citations"][0]["sources"] == ["git:docs/leave.md"]
    gap = seen["gap"].structured_content
    assert gap["gap"] is True and gap["sentences"] == [] and not seen["gap"].is_error

    entry = seen["get"].structured_content
    assert entry["path"] == "docs/leave.md" and entry["status"] == "active"
    assert entry["sources"][0]["uri"] == "git:docs/leave.md"
    assert entry["sources"][0]["fingerprint"].startswith("sha256:")
    assert entry["open_proposals"] == [] and entry["changed_sources"] == []

    # errors: the CLI's one-line message, its kind and exit code
    assert seen["missing"].is_error
    assert seen["missing"].content[0].text == \
        "error: no entry with id or path 'nope' on branch 'wiki'"
    assert seen["missing"].structured_content["exit_code"] == 1
    assert seen["empty"].content[0].text == "error: the query is empty"
    assert seen["empty"].structured_content["exit_code"] == 2
    assert seen["bad_lint"].is_error and "unknown lint rule 'nope'" in \
        seen["bad_lint"].content[0].text

    # the proposal is a proposal: listed by the library, authored by the caller, not landed
    proposed = seen["propose"].structured_content
    assert proposed["created"] is True and proposed["paths"] == ["facilities/parking-permits.md"]
    assert proposed["author"] == str(ALICE) and "wiki approve" in proposed["next"]
    assert small_wiki.head() == head
    assert "facilities/parking-permits.md" not in small_wiki.snapshot().files
    (listed,) = [p for p in list_proposals(small_wiki) if p.name == proposed["proposal"]]
    assert listed.authors == [ALICE]

    # secrets: refused with the kind and place, or redacted on request; never in git
    assert seen["secret"].is_error and seen["secret"].structured_content["exit_code"] == 5
    assert "secret (github-token)" in seen["secret"].content[0].text
    assert TOKEN not in seen["secret"].content[0].text
    redacted = seen["redacted"].structured_content
    assert not seen["redacted"].is_error and redacted["created"] is True
    (garage,) = redacted["paths"]
    # both in one second: their names differ only after the time, so compare as sets
    assert sorted(p.name for p in list_proposals(small_wiki)) == sorted(
        [listed.name, redacted["proposal"]])
    refs = git(repo, "for-each-ref", "--format=%(refname)").split()
    grep = subprocess.run(["git", "-C", str(repo), "grep", "-F", TOKEN, *refs],
                          capture_output=True, text=True)
    assert grep.returncode == 1 and TOKEN not in git(repo, "log", "--all", "--format=%B")
    tip = get_proposal(small_wiki, redacted["proposal"]).tip
    assert "[REDACTED:github-token]" in git(repo, "show", f"{tip}:{garage}")

    report = seen["lint"].structured_content
    assert report["summary"]["errors"] == 0 and report["rules"]

    for name in ("approve", "propose"):
        error = seen[f"refused {name}"]
        assert "an agent can never approve" in error.message
        assert error.data["exit_code"] == 5
    assert len(list_proposals(small_wiki)) == 2  # the refused calls proposed nothing
    assert "Traceback" not in (tmp_path / "server.log").read_text()

    with acting_as(BOB):  # a person lands it
        approve(small_wiki, listed.name, approver=BOB)
    assert "facilities/parking-permits.md" in small_wiki.snapshot().files


def test_mcp_tools_in_process(small_wiki: Wiki, repo: Path) -> None:
    from wiki_cli.mcp_server import build_server

    server, tools = build_server(repo)

    async def calls():
        with pytest.raises(MCPError, match="can never reject"):
            await server.call_tool("reject", {"proposal": "x"})
        with pytest.raises(MCPError, match="propose cannot approve"):
            await server.call_tool("propose", {"kind": "approve", "target": "x"})
        retract = await server.call_tool("propose", {"kind": "retract",
                                                     "target": "docs/tock.md"})
        assert retract.is_error and "needs a reason" in retract.content[0].text
        listed = await server.list_tools()
        return sorted(t.name for t in listed)

    assert anyio.run(calls) == ["ask", "get", "lint", "propose", "search"]
    edited = tools.propose("edit", target="docs/tock.md",
                           content=small_wiki.snapshot().read("docs/tock.md").decode()
                           .replace("#670", "#671"))
    assert edited["created"] and edited["paths"] == ["docs/tock.md"]
    assert tools.get("docs/tock.md")["open_proposals"] == [edited["proposal"]]
    retracted = tools.propose("retract", target="docs/tock.md", reason="gone")
    assert retracted["proposal"].startswith("retract-")
    json.dumps(tools.search("tock", explain=False))  # plain JSON values
    budgeted = tools.ask("where is annual leave requested?", budget=40)
    assert budgeted["tokens"]["used"] <= 40 and budgeted["citations"]
    assert tools.search("tock", scope="docs")["hits"]
    with pytest.raises(NoMatchingEntriesError, match="scope 'elsewhere'"):
        tools.search("tock", scope="elsewhere")  # a scope naming nothing: not "no hits"
    routed = tools.search("tock", route=True)  # routing needs the vector leg, off here
    assert routed["route"] is None and routed["hits"]
    assert routed["skipped"]["route"].startswith("needs the vector leg")
    assert tools.ask("where is annual leave requested?", route=True)["citations"]
    assert budgeted["missing_type"] is None and not budgeted["gap"]


def test_mcp_command_needs_a_wiki(cli, repo: Path) -> None:
    result = cli("mcp")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: no wiki branch 'wiki' in {Wiki(repo).repo.common_dir}: run `wiki init`")
