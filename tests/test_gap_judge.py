"""The model's yes/no gap judge of ``wiki ask`` (wiki.answering.gap_judge): its no turns a
would-be answer into a ``judge_no`` gap with P(yes) in the reason, its yes leaves the
answer; a failing model leaves the picker's rule with a note, never exit 70; off by
default. Through the real litellm path with the deterministic fake provider (P(yes) grows
with the share of the question's words in the evidence shown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import entry_text
from fake_llm import install

from tests.memory_helpers import land
from wiki.answering import gap_judge
from wiki.answering.ask import ask_for
from wiki.answering.picker import GapReason, Picked
from wiki.config import parse_config
from wiki.errors import ConfigError
from wiki.llm.client import LLMClient
from wiki.store.workspace import Wiki

ENTRIES = {
    "travel/per-diem.md": entry_text(
        "pd", "Per diem", "Per diem covers meals and incidental expenses on travel days. "
        "The first and last travel day pay 75 percent of the daily rate.",
        summary="Daily meal money."),
    "hr/leave.md": entry_text("lv", "Annual leave", "Employees earn annual leave every pay "
                              "period.", summary="Vacation days."),
    "office/parking.md": entry_text(
        "pk", "Parking", "Parking permits for the garage are issued by the facilities "
        "office each spring.", summary="Visitor badges, lots and downtown garage hours on weekends."),
}
ANSWERED = "how much per diem is paid on the first travel day?"
NOT_ANSWERED = "which downtown garage hours apply to visitor badges and lots on weekends?"


def _build_populated(wiki: Wiki, repo: Path) -> None:
    land(wiki, ENTRIES)


@pytest.fixture
def populated(from_template) -> Wiki:
    return from_template(_build_populated)


def test_evidence_shows_titles_and_the_first_sentences() -> None:
    shown = [("Per diem", "The first day pays 75 percent."), ("Leave", "Leave  accrues.\n"),
             ("X", "not shown")]
    assert gap_judge.evidence(shown, 2) == ("Per diem: The first day pays 75 percent.\n"
                                            "Leave: Leave accrues.")
    assert gap_judge.evidence(shown, 0) == "Per diem: The first day pays 75 percent."


def test_off_by_default_the_model_is_not_asked(populated: Wiki, monkeypatch) -> None:
    fake = install(monkeypatch)
    answer = ask_for(populated, NOT_ANSWERED, synthesize=False)
    assert fake.calls == 0
    assert answer.judge is None and not answer.gap


def test_the_judges_yes_keeps_the_answer(populated: Wiki, monkeypatch) -> None:
    fake = install(monkeypatch)
    monkeypatch.setenv("WIKI_GAP_JUDGE", "on")
    answer = ask_for(populated, ANSWERED, synthesize=False)
    assert fake.calls == 1
    assert not answer.gap and answer.gap_reason is None
    assert answer.judge["p_yes"] >= 0.18 and answer.judge["below"] == 0.18
    assert answer.judge["note"] == ""
    prompt = fake.prompts[-1]
    assert f"Question: {ANSWERED}" in prompt
    shown = prompt.split("<evidence>\n")[1].split("\n</evidence>")[0]
    assert shown == f"Per diem: {answer.sentences[0][0]}"  # the opening, with its title
    assert gap_judge.PROMPTS[gap_judge.PROMPT] in prompt


def test_the_judges_no_turns_the_answer_into_a_gap_with_the_reason(
        populated: Wiki, monkeypatch) -> None:
    install(monkeypatch)
    extractive = ask_for(populated, NOT_ANSWERED, synthesize=False)
    assert not extractive.gap  # the picker alone would answer
    monkeypatch.setenv("WIKI_GAP_JUDGE", "on")
    answer = ask_for(populated, NOT_ANSWERED, synthesize=False)
    assert answer.gap and answer.sentences == [] and answer.citations == []
    assert answer.gap_reason.code == "judge_no"
    p_yes = answer.judge["p_yes"]
    assert p_yes < 0.18
    assert f"P(yes) {p_yes:.2f} < 0.18" in answer.gap_reason.sentence
    records = (populated.state_dir / "gaps.jsonl").read_text().splitlines()
    assert json.loads(records[-1])["gap_reason"] == "judge_no"


def test_the_threshold_comes_from_wiki_toml(populated: Wiki, monkeypatch) -> None:
    install(monkeypatch)
    land(populated, {"wiki.toml": "[llm]\ngap_judge = \"on\"\ngap_judge_below = 0.01\n"},
         override="the judge on (R009)")
    answer = ask_for(populated, NOT_ANSWERED, synthesize=False)
    assert answer.judge["below"] == 0.01 and not answer.gap


def test_the_environment_turns_a_team_default_off(populated: Wiki, monkeypatch) -> None:
    fake = install(monkeypatch)
    land(populated, {"wiki.toml": "[llm]\ngap_judge = \"on\"\n"}, override="the judge on (R009)")
    monkeypatch.setenv("WIKI_GAP_JUDGE", "off")
    assert not ask_for(populated, NOT_ANSWERED, synthesize=False).gap
    assert fake.calls == 0


@pytest.mark.parametrize("failure", ["timeout", "error"])
def test_a_failing_judge_leaves_the_pickers_rule_with_a_note(
        populated: Wiki, monkeypatch, cli, failure: str) -> None:
    fake = install(monkeypatch)
    fake.fail = failure
    monkeypatch.setenv("WIKI_GAP_JUDGE", "on")
    result = cli("ask", NOT_ANSWERED, "--extractive", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["gap"] is False and payload["judge"]["p_yes"] is None
    assert "the gap judge did not answer" in payload["judge"]["note"]
    assert "the picker's rule stands" in payload["note"]
    plain = cli("ask", NOT_ANSWERED, "--extractive")
    assert plain.exit_code == 0
    assert "note: the gap judge did not answer" in plain.output


def test_json_of_a_judge_gap_has_the_code_and_p_yes(populated: Wiki, monkeypatch,
                                                    cli) -> None:
    install(monkeypatch)
    monkeypatch.setenv("WIKI_GAP_JUDGE", "on")
    result = cli("ask", NOT_ANSWERED, "--json")
    assert result.exit_code == 3, result.output
    payload = json.loads(result.stdout)
    assert payload["gap"] is True and payload["gap_reason"]["code"] == "judge_no"
    assert 0 <= payload["judge"]["p_yes"] < 0.18


def test_on_without_a_model_answers_as_before(populated: Wiki, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_GAP_JUDGE", "on")
    answer = ask_for(populated, NOT_ANSWERED, synthesize=False)
    assert not answer.gap and answer.judge is None


def test_a_bad_setting_is_a_usage_error(populated: Wiki, monkeypatch, cli) -> None:
    monkeypatch.setenv("WIKI_GAP_JUDGE", "maybe")
    result = cli("ask", ANSWERED)
    assert result.exit_code == 2
    assert "WIKI_GAP_JUDGE must be one of off, on, got 'maybe'" in result.output
    with pytest.raises(ConfigError, match="gap_judge is off or on"):
        parse_config('[llm]\ngap_judge = "local"\n')
    with pytest.raises(ConfigError, match="gap_judge_below must be from 0 to 1"):
        parse_config("[llm]\ngap_judge_below = 1.5\n")


@pytest.mark.parametrize(("question", "gap", "code"), [
    ("how much per diem on the first travel day?", None, None),  # yes: stays an answer
    ("how much per diem on the first travel day?", "no_answer", "no_answer"),  # either rule
    ("which garage badges apply on weekends downtown?", None, "judge_no"),
    ("which garage badges apply on weekends downtown?", "no_answer", "judge_no"),
    ("which garage badges apply on weekends downtown?", "missing_form", "missing_form"),
])
def test_the_judgement_and_the_pickers_rule_combine_as_either(
        monkeypatch, question: str, gap: str | None, code: str | None) -> None:
    install(monkeypatch)
    picked = Picked([("The first travel day pays 75 percent of per diem.", 0)], 0.4,
                    gap=GapReason(gap, "the picker's reason") if gap else None)
    judged = gap_judge.GapJudge(LLMClient("fake/judge"), 0.18).review(
        question, picked, ["Per diem"])
    assert (picked.gap.code if picked.gap else None) == code
    assert (judged["p_yes"] >= 0.18) == (code in (None, "no_answer"))
