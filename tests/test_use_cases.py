"""One use-case function per command (issue 26, item 1): the CLI and the MCP tools only
parse, call the same function with the same request and render, so the same request
gives the same result through either, including the filters (``include_expired``, which
the MCP ``search`` tool used to drop) and the errors of a bad ``propose``.

A real git repository, the real SQLite index, typer's CliRunner and the MCP tool bodies
run as a tool call runs (:func:`wiki_cli.tool_calls.run_tool`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.memory_helpers import entry, land
from wiki.answering.ask import AskRequest
from wiki.answering.search import SearchRequest, search
from wiki.errors import UsageError
from wiki.knowledge.authoring import ProposeRequest, propose_change
from wiki.questions import answer_question
from wiki.store.workspace import Wiki
from wiki_cli.errors import USAGE, exit_code_for
from wiki_cli.mcp_server import WikiTools
from wiki_cli.tool_calls import ToolFailure, run_tool

ENTRIES = {
    "offers/lapsed.md": entry("e-lapsed", "Kiwi offer", "The kiwi offer is open to staff.",
                              valid_until="2020-01-01"),
    "adr/kiwi.md": entry("e-dec", "Kiwi decision", "We chose kiwi for builds.",
                         type="decision"),
    "ops/tock.md": entry("e-tock", "Tock line", "Tock line 670 is for time out of office."),
}
NEW = "---\ntitle: Parking permits\n---\nParking permits are issued by the front desk.\n"


@pytest.fixture
def kiwi(wiki: Wiki) -> Wiki:
    land(wiki, ENTRIES)
    return wiki


def _tool(repo: Path, name: str, **arguments):
    """One MCP tool call as the server runs it: the result, or the :class:`ToolFailure`."""
    tools = WikiTools(repo, None)
    try:
        return run_tool(tools, getattr(tools, name), arguments)
    except ToolFailure as failed:
        return failed


@pytest.mark.parametrize("include_expired", [False, True])
def test_search_gives_the_same_hits_through_the_cli_and_mcp(kiwi: Wiki, repo: Path, cli,
                                                            include_expired: bool) -> None:
    flags = ["--include-expired"] * include_expired
    by_cli = cli("search", "kiwi", "--json", *flags)
    by_mcp = _tool(repo, "search", query="kiwi", include_expired=include_expired)
    assert not isinstance(by_mcp, ToolFailure), by_mcp
    by_library = search(kiwi, SearchRequest.with_filters("kiwi",
                                                         include_expired=include_expired))
    cli_hits = [h["id"] for h in json.loads(by_cli.stdout)["hits"]]
    assert cli_hits == [h["id"] for h in by_mcp["hits"]] == \
        [h.doc_id for h in by_library.hits]
    assert ("e-lapsed" in cli_hits) is include_expired  # the filter reached both


def test_ask_gives_the_same_answer_through_the_cli_and_mcp(kiwi: Wiki, repo: Path,
                                                           cli) -> None:
    question = "is the kiwi offer open?"
    by_cli = json.loads(cli("ask", question, "--json", "--include-expired").stdout)
    by_mcp = _tool(repo, "ask", question=question, include_expired=True)
    assert not isinstance(by_mcp, ToolFailure), by_mcp
    by_library = answer_question(kiwi, AskRequest(question, include_expired=True)).answer
    assert by_cli["sentences"] == by_mcp["sentences"]
    cited = [c["entry_id"] for c in by_cli["citations"]]
    assert cited == [c["entry_id"] for c in by_mcp["citations"]] == \
        [c.entry_id for c in by_library.citations]
    assert "e-lapsed" in cited
    hidden = _tool(repo, "ask", question=question)  # expired: out of the default answer
    assert "e-lapsed" not in [c["entry_id"] for c in hidden["citations"]]


def test_the_ask_request_builds_its_search_once() -> None:
    request = AskRequest("kiwi?", category="adr", include_expired=True, legs=("bm25",))
    assert request.search == SearchRequest.with_filters(
        "kiwi?", limit=10, sentences=True, legs=("bm25",), category="adr",
        include_expired=True, embed_model=request.embed_model)
    assert request.search.filters.valid_at is None


def _cli_propose(cli, tmp_path: Path, kind: str, target: str | None, text: str | None,
                 reason: str = ""):
    args = ["propose", "--json"]
    if text is not None:
        path = tmp_path / f"{kind}.md"
        path.write_text(text)
        args.append(str(path))
    if kind != "new":
        args += [f"--{kind}", target]
    if reason:
        args += ["--reason", reason]
    return cli(*args)


@pytest.mark.parametrize("kind", ["new", "edit", "retract", "supersede"])
def test_propose_makes_the_same_change_through_the_cli_and_mcp(kiwi: Wiki, repo: Path, cli,
                                                               tmp_path: Path,
                                                               kind: str) -> None:
    tock = kiwi.snapshot().read("ops/tock.md").decode()
    text = {"new": NEW, "edit": tock.replace("670", "671"), "retract": None,
            "supersede": NEW.replace("---\ntitle", "---\nid: e-tock2\ntitle")}[kind]
    target = None if kind == "new" else "ops/tock.md"
    reason = "gone" if kind == "retract" else ""
    by_cli = _cli_propose(cli, tmp_path, kind, target, text, reason)
    assert by_cli.exit_code == 0, by_cli.output
    made = json.loads(by_cli.stdout)["proposal"]
    by_mcp = _tool(repo, "propose", kind=kind, content=text, target=target, reason=reason)
    assert not isinstance(by_mcp, ToolFailure), by_mcp
    assert by_mcp["proposal"].split("-")[0] == made["name"].split("-")[0] == kind
    assert by_mcp["paths"] == made["paths"]


@pytest.mark.parametrize(("kind", "fields", "message"), [
    ("retract", {"target": "ops/tock.md"}, "a retraction needs a reason (--reason TEXT)"),
    ("edit", {"target": "ops/tock.md", "content": ""},
     "an edit needs the entry's text (a FILE, or content)"),
    ("supersede", {"target": "ops/tock.md", "content": "  \n"},
     "a supersession needs the entry's text (a FILE, or content)"),
    ("new", {"content": "\n"}, "a new entry needs the entry's text (a FILE, or content)"),
])
def test_a_bad_proposal_is_the_same_error_through_the_cli_and_mcp(
        kiwi: Wiki, repo: Path, cli, tmp_path: Path, kind: str, fields: dict,
        message: str) -> None:
    by_cli = _cli_propose(cli, tmp_path, kind, fields.get("target"), fields.get("content"))
    assert by_cli.exit_code == USAGE
    assert by_cli.stderr.strip() == f"error: {message}"
    by_mcp = _tool(repo, "propose", kind=kind, **fields)
    assert isinstance(by_mcp, ToolFailure) and not by_mcp.internal
    assert type(by_mcp.error) is UsageError and str(by_mcp.error) == message
    assert exit_code_for(by_mcp.error) == USAGE
    request = ProposeRequest(kind, target=fields.get("target"),
                             content=(fields.get("content") or "").encode())
    with pytest.raises(UsageError, match=f"^{message[:12]}"):
        propose_change(kiwi, request)
