"""Facts live in the entry that states them (issue 28, item 4): `wiki facts set` edits the
facts of the entry holding the key, or of the entry named with `--entry`, in place: its
sources, id and path stay, nothing new appears for lint to flag (W012 orphan) or for
search to rank above the policy entry, and a key nobody holds is refused rather than
made into a sourceless entry of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ALICE, BOB, acting_as, git, ingest_and_land, write

from wiki.errors import ConfigError
from wiki.ingest.pipeline import ingest
from wiki.knowledge import authoring
from wiki.knowledge.facts import current, history, set_fact
from wiki.lint import run_lint
from wiki.review.proposals import approve, get_proposal
from wiki.store.workspace import Wiki

POLICY = """# Annual leave

Annual leave accrues at four hours per pay period. Unused leave carries over to the next
year up to a cap of 240 hours. Requests go to your manager at least two weeks ahead.
"""
PARKING = "# Parking\n\nStaff park in lot B on weekdays.\n"
PATH = "handbook/leave.md"
KEY = "leave.accrual_hours"
QUESTION = "how much annual leave accrues per pay period?"


def _policy(wiki: Wiki, repo: Path) -> str:
    """Ingest and land the leave policy and a parking page; returns the policy entry's
    text as landed."""
    write(repo / "handbook" / "leave.md", POLICY)
    write(repo / "handbook" / "parking.md", PARKING)
    ingest_and_land(wiki, repo / "handbook")
    return wiki.snapshot().read(PATH).decode()


def _land(cli, name: str) -> None:
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output


def _proposals(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/wiki-proposals/").split()


def _changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """(lines only in ``before``, lines only in ``after``), in order."""
    old, new = before.splitlines(), after.splitlines()
    return [line for line in old if line not in new], [line for line in new if line not in old]


def _findings(wiki: Wiki) -> set[tuple[str, str]]:
    return {(f.code, f.path) for f in run_lint(wiki).findings}


def test_a_key_no_entry_holds_is_refused_and_says_to_name_the_entry(wiki: Wiki, repo: Path,
                                                                     cli) -> None:
    _policy(wiki, repo)
    result = cli("facts", "set", KEY, "4")
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and result.stderr.count("\n") == 1
    assert f"no entry holds the fact {KEY!r}" in result.stderr
    assert "--entry" in result.stderr
    assert _proposals(repo) == [] and len(wiki.snapshot().entries()[0]) == 2


def test_set_with_entry_adds_the_key_to_that_entry_and_nothing_else(wiki: Wiki, repo: Path,
                                                                    cli) -> None:
    before = _policy(wiki, repo)
    found_before = _findings(wiki)
    hits_before = json.loads(cli("search", QUESTION, "--json").stdout)["hits"]
    assert hits_before[0]["path"] == PATH
    proposed = cli("facts", "set", KEY, "4", "--unit", "hours/pay period", "--entry", PATH)
    assert proposed.exit_code == 0, proposed.output
    name = proposed.stdout.strip()
    assert get_proposal(wiki, name).paths == [PATH]  # no new entry, no other file
    _land(cli, name)
    after = wiki.snapshot().read(PATH).decode()
    gone, added = _changed_lines(before, after)
    assert [line for line in gone if not line.startswith("updated:")] == []
    assert [line for line in added if not line.startswith("updated:")] == [
        "facts:", f"  {KEY}:", "    value: 4", "    unit: hours/pay period"]
    (fact,) = current(wiki, KEY)
    assert fact.path == PATH and fact.sources == ("git:handbook/leave.md",)
    assert _findings(wiki) == found_before  # no W012, nothing new
    hits = json.loads(cli("search", QUESTION, "--json").stdout)["hits"]
    assert [h["path"] for h in hits] == [h["path"] for h in hits_before]  # the policy first
    asked = json.loads(cli("ask", QUESTION, "--json").stdout)
    assert asked["citations"][0]["path"] == PATH and not asked["gap"]
    shown = cli("facts", KEY)
    assert "sources: git:handbook/leave.md" in shown.stdout


def test_a_held_key_is_changed_in_its_entry_not_by_a_new_one(wiki: Wiki, repo: Path,
                                                              cli) -> None:
    _policy(wiki, repo)
    entry_id = wiki.snapshot().entry(PATH).id
    _land(cli, cli("facts", "set", KEY, "4", "--entry", entry_id).stdout.strip())  # by id
    held = wiki.snapshot().read(PATH).decode()
    found_before = _findings(wiki)
    proposed = cli("facts", "set", KEY, "6")  # the one holder: no --entry needed
    assert proposed.exit_code == 0, proposed.output
    assert get_proposal(wiki, proposed.stdout.strip()).paths == [PATH]
    _land(cli, proposed.stdout.strip())
    entry = wiki.snapshot().entry(PATH)
    assert entry.id == entry_id and entry.status == "active"
    assert "superseded_by" not in entry.meta and "supersedes" not in entry.meta
    gone, added = _changed_lines(held, entry.to_bytes().decode())
    assert all(line.startswith(("updated:", f"  {KEY}:")) for line in gone + added), \
        (gone, added)
    assert len(wiki.snapshot().entries()[0]) == 2
    steps = [(c.change, c.fact.value, c.fact.entry_id) for c in history(wiki, KEY)]
    assert steps == [("set", 4, entry_id), ("changed", 6, entry_id)]
    assert _findings(wiki) == found_before


def test_the_named_entry_must_be_the_holder_and_active(wiki: Wiki, repo: Path, cli) -> None:
    _policy(wiki, repo)
    _land(cli, cli("facts", "set", KEY, "4", "--entry", PATH).stdout.strip())
    elsewhere = cli("facts", "set", KEY, "6", "--entry", "handbook/parking.md")
    assert elsewhere.exit_code == 2 and elsewhere.stderr.count("\n") == 1
    assert f"held by {PATH}" in elsewhere.stderr, elsewhere.stderr
    missing = cli("facts", "set", "parking.lot", "B", "--entry", "handbook/nothing.md")
    assert missing.exit_code == 1 and "handbook/nothing" in missing.stderr
    retracted = authoring.retract_entry(wiki, "handbook/parking.md", "moved", author=ALICE)
    approve(wiki, retracted.proposal.name, approver=BOB)
    refused = cli("facts", "set", "parking.lot", "B", "--entry", "handbook/parking.md")
    assert refused.exit_code == 2 and "retracted" in refused.stderr, refused.output


def test_the_same_value_again_proposes_nothing(wiki: Wiki, repo: Path) -> None:
    _policy(wiki, repo)
    first = set_fact(wiki, KEY, "4", entry=PATH, author=ALICE)
    approve(wiki, first.proposal.name, approver=BOB)
    again = set_fact(wiki, KEY, "4", author=ALICE)
    assert again.proposal is None and again.existing == PATH


def test_a_reingest_of_the_changed_source_keeps_the_fact(wiki: Wiki, repo: Path) -> None:
    """Adding a fact is not an edit of what ingest compiled: the entry still follows its
    source, and the fact stays."""
    _policy(wiki, repo)
    added = set_fact(wiki, KEY, "4", entry=PATH, author=ALICE)
    approve(wiki, added.proposal.name, approver=BOB)
    write(repo / "handbook" / "leave.md", POLICY.replace("two weeks", "three weeks"))
    report = ingest(wiki, [repo / "handbook" / "leave.md"], author=ALICE)
    assert report.conflicts == [] and report.updated == 1, report
    approve(wiki, report.proposal.name, approver=BOB)
    entry = wiki.snapshot().entry(PATH)
    assert "three weeks" in entry.body and entry.meta["facts"] == {KEY: 4}


def test_an_edit_that_changes_a_fact_stays_in_the_entry(wiki: Wiki, repo: Path) -> None:
    """The MCP and HTTP `propose` edit (authoring.edit_entry) keeps the fact in place too."""
    from wiki_cli.mcp_server import build_server

    _policy(wiki, repo)
    added = set_fact(wiki, KEY, "4", entry=PATH, author=ALICE)
    approve(wiki, added.proposal.name, approver=BOB)
    text = wiki.snapshot().read(PATH).decode().replace(f"{KEY}: 4", f"{KEY}: 5")
    _, tools = build_server(repo)
    proposed = tools.propose("edit", target=PATH, content=text)
    assert proposed["paths"] == [PATH], proposed
    approve(wiki, proposed["proposal"], approver=BOB)
    (fact,) = current(wiki, KEY)
    assert fact.value == 5 and fact.path == PATH


def test_a_changed_value_is_restated_in_the_prose_without_a_machine_line(wiki: Wiki,
                                                                         repo: Path) -> None:
    """An answer quoting the entry must not repeat the replaced value; a policy page gets
    the value replaced where it is written, not a `KEY is VALUE.` line of its own."""
    before = _policy(wiki, repo)
    added = set_fact(wiki, "leave.carryover_cap", "240", unit="hours", entry=PATH)
    approve(wiki, added.proposal.name, approver=BOB)
    changed = set_fact(wiki, "leave.carryover_cap", "200", unit="hours")
    approve(wiki, changed.proposal.name, approver=BOB)
    entry = wiki.snapshot().entry(PATH)
    assert "up to a cap of 200 hours" in entry.body and "240" not in entry.body
    assert "cap of 200 hours" in entry.summary and "240" not in entry.summary
    assert entry.body.startswith("# Annual leave") and "leave.carryover_cap" not in entry.body
    assert before.split("sources:")[1].split("created:")[0] in entry.to_bytes().decode()
    assert run_lint(wiki, {"W005"}).findings == []  # index.md follows the new summary


def test_a_superseded_entry_names_its_successor(wiki: Wiki, repo: Path) -> None:
    _policy(wiki, repo)
    old = wiki.snapshot().entry(PATH)
    new = ("---\ntitle: Annual leave 2027\n---\nAnnual leave accrues at five hours per pay "
           "period.\n")
    replaced = authoring.supersede_entry(wiki, old.id, new.encode(), author=ALICE)
    approve(wiki, replaced.proposal.name, approver=BOB)
    successor = wiki.snapshot().entry(PATH).meta["superseded_by"]
    with pytest.raises(ConfigError, match=f"superseded: name an active entry with --entry "
                                          rf"\(it was superseded by {successor[0]}\)"):
        set_fact(wiki, KEY, "5", entry=PATH)
