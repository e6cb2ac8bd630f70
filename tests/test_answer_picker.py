"""The answer picker (:mod:`wiki.answering.picker`, :mod:`wiki.answering.sentence_scoring`): the
sentence that answers opens the answer, and a gap says why.

Small real wikis (a git repository, the real index, the real MiniLM model; an answer
embeds the sentences it reads and keeps them), one question of each form the issue names: a
how-to with steps, a yes/no policy, an amount, a who; then gaps with their reason, in
the library and in ``wiki ask --json``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ALICE, BOB, entry_text

from indexes.embedding import embedders
from indexes.sqlite.vectors import text_hash
from wiki.answering.ask import ask_for
from wiki.answering.picker import DEFAULT, pick_answer
from wiki.answering.sentence_scoring import (
    PickerConfig,
    is_fragment,
    pick,
    question_form,
    score_sentences,
    states_form,
)
from wiki.review.proposals import approve, propose
from wiki.store.derived import embedded, open_synced
from wiki.store.workspace import Wiki

LEAVE = ("Donating annual leave",
         "Leave donation helps a coworker through a medical emergency. The Voluntary Leave "
         "Transfer Program is run by the agency.\n\nTo donate your leave:\n\n"
         "1. Go to the VLTP site and log in with your PIV card.\n"
         "2. Choose the coworker who receives the hours.\n"
         "3. Submit the number of hours you give.\n\n"
         "Donated leave cannot be returned once it is used.")
SLACK = ("Slack message rules",
         "Slack is where the team chats every day. Messages in public channels are kept "
         "as federal records. Users are prohibited from deleting messages. Threads keep "
         "a channel readable.")
CREDIT = ("Credit hours",
          "Credit hours are hours you choose to work beyond your schedule. They are "
          "requested in the time keeping system before you work them. You can have up to "
          "24 credit hours accrued at any given time.")
HARASSMENT = ("Reporting harassment",
              "Harassment of any kind is not tolerated here. Everyone deserves a safe "
              "workplace free of harassment. Report harassment to the Office of Civil "
              "Rights or to your supervisor.")
PAGES = {"leave/donating.md": ("donate", *LEAVE), "tools/slack.md": ("slack", *SLACK),
         "time/credit-hours.md": ("credit", *CREDIT),
         "people/harassment.md": ("harass", *HARASSMENT)}


@pytest.fixture
def handbook(from_template, monkeypatch) -> Wiki:
    """Four entries, landed with the real model configured (their chunks embedded by the
    first read: four is a top-up)."""
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    return from_template(_seed_pages)


def _seed_pages(wiki: Wiki, repo) -> None:
    files = {path: entry_text(eid, title, body).encode()
             for path, (eid, title, body) in PAGES.items()}
    proposal = propose(wiki, files, base=None, kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


@pytest.mark.parametrize(("question", "first"), [
    ("how do I donate some of my annual leave to a coworker?",
     "Go to the VLTP site and log in with your PIV card."),
    ("am I allowed to delete a slack message I regret?",
     "Users are prohibited from deleting messages."),
    ("what's the cap on credit hours I can have saved up?",
     "You can have up to 24 credit hours accrued at any given time."),
    ("who do I report harassment to?",
     "Report harassment to the Office of Civil Rights or to your supervisor."),
])
def test_the_answer_opens_with_the_sentence_that_answers(handbook: Wiki, question: str,
                                                         first: str) -> None:
    answer = ask_for(handbook, question, revalidate=False)
    assert not answer.gap
    assert answer.sentences[0] == (first, 1)
    assert answer.gap_reason is None
    assert answer.answer_score is not None and answer.answer_score >= DEFAULT.gap_score


def test_a_how_to_answer_gives_the_steps_in_order(handbook: Wiki) -> None:
    answer = ask_for(handbook, "how do I donate some of my annual leave to a coworker?",
                 revalidate=False)
    steps = ["Go to the VLTP site and log in with your PIV card.",
             "Choose the coworker who receives the hours.",
             "Submit the number of hours you give."]
    texts = [t for t, _ in answer.sentences]
    assert texts[:3] == steps
    assert "To donate your leave:" not in texts


def test_an_answer_embeds_the_sentences_it_reads_once_and_keeps_them(handbook: Wiki) -> None:
    """A build embeds no answer sentence; the answer embeds the sentences of the entries
    it reads, keyed by the hash of the text embedded (title + sentence), and keeps them
    in the index, so the next answer embeds none of them."""
    index = open_synced(handbook).index
    try:
        assert index.vectors.sentence_vectors(list(PAGES), embedders.DEFAULT_MODEL) == {}
    finally:
        index.close()
    ask_for(handbook, "what's the cap on credit hours I can have saved up?", revalidate=False)
    index = open_synced(handbook).index
    try:
        stored = index.vectors.sentence_vectors(list(PAGES), embedders.DEFAULT_MODEL)
        credit = {h for (h,) in index.conn.execute(
            "SELECT text_hash FROM sentences WHERE key = 'time/credit-hours.md'")}
    finally:
        index.close()
    title, body = CREDIT
    assert text_hash(embedded(title, "You can have up to 24 credit hours accrued at any "
                                     "given time.")) in stored
    assert credit <= set(stored)


def test_an_unanswerable_question_is_a_gap_with_a_reason(handbook: Wiki) -> None:
    """Close to the handbook's words (annual leave) but nothing answers it."""
    answer = ask_for(handbook, "does the agency offer paid sabbaticals after five years?",
                 revalidate=False)
    assert answer.gap
    assert answer.gap_reason is not None
    assert answer.gap_reason.code in ("no_match", "no_answer")
    assert answer.gap_reason.sentence


def test_a_money_question_keeps_missing_type_and_gets_its_reason(handbook: Wiki) -> None:
    """The answer-type gap (``missing_type``, ``note``) is unchanged and now also has a
    ``gap_reason`` with the same sentence."""
    answer = ask_for(handbook, "how much money do I get for donating annual leave?",
                 revalidate=False,
                 picker=PickerConfig(gap_score=None, retrieval_gap=False))
    assert answer.gap
    assert answer.missing_type == "money"
    assert answer.gap_reason.code == "missing_type"
    assert answer.gap_reason.sentence == answer.note


def test_ask_json_gives_the_gap_reason(handbook: Wiki, cli) -> None:
    result = cli("ask", "--json", "does the agency offer paid sabbaticals after five years?")
    assert result.exit_code == 3, result.output
    payload = json.loads(result.stdout)
    assert payload["gap"] is True
    assert payload["gap_reason"]["code"] in ("no_match", "no_answer")
    assert payload["gap_reason"]["sentence"]
    assert "missing_type" in payload and "note" in payload


def test_the_picker_runs_without_vectors(wiki: Wiki) -> None:
    """``WIKI_EMBED_MODEL=none``: words and form alone, no cosine, no score gap."""
    files = {"time/credit-hours.md": entry_text("credit", *CREDIT).encode()}
    proposal = propose(wiki, files, base=None, kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    answer = ask_for(wiki, "how many credit hours can I have accrued at any given time?",
                 revalidate=False)
    assert answer.sentences[0] == ("You can have up to 24 credit hours accrued at any "
                                   "given time.", 1)
    assert answer.sentence_cosine is None


@pytest.mark.parametrize(("question", "form"), [
    ("how do I change my dental plan?", "howto"),
    ("can I telework from abroad?", "yesno"),
    ("how many days ahead do I put in for leave?", "amount"),
    ("what's the cap on credit hours?", "amount"),
    ("who approves my travel?", "who"),
    ("which slack channel do I ask in?", "where"),
    ("where do I change my direct deposit?", "where"),
    ("what percentage does GSA match?", "percent"),
    ("how much does the parking pass cost?", "money"),
    ("tell me about badges", None),
])
def test_question_forms(question: str, form: str | None) -> None:
    assert question_form(question) == form


def test_forms_stated_and_fragments() -> None:
    assert states_form("Go to the portal and submit the form.", "howto")
    assert not states_form("Leave donation helps a coworker.", "howto")
    assert states_form("You can have up to 24 hours.", "amount")
    assert states_form("Users are prohibited from deleting messages.", "yesno")
    assert states_form("Ask in #help-desk or see https://example.gov/help.", "where")
    assert not states_form("Anything at all.", None)
    assert is_fragment("Band 1 | $600 | yearly")
    assert is_fragment("Getting started")
    assert is_fragment("To donate your annual leave to a coworker:")
    assert not is_fragment("Getting started is easy for everyone here.")


def test_scoring_prefers_the_typed_sentence_and_orders_entry_by_entry() -> None:
    """Pure scoring: equal words and meaning, the sentence stating a number wins; the best
    opens the answer, then the places go entry by entry."""
    texts = ["Credit hours are hours worked beyond the schedule.",
             "You can have 24 credit hours at a time.",
             "Credit hours need approval before they are worked."]
    vectors = np.eye(3, 4, dtype=np.float32)
    query = np.array([0.6, 0.6, 0.53, 0.0], dtype=np.float32)
    config = PickerConfig(floor=0.0)
    scored = score_sentences("how many credit hours can I have?", texts, [0, 0, 1],
                             vectors, query, config)
    assert scored[0].index == 1 and scored[0].states
    assert [s.index for s in pick(scored, config)] == [1, 0, 2]


def test_missing_vectors_are_embedded_when_an_encoder_is_given() -> None:
    encoded: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        encoded.append(list(texts))
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))

    picked = pick_answer("how many credit hours can I have?",
                         [("Credit hours", "You can have 24 credit hours at a time.")],
                         {}, np.array([1.0, 0.0], dtype=np.float32), embed=embed)
    assert encoded == [["Credit hours: You can have 24 credit hours at a time."]]
    assert picked.sentences == [("You can have 24 credit hours at a time.", 0)]
    assert picked.cosine == 1.0
