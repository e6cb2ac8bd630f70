"""Frontmatter types on ingest and on entries (issue 15, part 8): scalars of the text
fields keep the text the author wrote (YAML 1.1 reads ``yes`` as a bool and ``12:30`` as
750), and errors name the line of the file as its author sees it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from conftest import ALICE, write

from wiki.errors import EntryError
from wiki.ingest.pipeline import ingest
from wiki.knowledge.authoring import new_entry
from wiki.store.entry import Entry
from wiki.store.frontmatter import load_yaml, parse
from wiki.store.workspace import Wiki


def _entry(*lines: str) -> bytes:
    return ("---\n" + "\n".join(lines) + "\n---\nThe body of the entry.\n").encode()


@pytest.mark.parametrize(("written", "kept"), [
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("True", "True"),
    ("12:30", "12:30"), ("1e3", "1e3"), ("1.50", "1.50"), ("0x1F", "0x1F"), ("007", "007"),
    ("2026-01-01", "2026-01-01"), ("2026-01-01 10:00:00", "2026-01-01 10:00:00"),
    ("'yes'", "yes"), ('"12:30"', "12:30"), ("42", "42"),
])
def test_an_entry_title_keeps_the_text_written(written: str, kept: str) -> None:
    entry = Entry.parse("a.md", _entry("id: ab", f"title: {written}"))
    assert entry.title == kept and entry.meta["title"] == kept


def test_lists_summary_and_ids_keep_their_text_too() -> None:
    entry = Entry.parse("a.md", _entry("id: 1234", "title: Opening hours",
                                       "summary: 2026-01-01", "tags: [yes, on, 12:30]",
                                       "aliases:", "  - no", "  - off",
                                       "supersedes: 5678"))
    assert entry.id == "1234" and entry.summary == "2026-01-01"
    assert entry.tags == ["yes", "on", "12:30"] and entry.aliases == ["no", "off"]
    assert entry.meta["supersedes"] == "5678"


def test_other_fields_keep_their_yaml_types() -> None:
    entry = Entry.parse("a.md", _entry("id: ab", "title: t", "confidence: 0.5",
                                       "created: 2026-01-01", "reviewed: yes",
                                       "facts: {open: 12:30}"))
    assert entry.meta["confidence"] == 0.5
    assert entry.meta["created"] == dt.date(2026, 1, 1)
    assert entry.meta["reviewed"] is True  # an unknown field is the author's business
    assert entry.meta["facts"] == {"open": 750}


@pytest.mark.parametrize("written", ["null", "~", "", "Null"])
def test_a_null_title_is_no_title(written: str) -> None:
    """Decision: a YAML null is the absence of a value in every YAML version; it is not
    the text "null". A null title is refused, naming the line."""
    with pytest.raises(EntryError) as caught:
        Entry.parse("a.md", _entry("id: ab", f"title: {written}".rstrip()))
    assert caught.value.field == "title" and caught.value.line == 3
    assert "must be a non-empty string, got None" in str(caught.value)


def test_an_untouched_file_round_trips_byte_for_byte() -> None:
    data = _entry("id: ab", "title: yes", "tags: [yes, on]", "summary: 12:30",
                  "when: 12:30  # a comment")
    entry = Entry.parse("a.md", data)
    assert entry.to_bytes() == data
    edited = entry.updated_with(status="draft").to_bytes().decode()
    assert edited.startswith("---\nid: ab\ntitle: yes\ntags: [yes, on]\nsummary: 12:30\n"
                             "when: 12:30  # a comment\nstatus: draft\n")
    again = Entry.parse("a.md", edited.encode())
    assert again.title == "yes" and again.tags == ["yes", "on"] and again.summary == "12:30"


def test_a_changed_title_is_written_so_it_reads_back_as_text() -> None:
    entry = Entry.parse("a.md", _entry("id: ab", "title: t"))
    written = entry.updated_with(title="no").to_bytes()
    assert b"title: 'no'\n" in written
    assert Entry.parse("a.md", written).title == "no"


def test_callers_name_more_text_fields() -> None:
    assert load_yaml("keywords: [on, off]\n") == {"keywords": [True, False]}
    assert load_yaml("keywords: [on, off]\n", frozenset({"keywords"})) == {
        "keywords": ["on", "off"]}
    front = parse("---\nlabels: yes\n---\nbody\n", "s.md", text_fields=frozenset({"labels"}))
    assert front.data == {"labels": "yes"} and front.chunks == {"labels": "labels: yes\n"}


def test_ingest_keeps_the_sources_titles_tags_and_aliases(wiki: Wiki, repo: Path) -> None:
    sources = {
        "yes.md": "---\ntitle: yes\ntags: [yes, on]\n---\nThe answer to the survey was "
                  "positive this year.\n",
        "no.md": "---\ntitle: no\nkeywords: off\naliases: [12:30]\n---\nThe answer to the "
                 "survey was negative last year.\n",
        "lunch.md": "---\ntitle: 12:30\nsummary: 2026-01-01\n---\nLunch is served at half "
                    "past twelve every day.\n",
        "float.md": "---\ntitle: 1e3\n---\nA thousand units are ordered every quarter.\n",
    }
    paths = [write(repo / "docs" / name, text) for name, text in sources.items()]
    report = ingest(wiki, paths, author=ALICE)
    assert report.skipped == [] and report.added == 4
    entries = {e.path: e for e in wiki.snapshot(report.proposal.tip).entries()[0]}
    assert entries["docs/yes.md"].title == "yes"
    assert entries["docs/yes.md"].tags == ["yes", "on"]
    assert entries["docs/no.md"].title == "no" and entries["docs/no.md"].tags == ["off"]
    assert entries["docs/no.md"].aliases == ["12:30"]
    assert entries["docs/lunch.md"].title == "12:30"
    assert entries["docs/float.md"].title == "1e3"
    index = wiki.store.read_path(report.proposal.tip, "docs/index.md").decode()
    assert "[yes](yes.md)" in index and "[12:30](lunch.md)" in index


# -- line numbers ----------------------------------------------------------------------

BAD_TYPE = ["title: Opening hours", "summary: When the office opens.", "type: bogus"]


@pytest.mark.parametrize("with_id", [True, False])
def test_an_error_names_the_authors_line_with_and_without_an_id(
        wiki: Wiki, with_id: bool) -> None:
    lines = (["id: hours"] if with_id else []) + BAD_TYPE
    with pytest.raises(EntryError) as caught:
        new_entry(wiki, _entry(*lines), source_name="hours.md", author=ALICE)
    assert caught.value.field == "type"
    assert caught.value.line == len(lines) + 1  # the --- line, then the fields
    assert str(caught.value).startswith(f"hours.md:{len(lines) + 1}: field 'type'")


@pytest.mark.parametrize("with_id", [True, False])
def test_a_yaml_error_names_the_authors_line_with_and_without_an_id(
        wiki: Wiki, with_id: bool) -> None:
    lines = (["id: hours"] if with_id else []) + ["title: Hours", "tags: a: b",
                                                    "summary: s"]
    with pytest.raises(EntryError) as caught:
        new_entry(wiki, _entry(*lines), source_name="hours.md", author=ALICE)
    assert caught.value.line == len(lines) - 1 + 1  # the tags line


def test_the_cli_names_the_line_of_the_file_without_an_id(wiki: Wiki, repo: Path, cli) -> None:
    path = write(repo / "hours.md", _entry(*BAD_TYPE).decode())
    result = cli("propose", str(path))
    assert result.exit_code == 2, result.output
    assert "hours.md:4: field 'type': must be one of" in result.stderr


def test_a_source_frontmatter_error_names_its_line(wiki: Wiki, repo: Path) -> None:
    bad = write(repo / "docs" / "bad.md", "---\ntitle: yes\ntags: a: b\n---\nSome text "
                                          "that is long enough to compile.\n")
    report = ingest(wiki, [bad], author=ALICE)
    (skipped,) = report.skipped
    assert skipped.reason.endswith("bad.md:3: invalid YAML: mapping values are not "
                                   "allowed in this context"), skipped.reason
