"""The answer-type check: a question that asks for a percentage or an amount of money is
an evidence gap when no cited entry states one, however well its words match."""

from __future__ import annotations

import json

import pytest
from conftest import entry_text

from tests.memory_helpers import land
from wiki.answering.answer_type import expected_type, missing_type, states_type
from wiki.answering.ask import ask_for
from wiki.store.workspace import Wiki


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
    # "how much" + a noun asks for an amount of that noun, whatever verb follows
    ("how much time should I spend on onboarding?", None),
    ("how much paid parental leave do I get?", None),
    ("How much time does it take to get paid after filing a voucher?", None),
    ("how much notice must I give before I get paid?", None),
    ("how much effort is the bonus worth?", None),
    ("how much travel allowance do I get?", "money"),
    ("how much per diem is paid on the first travel day?", "money"),
    ("how much of my salary goes to TSP?", "money"),
    ("how much is the travel allowance?", "money"),
    # "share" as a noun of a proportion only: "share drive", "which share" are folders
    ("what share drive should I use?", None),
    ("which share do I mount for design files?", None),
    ("what share of the cost does GSA pay?", "percent"),
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
    ("Mileage is reimbursed at 65.5 cents per mile.", "money", True),
    ("The fee is USD 50.", "money", True),
    ("Registration costs 50 EUR or 300 €.", "money", True),
    ("The grant is 1.2 million dollars.", "money", True),
    ("It costs five dollars.", "money", True),
    ("Registration is free of charge.", "money", True),
    ("Ten percent is withheld.", "percent", True),
    ("One third of the budget goes to travel.", "percent", True),
    ("3 in 10 requests are approved.", "percent", True),
    ("The free plan has 2 GB of storage.", "money", False),
    ("Feel free to ask; the percentage varies.", "percent", False),
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
    answer = ask_for(wiki, QUESTION, synthesize=False, revalidate=False)
    assert answer.coverage >= 0.4  # the words match: the retrieval rule alone answers
    assert answer.gap and answer.missing_type == "percent"
    assert answer.sentences == [] and answer.citations == []
    assert "asks for a percentage" in answer.note and "TSP contributions" in answer.note
    recorded = [json.loads(line) for line in
                (wiki.state_dir / "gaps.jsonl").read_text().splitlines()]
    assert recorded[-1]["question"] == QUESTION
    assert recorded[-1]["missing_type"] == "percent"

    land(wiki, {"benefits/tsp-match.md": MATCH}, subject="the match")
    answer = ask_for(wiki, QUESTION, synthesize=False, revalidate=False)
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


LEAVE = entry_text("e-leave", "Paid parental leave", "Employees get 12 weeks of paid "
                   "parental leave after the birth or adoption of a child.",
                   summary="Paid parental leave for employees.")
MILEAGE = entry_text("e-mile", "Mileage", "Driving your own car is reimbursed at 65.5 cents "
                     "per mile.", summary="Mileage reimbursement.")


def test_ordinary_how_much_questions_are_answered_not_gaps(wiki: Wiki, cli) -> None:
    """"how much paid leave" asks for an amount of leave, and "cents" is an amount of
    money: neither is a false gap."""
    land(wiki, {"hr/parental-leave.md": LEAVE, "travel/mileage.md": MILEAGE})
    leave = cli("ask", "how much paid parental leave do employees get?", "--json")
    assert leave.exit_code == 0, leave.output
    assert json.loads(leave.stdout)["missing_type"] is None
    assert "12 weeks" in leave.stdout
    mileage = cli("ask", "how much is driving your own car reimbursed per mile?")
    assert mileage.exit_code == 0, mileage.output
    assert "65.5 cents" in mileage.stdout
