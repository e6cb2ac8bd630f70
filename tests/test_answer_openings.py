"""How an answer opens (:mod:`wiki.answering.sentence_scoring`): never with a sentence whose
subject is an unresolved pronoun, an exit code asked is a number next to the question's
words, a "where" is answered by a path too, a "how do I" by the steps rather than by what
to do when they fail.

The failures came from `make demo` on this project's docs: "how does a proposal get
approved?" opened with "Its proposals wait for a person's approval like everyone's.",
"what exit code does an evidence gap return?" with a row of another table. Pure scoring
with hand-made vectors, then a small real wiki (real index, real MiniLM) through
``wiki ask``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALICE, BOB, entry_text

from indexes.embedding import embedders
from wiki.answering.ask import ask_for
from wiki.answering.sentence_scoring import (
    PickerConfig,
    asks_about_failure,
    is_about_failure,
    is_anaphoric,
    is_imperative,
    pick,
    question_form,
    row_key_missed,
    score_sentences,
    states_form,
)
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki


@pytest.mark.parametrize(("sentence", "anaphoric"), [
    ("Its proposals wait for a person's approval like everyone's.", True),
    ("This is GS-15, step 10, including any locality rate.", True),
    ("They are kept as federal records.", True),
    ("Items in the list are sorted.", False),
    ("Theirs is a different process entirely.", False),
    ("Thereafter the branch moves.", False),
    ("It's easy to accidentally push secrets to GitHub.", False),
    ("It takes a week after the pay period for a deposit to be made.", False),
    ("It is important that you sign the form.", False),
    ("It is kept in the derived database.", True),
    ("A proposal needs an approver other than its author.", False),
])
def test_anaphoric_openings(sentence: str, anaphoric: bool) -> None:
    assert is_anaphoric(sentence) is anaphoric


def _scored(question: str, texts: list[str], cosines: list[float], entries: list[int],
            config: PickerConfig):
    """Sentences scored with the given cosines (unit vectors at those angles)."""
    vectors = np.array([[c, float(np.sqrt(1 - c * c))] for c in cosines], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    return score_sentences(question, texts, entries, vectors, query, config)


PAY = ["If you make the maximum salary, you cannot receive overtime or comp time.",
       "This is GS-15, step 10, including any applicable locality rate of pay.",
       "Comp time is paid out when you leave."]


def test_an_anaphoric_best_sentence_opens_after_the_sentence_it_refers_to() -> None:
    """The default (``relevant-context``): the sentence before it is on topic, so the
    answer opens with it, then the pronoun sentence."""
    question = "I'm at the top of the GS pay scale, can I still get comp time?"
    config = PickerConfig()
    chosen = pick(_scored(question, PAY, [0.6, 0.8, 0.5], [0, 0, 0], config), config)
    assert [s.index for s in chosen][:2] == [0, 1]
    none = PickerConfig(anaphor="none")
    assert pick(_scored(question, PAY, [0.6, 0.8, 0.5], [0, 0, 0], none), none)[0].index == 1


def test_an_anaphoric_sentence_after_an_off_topic_one_is_discounted_instead() -> None:
    """When the sentence it refers back to scores under ``floor ×`` its score, the pronoun
    sentence is discounted (``anaphor_weight``) and a plain one opens."""
    texts = ["wiki mcp gives an agent five tools over stdio.",
             "Its proposals wait for a person's approval like everyone's.",
             "A proposal needs an approver other than its author."]
    question = "how does a proposal get approved?"
    config = PickerConfig()
    chosen = pick(_scored(question, texts, [0.05, 0.8, 0.7], [0, 0, 0], config), config)
    assert chosen[0].index == 2
    assert 0 not in [s.index for s in chosen]


def test_penalty_mode_never_adds_the_sentence_before() -> None:
    config = PickerConfig(anaphor="penalty", anaphor_weight=0.5)
    question = "can I still get comp time at the top of the pay scale?"
    chosen = pick(_scored(question, PAY, [0.5, 0.8, 0.45], [0, 0, 0], config), config)
    assert chosen[0].index == 0


@pytest.mark.parametrize(("question", "form"), [
    ("what exit code does an evidence gap return?", "code"),
    ("which port does the server listen on?", "code"),
    ("what organization code do I use?", None),
])
def test_code_questions(question: str, form: str | None) -> None:
    assert question_form(question) == form


def test_a_code_is_stated_next_to_the_question_s_words() -> None:
    question = "what exit code does an evidence gap return?"
    assert states_form("or an evidence gap (exit 3) when no sentence answers", "code",
                       question)
    assert not states_form("wiki gaps | the evidence gaps recorded, newest first; no log "
                           "yet: a note, exit 0", "code", question)
    assert not states_form("Every user error has a documented exit code.", "code", question)


@pytest.mark.parametrize(("sentence", "where"), [
    ("Derived state: <git dir>/wiki/wiki.sqlite, evidence gaps", True),
    ("See docs/cli.md for the commands.", True),
    ("It is kept in ~/.config/wiki for you.", True),
    ("Use the and/or operators freely.", False),
])
def test_a_path_states_where(sentence: str, where: bool) -> None:
    assert states_form(sentence, "where") is where


def test_a_row_of_a_reference_table_about_another_key() -> None:
    question = "what exit code does an evidence gap return?"
    assert row_key_missed(question, "ask | question (required); budget | answer")
    assert not row_key_missed(question, "evidence gap | exit 3 | nothing answers")
    assert not row_key_missed(question, "A sentence without cells.")


DOCS = {
    "tools/agents.md": ("agents", "Agents and the MCP server",
                        "wiki mcp gives an agent five tools over stdio: search, ask, get, "
                        "propose and lint. Its proposals wait for a person's approval like "
                        "everyone's. The server reads the same wiki as the command line."),
    "tools/review.md": ("review", "Review of proposals and approval",
                        "Every change is a proposal on a branch of its own. A proposal is "
                        "approved by a person other than its author with wiki approve. "
                        "Landing moves the wiki branch with a compare-and-swap."),
    "tools/cli.md": ("cli", "Command line reference",
                     "ask | a cited answer, or an evidence gap (exit 3) when nothing "
                     "answers | the question\n\n"
                     "gaps | the evidence gaps recorded, newest first; no log yet: a note, "
                     "exit 0 | none\n\n"
                     "Every user error is one line on stderr and a documented exit code."),
}


def _seed_docs(wiki: Wiki, repo) -> None:
    files = {path: entry_text(eid, title, body).encode()
             for path, (eid, title, body) in DOCS.items()}
    proposal = propose(wiki, files, base=None, kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


@pytest.fixture
def docs_wiki(from_template, monkeypatch) -> Wiki:
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    return from_template(_seed_docs)


@pytest.mark.slow
def test_the_demo_questions_open_with_a_sentence_that_answers(docs_wiki: Wiki, cli) -> None:
    approved = ask_for(docs_wiki, "how does a proposal get approved?", revalidate=False)
    assert not approved.gap
    assert not approved.sentences[0][0].startswith("Its ")
    code = cli("ask", "what exit code does an evidence gap return?")
    assert code.exit_code == 0, code.output
    assert code.stdout.splitlines()[0].startswith("ask | a cited answer, or an evidence gap "
                                                  "(exit 3)")


@pytest.mark.parametrize(("sentence", "failure"), [
    ("If a test page fails to arrive, troubleshoot the notification rules.", True),
    ("Troubleshooting a silent pager starts with the notification rules.", True),
    ("If the page doesn't arrive within a minute, call the on-call lead.", True),
    ("If the dashboard is not working, restart the agent.", True),
    ("If you are not on call, ask the lead to send it.", False),
    ("Open the Ops service in PagerDuty.", False),
    ("A failed deploy is rolled back by the pipeline.", False),
])
def test_sentences_about_a_failure(sentence: str, failure: bool) -> None:
    assert is_about_failure(sentence) is failure


@pytest.mark.parametrize(("question", "asked"), [
    ("how do I send a test page?", False),
    ("how to send a test page", False),
    ("how do I fix a test page that does not arrive?", True),
    ("how can I troubleshoot the pager?", True),
    ("what should I do if a test page fails?", True),
])
def test_questions_about_a_failure(question: str, asked: bool) -> None:
    assert asks_about_failure(question) is asked


@pytest.mark.parametrize(("sentence", "imperative"), [
    ("Open the Ops service in PagerDuty.", True),
    ("2. Click New Incident and pick the Test Page template.", True),
    ("Then submit the incident.", True),
    ("You can also check the PagerDuty status page.", False),
    ("If a test page fails to arrive, troubleshoot the rules.", False),
])
def test_imperative_steps(sentence: str, imperative: bool) -> None:
    assert is_imperative(sentence) is imperative


FAILING = ["If the test page fails, you should troubleshoot the notification rules.",
           "Open the Ops service and send the test page."]


def test_a_failure_sentence_does_not_open_a_how_to_answer() -> None:
    """Hand vectors: the troubleshooting sentence is nearer the question and states a step
    by the lenient rule ("you should"); for "how do I", the imperative step opens."""
    config = PickerConfig()
    question = "how do I send a test page?"
    chosen = pick(_scored(question, FAILING, [0.7, 0.6], [0, 0], config), config)
    assert chosen[0].index == 1
    off = PickerConfig(failure_weight=1.0)
    assert pick(_scored(question, FAILING, [0.7, 0.6], [0, 0], off), off)[0].index == 0


@pytest.mark.parametrize("question", [
    "how do I fix a test page that fails?",  # a how-to about the failure itself
    "can I send a test page?", "who sends the test page?", "when is the test page sent?",
    "where do I send a test page?",
])
def test_other_questions_score_failure_sentences_as_before(question: str) -> None:
    """The discount is for how-to questions that are not about a failure only: every other
    question scores every sentence exactly as with it off."""
    on, off = PickerConfig(), PickerConfig(failure_weight=1.0)
    assert ([(s.index, s.score) for s in _scored(question, FAILING, [0.7, 0.6], [0, 0], on)]
            == [(s.index, s.score) for s in _scored(question, FAILING, [0.7, 0.6], [0, 0], off)])


RUNBOOK = ("The on-call engineer is paged through PagerDuty for every alert of the ops "
           "services.\n\n## Troubleshooting\n\nIf a test page fails to arrive on your "
           "phone, you should troubleshoot the notification rules in your PagerDuty profile "
           "before you send another test page. You can also check the PagerDuty status "
           "page.\n\n## Sending a test page\n\n1. Open the Ops service in PagerDuty.\n"
           "2. Click New Incident and pick the Test Page template.\n"
           "3. Submit the incident and wait for the page on your phone.\n"
           "4. Resolve the incident once the page arrives.\n")
STEPS = ["Open the Ops service in PagerDuty.",
         "Click New Incident and pick the Test Page template.",
         "Submit the incident and wait for the page on your phone."]


@pytest.fixture
def runbook_wiki(wiki: Wiki, monkeypatch) -> Wiki:
    """A hand-written runbook entry: a troubleshooting paragraph, then numbered steps."""
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    files = {"runbooks/paging.md": entry_text("paging", "Paging runbook", RUNBOOK).encode()}
    proposal = propose(wiki, files, base=None, kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    return wiki


def test_a_how_to_question_opens_with_the_steps_not_the_troubleshooting(
        runbook_wiki: Wiki) -> None:
    """Issue 28.6: "how do I send a test page?" opened with "If a test page fails to arrive
    ..., you should troubleshoot ...", then "You can also check the PagerDuty status page."
    (the run of steps reached back into the troubleshooting paragraph). A question about
    the failure still opens with the troubleshooting sentence."""
    for question in ("how do I send a test page?", "how to send a test page",
                     "how can I send a test page?"):
        answer = ask_for(runbook_wiki, question, revalidate=False)
        assert not answer.gap
        assert [text for text, _ in answer.sentences[:3]] == STEPS, (question, answer.sentences)
    fix = ask_for(runbook_wiki, "how do I fix a test page that does not arrive?", revalidate=False)
    assert fix.sentences[0][0].startswith("If a test page fails to arrive")
