"""Answers say how sure they are (issue 28, item 5): an answer, the closest evidence that
may not answer (a hedge, with its reason), or an evidence gap; in the library, the
terminal, ``--json``, the MCP tool and the HTTP route.

A small hand-written wiki in a real repository, the deterministic hashing embedder
(``vectors_on``) and thresholds set in the wiki's own ``wiki.toml`` (``[search] gap_score``
and ``hedge_score``), so each question's outcome does not depend on the shipped defaults."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from conftest import ALICE, BOB, ingest_and_land, write
from serve_helpers import READ_TOKEN, running, write_config

from wiki.answering.ask import ask_for
from wiki.answering.sentence_scoring import PickerConfig
from wiki.config import SearchConfig, parse_config
from wiki.config_template import TEMPLATE as CONFIG_TEMPLATE
from wiki.errors import ConfigError
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki

ANSWERED = "how is annual leave requested?"
"""Answer score 1.10 with the hashing embedder: sure."""
HEDGED = "can I take leave to vote in an election?"
"""Answer score 0.51: above this wiki's gap_score 0.45, below its hedge_score 0.9."""
GAP = "who approves sick leave for contractors?"
"""Answer score 0.33: below gap_score."""
HEDGE_LINE = re.compile(r"^closest evidence, may not answer: the best sentence scores "
                        r"0\.50 as an answer, below the 0\.9 a sure answer needs$")


def _thresholds(wiki: Wiki, gap_score: float, hedge_score: float) -> None:
    """Land a wiki.toml with these ``[search]`` thresholds (Alice proposes, Bob approves)."""
    toml = wiki.snapshot().read("wiki.toml").decode()
    toml = re.sub(r"(?m)^gap_score = .*$", f"gap_score = {gap_score}", toml)
    toml = re.sub(r"(?m)^hedge_score = .*$", f"hedge_score = {hedge_score}", toml)
    proposal = propose(wiki, {"wiki.toml": toml.encode()}, base=None, kind="config",
                          subject="answer thresholds", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


def _build_leave_wiki(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead. "
          "Unused annual leave above 240 hours is forfeited at the end of the leave year.\n")
    write(repo / "docs" / "parking.md", "---\ntitle: Parking permits\n---\n"
          "Parking permits are issued by the front desk on the ground floor. "
          "The garage closes at nine in the evening.\n")
    ingest_and_land(wiki, repo / "docs")
    _thresholds(wiki, 0.45, 0.9)


@pytest.fixture
def leave_wiki(from_template, vectors_on) -> Wiki:
    """Two pages (annual leave, parking) with gap_score 0.45 and hedge_score 0.9."""
    return from_template(_build_leave_wiki)


def test_three_outcomes_in_the_library(leave_wiki: Wiki) -> None:
    answered, hedged, gap = (ask_for(leave_wiki, q, revalidate=False)
                             for q in (ANSWERED, HEDGED, GAP))
    assert (answered.confidence, answered.hedge) == ("answered", None)
    assert answered.sentences[0][0].startswith("Annual leave is requested in HR Links")
    assert hedged.confidence == "hedged" and hedged.sentences and not hedged.gap
    assert 0.45 <= hedged.answer_score < 0.9
    assert hedged.hedge == ("the best sentence scores 0.50 as an answer, below the 0.9 a "
                            "sure answer needs")
    assert (gap.confidence, gap.hedge, gap.gap_reason.code) == ("gap", None, "no_answer")


def test_the_thresholds_come_from_wiki_toml(leave_wiki: Wiki) -> None:
    """The same question is a gap under the shipped gap_score (0.52) and a hedge under this
    wiki's 0.45; with hedge_score at the gap_score nothing is hedged."""
    assert ask_for(leave_wiki, HEDGED, revalidate=False,
               picker=PickerConfig()).confidence == "gap"
    _thresholds(leave_wiki, 0.45, 0.45)
    assert ask_for(leave_wiki, HEDGED, revalidate=False).confidence == "answered"


def test_the_terminal_opens_a_hedged_answer_with_its_reason(leave_wiki: Wiki, cli) -> None:
    hedged = cli("ask", HEDGED, "--no-revalidate")
    assert hedged.exit_code == 0, hedged.output  # a hedge is an answer: exit 0
    first, second = hedged.stdout.splitlines()[:2]
    assert HEDGE_LINE.match(first), first
    assert second.endswith("[1]")
    answered = cli("ask", ANSWERED, "--no-revalidate")
    assert answered.exit_code == 0
    assert answered.stdout.startswith("Annual leave is requested in HR Links")
    assert "may not answer" not in answered.output
    gap = cli("ask", GAP, "--no-revalidate")
    assert gap.exit_code == 3 and gap.stdout.startswith("The wiki does not say")
    assert "may not answer" not in gap.output


def test_json_carries_confidence_and_the_hedge(leave_wiki: Wiki, cli) -> None:
    found = {}
    for question in (ANSWERED, HEDGED, GAP):
        result = cli("ask", question, "--no-revalidate", "--json")
        assert result.exit_code == (3 if question == GAP else 0), result.output
        found[question] = json.loads(result.stdout)
    assert [found[q]["confidence"] for q in (ANSWERED, HEDGED, GAP)] == [
        "answered", "hedged", "gap"]
    assert found[HEDGED]["hedge"].startswith("the best sentence scores 0.50")
    assert found[ANSWERED]["hedge"] is None and found[GAP]["hedge"] is None
    assert found[GAP]["gap"] is True and found[HEDGED]["gap"] is False
    assert isinstance(found[HEDGED]["coverage"], float)  # the word coverage, renamed


def test_the_mcp_tool_carries_confidence(leave_wiki: Wiki, repo: Path) -> None:
    from wiki_cli.mcp_server import build_server

    _server, tools = build_server(repo)
    hedged, answered = tools.ask(HEDGED), tools.ask(ANSWERED)
    assert hedged["confidence"] == "hedged"
    assert hedged["answer"].startswith("Closest evidence, may not answer (the best "
                                       "sentence scores 0.50")
    assert answered["confidence"] == "answered"
    assert not answered["answer"].startswith("Closest evidence")
    assert tools.ask(GAP)["confidence"] == "gap"


def test_the_http_route_carries_confidence(leave_wiki: Wiki, repo: Path,
                                           tmp_path: Path) -> None:
    config = write_config(tmp_path / "serve.toml", {"handbook": repo})
    with running(config) as base, httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {READ_TOKEN}"},
            timeout=60) as client:
        hedged = client.post("/v1/repos/handbook/ask", json={"question": HEDGED})
        gap = client.post("/v1/repos/handbook/ask", json={"question": GAP})
    assert hedged.status_code == 200, hedged.text
    assert hedged.json()["confidence"] == "hedged"
    assert hedged.json()["hedge"].startswith("the best sentence scores 0.50")
    assert gap.json()["confidence"] == "gap"


def test_without_vectors_nothing_is_hedged(wiki: Wiki, repo: Path) -> None:
    """The answer score needs the sentence vectors: lexical answers are never hedged."""
    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    ingest_and_land(wiki, repo / "docs")
    _thresholds(wiki, 0.45, 1.5)
    answer = ask_for(wiki, ANSWERED, revalidate=False)
    assert answer.confidence == "answered" and answer.hedge is None


def test_the_settings_agree_with_the_picker_and_are_checked() -> None:
    """wiki.toml's defaults (the template and ``SearchConfig``) are the picker's."""
    shipped = parse_config(CONFIG_TEMPLATE).search
    assert (shipped.gap_score, shipped.hedge_score) == (
        SearchConfig().gap_score, SearchConfig().hedge_score) == (
        PickerConfig().gap_score, PickerConfig().hedge_score)
    assert PickerConfig().gap_score < PickerConfig().hedge_score
    bad = CONFIG_TEMPLATE.replace(f"hedge_score = {shipped.hedge_score}", "hedge_score = 2")
    with pytest.raises(ConfigError, match=r"\[search\] hedge_score must be from 0 to 1.5"):
        parse_config(bad)
