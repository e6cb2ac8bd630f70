"""Types and lifetimes: expiry from valid_until or the type's lifetime in wiki.toml; expired
entries leave default answers (every leg) and show in lint W008; `wiki feedback`."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from tests.conftest import BOB
from tests.memory_helpers import entry, land
from wiki.answering.search import _with_lifetimes, filters_for, search_for
from wiki.config import CONFIG_PATH, parse_config, parse_duration
from wiki.lint import run_lint
from wiki.review.proposals import approve, propose
from wiki.store.derived import open_synced
from wiki.store.entry import Entry
from wiki.store.lifetimes import expiry, lifetimes
from wiki.store.workspace import Wiki

OLD = (dt.datetime.now(dt.UTC) - dt.timedelta(days=200)).strftime("%Y-%m-%dT%H:%M:%SZ")
RECENT = (dt.datetime.now(dt.UTC) - dt.timedelta(days=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wiki(w: Wiki) -> None:
    land(w, {
        "log/standup.md": entry("e-ep-old", "Standup kiwi", "The kiwi standup moved.",
                                type="episode", updated=OLD),
        "log/retro.md": entry("e-ep-new", "Retro kiwi", "The kiwi retro happened.",
                              type="episode", updated=RECENT),
        "adr/kiwi.md": entry("e-dec", "Kiwi decision", "We chose kiwi for builds.",
                             type="decision", updated=OLD),
        "notes/lapsed.md": entry("e-lapsed", "Kiwi offer", "The kiwi offer is open.",
                                 valid_until="2020-01-01"),
    })


def _keys(w: Wiki, **kwargs) -> set[str]:
    return {h.doc_id for h in search_for(w, "kiwi", limit=20,
                                     filters=filters_for(**kwargs)).hits}


def test_durations() -> None:
    assert parse_duration("90d") == 90 and parse_duration("2w") == 14
    assert parse_duration("1y") == 365 and parse_duration("never") is None
    with pytest.raises(ValueError, match="'soon'"):
        parse_duration("soon")


def test_bad_lifetime_in_wiki_toml_names_the_key() -> None:
    with pytest.raises(Exception, match=r"\[lifetimes\] episode"):
        parse_config('[lifetimes]\nepisode = "ninety days"\n')


def test_expiry_of_an_entry() -> None:
    days = lifetimes(parse_config(""))
    episode = Entry.parse("a.md", entry("e-a", "A", "b", type="episode",
                                        updated="2026-01-01T00:00:00Z").encode())
    when, why = expiry(episode, days)
    assert when == dt.datetime(2026, 4, 1, tzinfo=dt.UTC) and "episode lifetime 90" in why
    decision = Entry.parse("a.md", entry("e-a", "A", "b", type="decision",
                                         updated="2001-01-01").encode())
    assert expiry(decision, days) == (None, "")
    until = Entry.parse("a.md", entry("e-a", "A", "b", type="decision",
                                      valid_until="2030-05-01").encode())
    assert expiry(until, days)[0] == dt.datetime(2030, 5, 1, 23, 59, 59, tzinfo=dt.UTC)


def test_expired_entries_leave_default_answers(wiki: Wiki) -> None:
    _wiki(wiki)
    assert _keys(wiki) == {"e-ep-new", "e-dec"}
    assert _keys(wiki, include_expired=True) == {"e-ep-new", "e-dec", "e-ep-old", "e-lapsed"}


def test_lifetimes_follow_wiki_toml(wiki: Wiki) -> None:
    _wiki(wiki)
    text = wiki.snapshot().read(CONFIG_PATH).decode()
    text = text.replace('episode = "90d"', 'episode = "1000d"')
    proposal = propose(wiki, {CONFIG_PATH: text.encode()}, base=None, kind="config", subject="c").proposal
    approve(wiki, proposal.name, approver=BOB)
    assert "e-ep-old" in _keys(wiki)


def test_lint_w008_lists_type_expiry(wiki: Wiki) -> None:
    _wiki(wiki)
    findings = {f.entry_id: f.message for f in run_lint(wiki, {"W008"}).findings}
    assert set(findings) == {"e-ep-old", "e-lapsed"}
    assert "episode lifetime 90 days" in findings["e-ep-old"]
    assert "valid_until 2020-01-01" in findings["e-lapsed"]


def test_include_expired_on_the_command_line(cli, wiki: Wiki) -> None:
    _wiki(wiki)
    plain = json.loads(cli("search", "kiwi", "--json").stdout)
    every = json.loads(cli("search", "kiwi", "--include-expired", "--json").stdout)
    assert {h["id"] for h in plain["hits"]} == {"e-ep-new", "e-dec"}
    assert "e-ep-old" in {h["id"] for h in every["hits"]}


def test_as_of_checks_validity_then(wiki: Wiki) -> None:
    land(wiki, {"n/offer.md": entry("e-offer", "Kiwi offer", "The kiwi offer is open.",
                                    valid_until="2999-01-01")})
    assert _keys(wiki) == {"e-offer"}
    later = dt.datetime(3000, 1, 1, tzinfo=dt.UTC)
    index = open_synced(wiki).index
    try:
        moved = _with_lifetimes(filters_for(), index, later)
        assert moved.valid_at == "3000-01-01T00:00:00Z"
        assert index.count(moved) == 0 and index.count(filters_for()) == 1
    finally:
        index.close()
