"""How an answer opens (:mod:`indexes.sentence_scoring`): never with a sentence whose
subject is an unresolved pronoun, an exit code asked is a number next to the question's
words, a "where" is answered by a path too.

The failures came from `make demo` on this project's docs: "how does a proposal get
approved?" opened with "Its proposals wait for a person's approval like everyone's.",
"what exit code does an evidence gap return?" with a row of another table. Pure scoring
with hand-made vectors, then a small real wiki (real index, real MiniLM) through
``wiki ask``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALICE, BOB, entry_text

from indexes import embedders
from indexes.sentence_scoring import (
    PickerConfig,
    is_anaphoric,
    pick,
    question_form,
    row_key_missed,
    score_sentences,
    states_form,
)
from wiki.answering.ask import ask
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


@pytest.fixture
def docs_wiki(wiki: Wiki, monkeypatch) -> Wiki:
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    files = {path: entry_text(eid, title, body).encode()
             for path, (eid, title, body) in DOCS.items()}
    proposal, _ = propose(wiki, files, base=None, kind="seed", subject="seed", author=ALICE)
    approve(wiki, proposal.name, approver=BOB)
    return wiki


@pytest.mark.slow
def test_the_demo_questions_open_with_a_sentence_that_answers(docs_wiki: Wiki, cli) -> None:
    approved = ask(docs_wiki, "how does a proposal get approved?", revalidate=False)
    assert not approved.gap
    assert not approved.sentences[0][0].startswith("Its ")
    code = cli("ask", "what exit code does an evidence gap return?")
    assert code.exit_code == 0, code.output
    assert code.stdout.splitlines()[0].startswith("ask | a cited answer, or an evidence gap "
                                                  "(exit 3)")
