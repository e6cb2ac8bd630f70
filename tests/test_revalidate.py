"""Revalidation at ask time (DESIGN.md §6): real git repositories, real adapters; reads
are counted by adapters registered through the registry, never by mocking our code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import BOB, acting_as, git, ingest_and_land, write

from wiki.adapters import ADAPTERS, Check, Recorded
from wiki.adapters.git_source import GitSource
from wiki.adapters.sources import fingerprint
from wiki.answering.ask import ask_for
from wiki.review.proposals import approve, list_proposals, propose
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki
from wiki_cli.payloads import answer_payload

OLD = ("# Leave\n\nAnnual leave is requested in the HR portal at least two weeks ahead.\n"
       "Sick leave needs no notice at all.\n")
NEW = OLD.replace("HR portal at least two weeks", "Leave app at least three weeks")
QUESTION = "how is annual leave requested?"


class CountingGit(GitSource):
    """The git adapter, counting whole reads and blob reads (registered for ``git``)."""

    reads: list[str] = []

    def read(self, uri: str) -> str:
        CountingGit.reads.append(uri)
        return super().read(uri)

    def _read_blob(self, path: str, sha: str) -> str:
        CountingGit.reads.append(f"blob:{path}")
        return super()._read_blob(path, sha)


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    CountingGit.reads = []
    monkeypatch.setitem(ADAPTERS, "git", CountingGit)
    return CountingGit.reads


def _build_leave(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "leave.md", OLD)
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "leave")
    ingest_and_land(wiki, repo / "docs")


@pytest.fixture
def leave(from_template) -> Wiki:
    return from_template(_build_leave)


def _edit(repo: Path, text: str) -> None:
    write(repo / "docs" / "leave.md", text)
    git(repo, "commit", "-q", "-am", "edit leave")


def test_unchanged_sources_are_checked_by_blob_id_and_never_read(leave: Wiki,
                                                                 counted: list[str]) -> None:
    answer = ask_for(leave, QUESTION)
    citation = answer.citations[0]
    assert (citation.checked, citation.stale, citation.unverifiable) == (True, False, False)
    assert not citation.current_source_used and citation.reason == ""
    assert answer.revalidation["checked"] == answer.revalidation["proven"] == 1
    assert answer.revalidation["reread"] == 0 and counted == []


def test_an_edited_source_answers_from_its_current_text_and_flags_the_entry(
        leave: Wiki, repo: Path, counted: list[str]) -> None:
    _edit(repo, NEW)
    answer = ask_for(leave, QUESTION)
    text = " ".join(t for t, _ in answer.sentences)
    assert "Leave app at least three weeks" in text and "HR portal" not in text
    citation = answer.citations[0]
    assert citation.stale and citation.current_source_used
    assert citation.stale_sources == ["git:docs/leave.md"]
    assert "changed since" in citation.reason and "answered from the current source" in \
        citation.reason
    assert answer.revalidation["update"] == ["git:docs/leave.md"]
    assert counted.count("git:docs/leave.md") == 1  # the changed source, read once
    assert ask_for(leave, QUESTION, revalidate=False).sentences[0][0].count("HR portal") == 1


def test_the_cli_warns_offers_the_update_and_exits_0(leave: Wiki, repo: Path, cli,
                                                     monkeypatch) -> None:
    _edit(repo, NEW)
    monkeypatch.chdir(repo)
    result = cli("ask", QUESTION)
    assert result.exit_code == 0, result.output
    assert "Leave app" in result.stdout and "HR portal" not in result.stdout
    entry_id = ask_for(leave, QUESTION).citations[0].entry_id
    assert f"warning: entry {entry_id} is out of date: its source git:docs/leave.md " \
           "changed since" in result.stdout
    assert "wiki ingest docs/leave.md" in result.stderr
    assert list_proposals(leave) == []  # nothing is written without --propose


def test_json_carries_the_revalidation_per_citation(leave: Wiki, repo: Path, cli) -> None:
    _edit(repo, NEW)
    data = json.loads(cli("ask", QUESTION, "--json").stdout)
    citation = data["citations"][0]
    assert {k: citation[k] for k in ("stale", "checked", "current_source_used")} == \
        {"stale": True, "checked": True, "current_source_used": True}
    assert citation["reason"].startswith("its source git:docs/leave.md changed since")
    assert data["warnings"] == [f"entry {citation['entry_id']} is out of date: "
                                f"{citation['reason']}"]
    assert data["update"]["uris"] == ["git:docs/leave.md"]
    assert data["update"]["command"].startswith("wiki ingest ")
    assert data["update"]["proposal"] is None and data["revalidation"]["reread"] == 1
    fresh = json.loads(cli("ask", QUESTION, "--json", "--no-revalidate").stdout)
    assert fresh["revalidation"] is None and fresh["update"] is None
    assert not fresh["citations"][0]["checked"]


def test_a_deleted_source_keeps_the_entry_flagged_unverifiable(leave: Wiki, repo: Path,
                                                               cli) -> None:
    git(repo, "rm", "-q", "docs/leave.md")
    git(repo, "commit", "-q", "-m", "remove leave")
    answer = ask_for(leave, QUESTION)
    assert "HR portal" in answer.sentences[0][0]
    citation = answer.citations[0]
    assert citation.unverifiable and not citation.stale and not citation.current_source_used
    assert "no longer exists" in citation.reason
    assert answer_payload(answer)["warnings"][0].startswith(
        f"entry {citation.entry_id} is unverifiable: its source git:docs/leave.md")
    result = cli("ask", QUESTION)
    assert result.exit_code == 0 and "is unverifiable" in result.stdout
    assert "wiki ingest" not in result.stderr  # nothing local to re-ingest


def test_propose_opens_one_update_that_once_approved_clears_the_flag(
        leave: Wiki, repo: Path, cli, monkeypatch) -> None:
    _edit(repo, NEW)
    monkeypatch.chdir(repo)
    first = cli("ask", QUESTION, "--propose")
    assert first.exit_code == 0, first.output
    proposals = list_proposals(leave)
    assert len(proposals) == 1 and f"proposed {proposals[0].name}" in first.stderr
    again = cli("ask", QUESTION, "--propose", "--json")
    assert json.loads(again.stdout)["update"] == {
        "uris": ["git:docs/leave.md"], "command": "wiki ingest docs/leave.md",
        "proposal": proposals[0].name, "created": False, "skipped": []}
    assert len(list_proposals(leave)) == 1  # the open one is reused
    with acting_as(BOB):
        approve(leave, proposals[0].name, approver=BOB)
    answer = ask_for(leave, QUESTION)
    assert not answer.citations[0].stale and "Leave app" in answer.sentences[0][0]
    assert answer.revalidation["proven"] == 1 and answer.revalidation["reread"] == 0
    nothing = cli("ask", QUESTION, "--propose")
    assert "nothing to propose" in nothing.stderr and len(list_proposals(leave)) == 0


LONG_INTRO = "This handbook page explains travel for staff members in some detail. " * 8
SECTION_A = ("## Per diem\n\n" + "Per diem covers meals and incidental expenses on travel. "
             * 6 + "\nThe per diem rate for Denver is 68 dollars a day.\n\n")
SECTION_B = ("## Vouchers\n\n" + "Vouchers are filed after every trip in the travel system. "
             * 6 + "\nA voucher is due within five business days of return.\n\n")
FILLER = "".join(f"## Topic {n}\n\n" + f"Topic {n} words about booking flights and hotels. "
                 * 8 + "\n\n" for n in range(8))


def _build_travel(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "travel.md", "# Travel\n\n" + LONG_INTRO + "\n\n" + SECTION_A +
          SECTION_B + FILLER)
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "travel")
    report = ingest_and_land(wiki, repo / "docs")
    assert report.added > 3  # split at its ## headings


@pytest.fixture
def travel(from_template) -> Wiki:
    return from_template(_build_travel)


def test_a_changed_section_is_matched_by_its_heading(travel: Wiki, repo: Path) -> None:
    page = repo / "docs" / "travel.md"
    page.write_text(page.read_text().replace("five business days", "ten business days"))
    git(repo, "commit", "-q", "-am", "longer")
    answer = ask_for(travel, "when is a travel voucher due after return?")
    text = " ".join(t for t, _ in answer.sentences)
    assert "ten business days" in text and "five business days" not in text
    stale = [c for c in answer.citations if c.stale]
    assert stale and "section 'Vouchers'" in stale[0].reason
    assert "Per diem" not in " ".join(t for t, n in answer.sentences if n == stale[0].number)
    other = ask_for(travel, "what is the per diem rate for Denver?")
    denver = [c for c in other.citations if "Per diem" in c.title][0]
    assert not denver.stale and denver.checked
    assert "but not in section 'Per diem'" in denver.reason
    assert other.revalidation["update"] == ["git:docs/travel.md"]  # its record is old


def test_budget_and_as_of_answers(leave: Wiki, repo: Path) -> None:
    _edit(repo, NEW)
    budgeted = ask_for(leave, QUESTION, budget=60)
    assert budgeted.citations[0].stale and "Leave app" in budgeted.sentences[0][0]
    past = ask_for(leave, QUESTION, as_of=__import__("datetime").datetime.now(
        __import__("datetime").UTC))
    assert past.revalidation is None and "HR portal" in past.sentences[0][0]


class MemoSource:
    """A test adapter for ``memo:NAME`` uris: texts in memory, versioned by an ETag; every
    byte read is counted (a fingerprint that needs the text, or :meth:`read`)."""

    texts: dict[str, tuple[str, str]] = {}  # name -> (etag, text)
    reads: list[str] = []

    def __init__(self, env):
        self.env = env

    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """Unchanged without reading when the ETag matches."""
        etag, text = self.texts[uri[5:]]
        if recorded.etag == etag:
            return Check(uri, recorded.fingerprint, validators={"etag": etag}, unchanged=True)
        self.reads.append(uri)
        return Check(uri, self.env.fingerprint(text), validators={"etag": etag})

    def read(self, uri: str) -> str:
        """The text."""
        self.reads.append(uri)
        return self.texts[uri[5:]][1]

    def close(self) -> None:
        """Nothing to release."""


def test_any_registered_adapter_is_revalidated_and_unchanged_ones_are_never_read(
        wiki: Wiki, monkeypatch) -> None:
    monkeypatch.setitem(ADAPTERS, "memo", MemoSource)
    MemoSource.reads = []
    text = "The parking permit desk is on floor three of the annex building."
    MemoSource.texts = {"parking": ("v1", text)}
    meta = {"id": "parking", "title": "Parking permits", "summary": text,
            "sources": [{"uri": "memo:parking", "fingerprint": fingerprint(text),
                         "checked_at": "2025-01-01T00:00:00Z", "etag": "v1"}]}
    proposal = propose(wiki, {"facilities/parking.md": Entry(
        "facilities/parking.md", meta, text + "\n").to_bytes()}, base=None, kind="new", subject="parking").proposal
    approve(wiki, proposal.name, approver=BOB)
    question = "where is the parking permit desk?"
    for _ in range(2):
        assert not ask_for(wiki, question).citations[0].stale
    assert MemoSource.reads == []
    MemoSource.texts = {"parking": ("v2", text.replace("three", "five"))}
    answer = ask_for(wiki, question)
    assert answer.citations[0].stale and "floor five" in answer.sentences[0][0]
    assert MemoSource.reads == ["memo:parking", "memo:parking"]  # fingerprint, then text
    assert answer.revalidation["update"] == []  # not a local file: no re-ingest offered


def test_a_stale_candidate_shows_its_best_current_sentence_even_below_the_floor(
        wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "requests.md", "# Internal hiring requests\n\n" + (
        "The internal hiring committee reviews internal hiring requests from every office. "
        "Internal hiring requests reach the internal hiring committee through the form. "
        "The internal hiring committee answers internal hiring requests in writing.\n"))
    write(repo / "docs" / "calendar.md", "# Calendar\n\nThe committee meets on Monday "
          "mornings at ten.\nBring your laptop to every meeting of the group.\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-q", "-m", "pages")
    ingest_and_land(wiki, repo / "docs")
    question = "when does the internal hiring committee review internal hiring requests?"
    before = ask_for(wiki, question)
    assert [c.path for c in before.citations] == ["docs/requests.md"]
    page = repo / "docs" / "calendar.md"
    page.write_text(page.read_text().replace("Monday", "Tuesday"))
    git(repo, "commit", "-q", "-am", "moved")
    after = ask_for(wiki, question)
    flagged = [c for c in after.citations if c.stale]
    assert [c.path for c in flagged] == ["docs/calendar.md"]
    shown = [t for t, n in after.sentences if n == flagged[0].number]
    assert shown == ["The committee meets on Tuesday mornings at ten."]
    assert after.sentences[:len(before.sentences)] == before.sentences


def test_mcp_ask_carries_the_same_fields(leave: Wiki, repo: Path) -> None:
    from wiki_cli.mcp_server import build_server

    _edit(repo, NEW)
    _, tools = build_server(repo)
    data = tools.ask(QUESTION)
    assert data["citations"][0]["stale"] and data["citations"][0]["current_source_used"]
    assert "Leave app" in data["answer"] and data["warnings"][0].startswith("entry ")


def test_a_file_source_outside_the_repository_is_revalidated_and_proposed(
        wiki: Wiki, tmp_path: Path, cli) -> None:
    page = write(tmp_path / "outside" / "leave.md", OLD)
    ingest_and_land(wiki, page)
    page.write_text(NEW)
    data = json.loads(cli("ask", QUESTION, "--json", "--propose").stdout)
    assert data["citations"][0]["stale"] and data["citations"][0]["sources"] == [
        page.resolve().as_uri()]
    assert data["update"]["created"] and len(list_proposals(wiki)) == 1
