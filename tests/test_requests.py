"""Search and ask take one frozen request and return frozen values (issue 14): the
settings are read once when a request is built or a search starts, the picker's
parameters travel in the request, and no eval tunes ask by setting module globals.
A real git repository and the real index; the model is the fake provider."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from conftest import entry_text
from fake_llm import install

from indexes.retrieval.query import MAX_WORDS
from tests.memory_helpers import land
from wiki.answering.ask import AskRequest, answer, ask_for
from wiki.answering.picker import DEFAULT
from wiki.answering.search import SearchRequest, search, search_for
from wiki.llm.answer import answer_from
from wiki.llm.settings import open_client
from wiki.store.workspace import Wiki

ROOT = Path(__file__).parent.parent
ENTRIES = {
    "travel/lodging.md": entry_text("lo", "Booking lodging",
                                    "Lodging is booked in Concur by the traveler."),
    "travel/receipts.md": entry_text("re", "Keeping receipts",
                                     "Receipts are kept for three years."),
    "travel/first-day.md": entry_text("fd", "First travel day",
                                      "The first travel day pays 75 percent of the daily rate."),
}
QUESTION = "is lodging booked in Concur and are receipts kept?"


def _build_populated(wiki: Wiki, repo: Path) -> None:
    land(wiki, ENTRIES)


@pytest.fixture
def populated(from_template) -> Wiki:
    return from_template(_build_populated)


def test_requests_and_results_are_frozen(populated: Wiki) -> None:
    request = AskRequest(QUESTION, revalidate=False)
    found = answer(populated, request)
    result = search(populated, request.search)
    for value, name in [(request, "question"), (request.search, "query"),
                        (found, "note"), (result, "query")]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, "changed")


def test_the_embedding_model_is_read_once_when_the_request_is_built(monkeypatch) -> None:
    monkeypatch.setenv("WIKI_EMBED_MODEL", "none")
    before = AskRequest(QUESTION)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "all-MiniLM-L6-v2")
    after = AskRequest(QUESTION)
    assert before.embed_model is None and before.search.embed_model is None
    assert after.embed_model == "all-MiniLM-L6-v2"
    assert SearchRequest("q").embed_model == "all-MiniLM-L6-v2"


def test_ask_request_becomes_the_search_ask_runs() -> None:
    request = AskRequest(QUESTION, category="travel", legs=("bm25",), route=False,
                         include_superseded=True, include_expired=True)
    searched = request.search
    assert (searched.query, searched.limit, searched.legs, searched.route,
            searched.sentences) == (QUESTION, 10, ("bm25",), False, True)
    assert searched.filters.statuses == ("active", "superseded")
    assert searched.filters.category == "travel" and searched.filters.valid_at is None


def test_keyword_calls_and_requests_give_the_same_values(populated: Wiki) -> None:
    by_keywords = search_for(populated, "receipts kept", limit=2, legs=("bm25",))
    by_request = search(populated, SearchRequest("receipts kept", limit=2,
                                                     legs=("bm25",)))
    assert [h.key for h in by_keywords.hits] == [h.key for h in by_request.hits]
    assert by_request.hits[0].key == "travel/receipts.md"
    assert by_request.confidence == by_keywords.confidence == 1.0
    assert by_request.threshold == by_request.rule.threshold
    assert by_request.vectors is None  # the vector leg is off in tests
    asked = ask_for(populated, QUESTION, revalidate=False)
    assert asked == answer(populated, AskRequest(QUESTION, revalidate=False))
    assert asked.sentences == [("Lodging is booked in Concur by the traveler.", 1),
                               ("Receipts are kept for three years.", 2)]


def test_the_pickers_parameters_travel_in_the_request(populated: Wiki) -> None:
    one = dataclasses.replace(DEFAULT, max_sentences=1)
    found = answer(populated, AskRequest(QUESTION, revalidate=False, picker=one))
    assert found.sentences == [("Lodging is booked in Concur by the traveler.", 1)]
    assert [c.path for c in found.citations] == ["travel/lodging.md"]


def test_skipped_legs_keep_their_order_and_a_long_query_is_reported_as_asked(
        populated: Wiki) -> None:
    result = search_for(populated, "receipts kept", route=True)
    assert list(result.skipped.items()) == [
        ("vector", "turned off (WIKI_EMBED_MODEL=none)"),
        ("route", "needs the vector leg: turned off (WIKI_EMBED_MODEL=none)")]
    long = "receipts kept " + " ".join(f"word{i}" for i in range(MAX_WORDS))
    result = search_for(populated, long)
    assert result.query == long and result.hits[0].key == "travel/receipts.md"


def test_the_model_written_answer_cites_only_what_it_was_shown(populated: Wiki,
                                                               monkeypatch) -> None:
    fake = install(monkeypatch)
    fake.answer = "Receipts are kept for three years [1]. Lodging is free [2]."
    snapshot = populated.snapshot()
    entries = [snapshot.entry("travel/receipts.md")]
    client = open_client(populated, snapshot.config().llm)
    written = answer_from(client, "how long are receipts kept?",
                          [("Receipts are kept for three years.", 1)],
                          [(1, "travel/receipts.md"), (2, "travel/gone.md")], entries)
    assert written.sentences == [("Receipts are kept for three years.", 1)]
    assert written.dropped == [("Lodging is free.", "cites a passage it was not shown: [2]")]
    assert "[1] Keeping receipts:" in fake.prompts[-1]
    nothing = answer_from(client, "how long?", [], [(1, "travel/gone.md")], entries)
    assert nothing.note == "no evidence to answer from"


def test_no_eval_sets_a_module_global() -> None:
    """Evals pass parameters (``picker=``) instead of assigning ``module.NAME = value`` or
    ``setattr``-ing a module of ``wiki``/``indexes``."""
    for path in sorted((ROOT / "evals").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign) else []
            for target in targets:
                assert not (isinstance(target, ast.Attribute) and target.attr.isupper()), \
                    f"{path.name}:{node.lineno} sets a module constant"
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
                first = node.args[0] if node.args else None
                assert not isinstance(first, ast.Name) or first.id not in {
                    "wiki", "indexes", "ask", "search", "picker"}, \
                    f"{path.name}:{node.lineno} setattr on a module"
