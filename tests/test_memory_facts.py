"""Keyed facts: current value with entry and sources, history from the branch, a new value
for a held key changed in its entry (`wiki facts set`, an edit) or as a supersession (a
`propose` of a new entry); tests/test_facts_join.py has the set on ingested entries."""

from __future__ import annotations

import json

import pytest

from tests.conftest import BOB
from tests.memory_helpers import entry, land
from wiki.errors import ConfigError
from wiki.knowledge import authoring
from wiki.knowledge.facts import current, history, set_fact
from wiki.lint import run_lint
from wiki.review.proposals import approve
from wiki.store.workspace import Wiki

RATE = entry("e-rate", "Mileage rate", "The mileage rate is 0.67 USD per mile.", type="fact",
             facts="{mileage_rate: {value: 0.67, unit: USD/mile, as_of: 2026-01-01}}",
             sources="[{uri: 'git:pages/travel.md'}]")


def test_current_value_with_entry_and_sources(wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    (fact,) = current(wiki, "mileage_rate")
    assert (fact.value, fact.unit, fact.as_of) == (0.67, "USD/mile", "2026-01-01")
    assert fact.entry_id == "e-rate" and fact.sources == ("git:pages/travel.md",)
    assert fact.text == "0.67 USD/mile (as of 2026-01-01)"


def test_short_form_facts_stay_valid(wiki: Wiki) -> None:
    land(wiki, {"a.md": entry("e-a", "A", "b", facts="{office: Berlin}")})
    assert current(wiki, "office")[0].value == "Berlin"


def test_set_changes_the_holder_in_place_and_history_shows_both(wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    result = set_fact(wiki, "mileage_rate", "0.70", unit="USD/mile", as_of="2026-07-01")
    assert result.proposal.name.startswith("fact-")
    approve(wiki, result.proposal.name, approver=BOB)
    (fact,) = current(wiki, "mileage_rate")
    assert fact.value == 0.70 and fact.entry_id == "e-rate" and fact.path == "travel/rate.md"
    assert fact.sources == ("git:pages/travel.md",)
    steps = [(c.change, c.fact.value, c.fact.entry_id) for c in history(wiki, "mileage_rate")]
    assert steps == [("set", 0.67, "e-rate"), ("changed", 0.70, "e-rate")]
    assert run_lint(wiki, {"W003", "W009"}).findings == []


def test_set_the_same_value_proposes_nothing(wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    result = set_fact(wiki, "mileage_rate", "0.67", unit="USD/mile", as_of="2026-01-01")
    assert result.proposal is None and result.existing == "travel/rate.md"


def test_set_a_new_key_goes_into_the_named_entry(wiki: Wiki) -> None:
    land(wiki, {"org/people.md": entry("e-org", "People", "We are 42 people.")})
    with pytest.raises(ConfigError, match="name the entry that states it with --entry"):
        set_fact(wiki, "headcount", "42")
    result = set_fact(wiki, "headcount", "42", entry="e-org")
    approve(wiki, result.proposal.name, approver=BOB)
    (fact,) = current(wiki, "headcount")
    assert fact.value == 42 and fact.path == "org/people.md"


def test_a_new_entry_with_a_held_key_supersedes_the_holder(wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    text = entry("e-new", "Mileage 2026-07", "Rate is 0.70.", facts="{mileage_rate: 0.70}")
    result = authoring.new_entry(wiki, text.encode())
    assert result.proposal.name.startswith("supersede-")
    approve(wiki, result.proposal.name, approver=BOB)
    assert [f.entry_id for f in current(wiki, "mileage_rate")] == ["e-new"]


def test_an_edit_of_a_fact_value_is_an_edit(wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    edited = RATE.replace("value: 0.67", "value: 0.71")
    result = authoring.edit_entry(wiki, "e-rate", edited.encode())
    assert result.proposal.name.startswith("edit-")
    assert result.proposal.paths == ["travel/rate.md"]
    unrelated = RATE.replace("is 0.67 USD per mile.", "is 0.67 USD for each mile.")
    assert authoring.edit_entry(wiki, "e-rate", unrelated.encode()).proposal.name.startswith("edit-")


def test_two_holders_refuse_a_new_value(wiki: Wiki) -> None:
    land(wiki, {"a.md": entry("e-a", "A", "b", facts="{office: Berlin}"),
                "b.md": entry("e-b", "B", "c", facts="{office: Paris}")})
    with pytest.raises(ConfigError, match="resolve the contradiction"):
        set_fact(wiki, "office", "Rome")


def test_facts_command(cli, wiki: Wiki) -> None:
    land(wiki, {"travel/rate.md": RATE})
    shown = cli("facts", "mileage_rate")
    assert shown.exit_code == 0, shown.output
    assert "mileage_rate = 0.67 USD/mile (as of 2026-01-01)" in shown.stdout
    assert "git:pages/travel.md" in shown.stdout and "history:" in shown.stdout
    data = json.loads(cli("facts", "mileage_rate", "--json").stdout)
    assert data["current"][0]["entry_id"] == "e-rate" and data["history"][0]["change"] == "set"
    proposed = cli("facts", "set", "mileage_rate", "0.72", "--unit", "USD/mile")
    assert proposed.exit_code == 0 and proposed.stdout.startswith("fact-")
    assert cli("facts", "nothing_here").exit_code == 1


def test_set_restates_the_prose_so_answers_never_quote_the_old_value(wiki: Wiki) -> None:
    """Found by a new user: the successor kept 'The mileage rate is 0.67 USD per mile.'"""
    land(wiki, {"travel/rate.md": RATE})
    result = set_fact(wiki, "mileage_rate", "0.70", unit="USD/mile", as_of="2026-07-01")
    approve(wiki, result.proposal.name, approver=BOB)
    (fact,) = current(wiki, "mileage_rate")
    body = wiki.snapshot().entry(fact.path).body
    assert body.startswith("mileage_rate is 0.7 USD/mile (as of 2026-07-01).")
    assert "The mileage rate is 0.7 USD per mile." in body and "0.67" not in body
