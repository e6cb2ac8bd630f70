"""The answer-type check: a question that asks for a percentage or an amount of money is
an evidence gap when no cited entry states one, however well its words match."""

from __future__ import annotations

import json

import pytest
from conftest import entry_text

from indexes.answer_type import expected_type, missing_type, states_type
from tests.memory_helpers import land
from wiki.ask import ask
from wiki.workspace import Wiki


@pytest.mark.parametrize(("question", "kind"), [
    ("what percentage does GSA match on TSP contributions?", "percent"),
    ("What percent of my pay goes to FERS?", "percent"),
    ("which proportion of requests is approved", "percent"),
    ("does GSA have a student loan repayment program, and how much can it pay?", "money"),
    ("How much does the conference registration cost?", "money"),
    ("how many dollars can I spend on a laptop", "money"),
    ("how much annual leave can I carry over?", None),  # no money word: not judged
    ("how long can a Schedule A(r) appointment last?", None),  # durations: not judged
    ("how many people are on the team?", None),
    ("what year did we launch?", None),
    ("¿qué porcentaje aporta GSA?", None),  # English patterns only
])
def test_expected_type_of_questions(question: str, kind: str | None) -> None:
    assert expected_type(question) == kind


@pytest.mark.parametrize(("text", "kind", "states"), [
    ("GSA matches up to 5% of basic pay.", "percent", True),
    ("The agency adds 4 percent.", "percent", True),
    ("A percentage of each paycheck is withheld.", "percent", False),
    ("Registration is $1,200 per person.", "money", True),
    ("It pays 10,000 dollars a year.", "money", True),
    ("It pays up to 5% of your salary.", "money", True),  # a share of pay is an amount
    ("PSLF forgives federal student loans after 120 payments.", "money", False),
])
def test_states_type_of_evidence(text: str, kind: str, states: bool) -> None:
    assert states_type(text, kind) is states


def test_missing_type_needs_one_stating_text_among_many() -> None:
    question = "what percentage does GSA match?"
    assert missing_type(question, ["TSP is a retirement plan.", "Change it in HR Links."]) \
        == "percent"
    assert missing_type(question, ["TSP is a retirement plan.", "GSA matches 5%."]) is None
    assert missing_type("how do I order business cards?", []) is None


TSP = entry_text("e-tsp", "TSP contributions", "GSA offers the Thrift Savings Plan (TSP). "
                 "Change your TSP contributions in HR Links; GSA may match contributions "
                 "for FERS employees.", summary="Changing TSP contributions.")
MATCH = entry_text("e-match", "TSP agency match", "The match percentage: GSA contributes "
                   "an automatic 1% and "
                   "matches TSP contributions up to 5% of basic pay.",
                   summary="The agency's TSP match.")
QUESTION = "what percentage does GSA match on TSP contributions?"


def test_ask_is_a_gap_when_no_cited_entry_states_the_type(wiki: Wiki) -> None:
    land(wiki, {"benefits/tsp.md": TSP})
    answer = ask(wiki, QUESTION, synthesize=False, revalidate=False)
    assert answer.confidence >= 0.4  # the words match: the retrieval rule alone answers
    assert answer.gap and answer.missing_type == "percent"
    assert answer.sentences == [] and answer.citations == []
    assert "asks for a percentage" in answer.note and "TSP contributions" in answer.note
    recorded = [json.loads(line) for line in
                (wiki.state_dir / "gaps.jsonl").read_text().splitlines()]
    assert recorded[-1]["question"] == QUESTION
    assert recorded[-1]["missing_type"] == "percent"

    land(wiki, {"benefits/tsp-match.md": MATCH}, subject="the match")
    answer = ask(wiki, QUESTION, synthesize=False, revalidate=False)
    assert not answer.gap and answer.missing_type is None
    assert any("5%" in text for text, _ in answer.sentences)


def test_cli_ask_exits_3_with_the_reason(wiki: Wiki, cli) -> None:
    land(wiki, {"benefits/tsp.md": TSP})
    result = cli("ask", QUESTION)
    assert result.exit_code == 3, result.output
    assert "does not say" in result.output
    assert "asks for a percentage" in result.output
    payload = json.loads(cli("ask", QUESTION, "--json").output)
    assert payload["gap"] is True and payload["missing_type"] == "percent"
    # a question without an expected type over the same entry is answered
    assert cli("ask", "how do I change my TSP contributions?").exit_code == 0
