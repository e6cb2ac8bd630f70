"""A thin CLI: each use case is one library call that the CLI and MCP both adapt; leg names
are one enum; usage errors go through the one error path (wiki_cli/errors.py)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from conftest import BOB, acting_as, git, ingest_and_land, write
from pydantic import TypeAdapter

from indexes.retrieval.legs import INDEX_LEGS, LEG_NAMES, Leg, parse_legs
from wiki.answering.ask import AskRequest
from wiki.config import parse_config
from wiki.entry_view import get_entry
from wiki.errors import ConfigError, NotFoundError
from wiki.questions import answer_question
from wiki.review.proposals import approve, list_proposals
from wiki.status import wiki_status
from wiki.store.workspace import Wiki
from wiki.upkeep import init_wiki, update_index
from wiki_cli.mcp_server import Legs, build_server

ROOT = Path(__file__).parent.parent
OLD = ("# Leave\n\nAnnual leave is requested in the HR portal at least two weeks ahead.\n"
       "Sick leave needs no notice at all.\n")
NEW = OLD.replace("HR portal at least two weeks", "Leave app at least three weeks")
QUESTION = "how is annual leave requested?"


def _build_leave(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "leave.md", OLD)
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "leave")
    ingest_and_land(wiki, repo / "docs")


@pytest.fixture
def leave(from_template) -> Wiki:
    return from_template(_build_leave)


# -- use cases: one library call each --------------------------------------------------


def test_answer_question_answers_and_tries_to_save_the_answer(leave: Wiki) -> None:
    answered = answer_question(leave, AskRequest(QUESTION, save=True))
    assert not answered.answer.gap
    assert "HR portal" in " ".join(text for text, _ in answered.answer.sentences)
    assert answered.update is None  # no cited source changed
    saved = answered.saved
    assert saved is not None and saved.mode == "answer"  # no model: saved as one entry
    # the answer quotes one entry only: that entry already says it, nothing is proposed
    assert saved.proposal is None and saved.existing == "docs/leave.md"
    assert list_proposals(leave) == []


def test_answer_question_on_a_gap_saves_nothing_and_records_the_gap(leave: Wiki) -> None:
    answered = answer_question(leave, AskRequest("what colour is the office cat?", save=True))
    assert answered.answer.gap and answered.saved is None
    assert list_proposals(leave) == []
    log = (leave.state_dir / "gaps.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(log[-1])["question"] == "what colour is the office cat?"


def test_answer_question_offers_the_update_and_opens_it_when_asked(leave: Wiki,
                                                                   repo: Path) -> None:
    write(repo / "docs" / "leave.md", NEW)
    git(repo, "commit", "-q", "-am", "edit leave")
    offered = answer_question(leave, AskRequest(QUESTION)).update
    assert offered is not None and offered.uris == ["git:docs/leave.md"]
    assert [p.resolve() for p in offered.paths] == [(repo / "docs" / "leave.md").resolve()]
    assert offered.proposed is None and list_proposals(leave) == []
    opened = answer_question(leave, AskRequest(QUESTION, propose=True)).update
    assert opened is not None and opened.proposed is not None
    proposal = opened.proposed.proposal
    assert proposal is not None and [p.name for p in list_proposals(leave)] == [proposal.name]
    assert answer_question(leave, AskRequest(QUESTION, offer=False)).update is None


def test_init_wiki_creates_the_branch_and_its_index(repo: Path) -> None:
    wiki = Wiki(repo)
    commit = init_wiki(wiki)
    assert wiki.head() == commit
    info = wiki_status(wiki)
    assert info.indexed_commit == commit and info.healthy


def test_update_index_syncs_then_rebuilds(leave: Wiki) -> None:
    done = update_index(leave)
    assert done.sync.commit == leave.head() and done.embedded == 0
    rebuilt = update_index(leave, rebuild=True)
    assert rebuilt.sync.commit == leave.head() and rebuilt.sync.added == 1
    assert rebuilt.sync.invalid == [] and isinstance(rebuilt.vectors, str)


def test_get_entry_reads_one_commit_and_what_a_reader_wants_next(leave: Wiki) -> None:
    entry = leave.snapshot().entries()[0][0]
    view = get_entry(leave, entry.id)
    assert view.entry.path == entry.path and view.commit == leave.head()
    assert view.raw is None and view.relations() == ([], [])
    assert view.changed_sources() == [] and view.open_proposals() == []
    by_path = get_entry(leave, entry.path.removesuffix(".md"), as_stored=True)
    assert by_path.entry.id == entry.id and by_path.raw == entry.to_bytes()
    index = get_entry(leave, "index.md", as_stored=True)
    assert index.entry is None and index.raw == leave.snapshot().read("index.md")
    assert index.relations() == ([], []) and index.open_proposals() == []
    with pytest.raises(NotFoundError):
        get_entry(leave, "index.md")  # not an entry unless asked for as stored
    with pytest.raises(NotFoundError):
        get_entry(leave, "no-such-entry", as_stored=True)


# -- the CLI and MCP adapt the same calls ----------------------------------------------


def test_cli_show_and_mcp_get_agree_on_the_entry(leave: Wiki, repo: Path, cli) -> None:
    entry = leave.snapshot().entries()[0][0]
    shown = json.loads(cli("show", entry.id, "--json").stdout)
    _, tools = build_server(repo)
    got = tools.get(entry.id)
    assert shown["id"] == got["id"] == entry.id and shown["commit"] == got["commit"]
    assert shown["body"] == got["body"] and got["open_proposals"] == []


def test_cli_and_mcp_ask_give_the_same_answer(leave: Wiki, repo: Path, cli) -> None:
    by_cli = json.loads(cli("ask", QUESTION, "--json").stdout)
    _, tools = build_server(repo)
    by_mcp = tools.ask(QUESTION)
    assert by_cli["sentences"] == by_mcp["sentences"]
    assert by_cli["citations"] == by_mcp["citations"] and "update" not in by_mcp


def test_every_proposing_command_says_the_same_line(leave: Wiki, repo: Path, cli) -> None:
    write(repo / "notes" / "vpn.md", "---\ntitle: VPN\n---\nThe VPN needs a token.\n")
    proposed = cli("propose", str(repo / "notes" / "vpn.md"))
    name = proposed.stdout.strip()
    line = (f"proposed {name}: review with `wiki diff {name}`, land with "
            f"`wiki approve {name}` (by someone else)")
    assert proposed.exit_code == 0 and line in proposed.stderr
    fact = cli("facts", "set", "leave.notice_weeks", "2", "--entry", "docs/leave.md")
    fact_name = fact.stdout.strip()
    assert fact.exit_code == 0, fact.output
    assert f"proposed {fact_name}: review with `wiki diff {fact_name}`, land with " \
           f"`wiki approve {fact_name}` (by someone else)" in fact.stderr
    with acting_as(BOB):
        approve(leave, name)
    again = cli("facts", "set", "leave.notice_weeks", "2", "--entry", "docs/leave.md")
    assert again.exit_code == 0
    assert f"already proposed as {fact_name}: review with `wiki diff {fact_name}`" \
        in again.stderr


# -- one enum of legs ------------------------------------------------------------------


def test_the_legs_are_one_enum() -> None:
    assert LEG_NAMES == ("alias", "bm25", "vector", "llm") == tuple(Leg)
    assert INDEX_LEGS == ("alias", "bm25", "vector") and Leg.BM25 == "bm25"
    assert parse_legs(" bm25, alias,bm25 ", "--legs") == ("bm25", "alias")
    with pytest.raises(ValueError, match=r"--legs takes alias,bm25,vector,llm; got 'x'"):
        parse_legs("x", "--legs")
    schema = TypeAdapter(Legs).json_schema()
    assert schema["anyOf"][0]["items"]["enum"] == list(INDEX_LEGS)


def test_wiki_toml_legs_are_checked_against_the_enum() -> None:
    with pytest.raises(ConfigError, match=r"\[search\] legs are alias, bm25, vector and llm"):
        parse_config('[search]\nlegs = ["alias", "grep"]\n')


def test_the_cli_legs_option_is_checked_against_the_enum(leave: Wiki, cli) -> None:
    bad = cli("search", "leave", "--legs", "alias,grep")
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "error: --legs takes alias,bm25,vector,llm; got 'alias,grep'"
    good = cli("search", "annual leave", "--legs", "bm25", "--json")
    assert good.exit_code == 0 and json.loads(good.stdout)["legs"] == ["bm25"]


# -- usage errors through the one error path -------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (("-q", "-v", "status"), "error: --quiet and --verbose cannot be used together"),
    (("facts", "a", "b"), "error: give KEY, or: set KEY VALUE"),
    (("lint", "--format", "xml"), "error: --format takes text, json, markdown; got 'xml'"),
    (("lint", "--json", "--format", "markdown"),
     "error: --json and --format markdown disagree; give one of them"),
    (("propose",), "error: give a FILE (or --edit ID to use $EDITOR, or --retract ID)"),
    (("propose", "--edit", "a", "--retract", "b"),
     "error: use one of --edit, --retract, --supersede"),
    (("propose", "no-such-file.md"), "error: no-such-file.md: No such file or directory"),
])
def test_usage_errors_are_one_line_and_exit_2(wiki: Wiki, cli, args, message) -> None:
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == message


def test_wiki_cli_makes_no_usage_error_by_hand() -> None:
    """Only wiki_cli/errors.py turns an error into a message and exit code 2."""
    for path in sorted((ROOT / "wiki_cli").glob("*.py")):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                args = [ast.unparse(a) for a in node.args]
                assert name not in ("typer.BadParameter", "click.UsageError"), \
                    f"{path.name}:{node.lineno} raises {name}"
                assert not (name == "typer.Exit" and args and args[0] in ("USAGE", "2")), \
                    f"{path.name}:{node.lineno} exits 2 by hand"
                assert not (name == "report" and args and
                            args[0].lstrip("f").strip("'\"").startswith("error:")), \
                    f"{path.name}:{node.lineno} reports an error by hand"
