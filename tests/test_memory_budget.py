"""`wiki ask --budget N`: whole sentences with their citations, never over N tokens as
rendered, covering the top entries first; and `wiki feedback` for procedures."""

from __future__ import annotations

import json

import pytest

from indexes.retrieval.tokens import Estimate, counter
from tests.conftest import BOB
from tests.memory_helpers import entry, land
from wiki.answering.ask import ask_for
from wiki.answering.budget import citation_line, fit
from wiki.errors import ConfigError
from wiki.knowledge.feedback import counts, propose_counts, record
from wiki.review.proposals import approve
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki

SENTENCES = [f"The quokka rule number {n} says travellers file form {n} within {n} days."
             for n in range(1, 13)]


def _entries() -> list[Entry]:
    return [Entry.parse(f"t/e{i}.md", entry(f"e-{i}", f"Quokka rules {i}",
                                            " ".join(SENTENCES[i * 4:(i + 1) * 4])).encode())
            for i in range(3)]


@pytest.mark.parametrize("budget", [40, 80, 150, 1000])
def test_fit_stays_within_the_budget_and_keeps_sentences_whole(budget: int) -> None:
    entries = _entries()
    evidence = fit("quokka form", entries, budget, Estimate())
    rendered = [f"{text} [{n}]" for text, n in evidence.sentences]
    rendered += [citation_line(n, entries[p]) for n, p in enumerate(evidence.cited, 1)]
    assert sum(Estimate().count(line) + 1 for line in rendered) == evidence.used <= budget
    assert all(text in SENTENCES for text, _ in evidence.sentences)
    assert evidence.whole > 0 and (budget < 1000 or len(evidence.sentences) == 12)


def test_fit_covers_every_top_entry_before_adding_more() -> None:
    evidence = fit("quokka form", _entries(), 90, Estimate())
    assert sorted(evidence.cited) == [0, 1, 2]
    assert len(evidence.sentences) == 3


def test_a_budget_too_small_gives_no_evidence() -> None:
    assert fit("quokka", _entries(), 5, Estimate()).sentences == []


def test_counter_choice() -> None:
    assert counter(None).name.startswith("estimate")
    assert counter("fake-model").count("abcdefgh") == 2


def test_ask_budget_reports_tokens(cli, wiki: Wiki) -> None:
    land(wiki, {f"t/e{i}.md": entry(f"e-{i}", f"Quokka rules {i}",
                                    " ".join(SENTENCES[i * 4:(i + 1) * 4])) for i in range(3)})
    answer = ask_for(wiki, "quokka form travellers", budget=60)
    assert answer.tokens["used"] <= 60 < answer.tokens["whole"]
    result = cli("ask", "quokka form travellers", "--budget", "60", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tokens"]["budget"] == 60
    text = cli("ask", "quokka form travellers", "--budget", "60")
    assert "tokens used; the whole entries would take" in text.stderr


def test_feedback_counts_live_in_a_log_and_can_be_proposed(cli, wiki: Wiki) -> None:
    land(wiki, {"ops/restart.md": entry("e-run", "Restart", "Restart it.", type="procedure"),
                "ops/note.md": entry("e-note", "Note", "A note.")})
    record(wiki, "e-run", "worked")
    record(wiki, "e-run", "failed")
    shown = cli("feedback", "e-run", "worked", "--json")
    assert json.loads(shown.stdout)["worked"] == 2
    with pytest.raises(ConfigError, match="only procedures"):
        record(wiki, "e-note", "worked")
    assert cli("feedback", "e-run", "maybe").exit_code == 2
    opened = propose_counts(wiki, "e-run")
    proposal, _created = opened.proposal, opened.created
    approve(wiki, proposal.name, approver=BOB)
    now = counts(wiki, "e-run")
    assert (now.worked, now.failed) == (2, 1) and now.recorded["worked"] == 2
    record(wiki, "e-run", "worked")
    assert counts(wiki, "e-run").worked == 3
