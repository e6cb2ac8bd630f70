"""Issue 15 part 10: a renamed source keeps its entries' ids (NFC/NFD spelling, ``git mv``
staged or committed, a plain move with the same content); nothing is retracted."""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

from conftest import ALICE, git, ingest_and_land, write

from wiki.ingest.pipeline import ingest
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki

LONG_SECTION = " ".join(f"word{i}" for i in range(120))
GUIDE = "# Guide\n\n" + "".join(f"## Part {n}\n\n{LONG_SECTION} {n}.\n\n"
                                for n in ("One", "Two", "Three", "Four", "Five"))


def _live(wiki: Wiki) -> dict[str, Entry]:
    """``entry id -> entry`` of the entries that are not retracted."""
    good, bad = wiki.snapshot().entries()
    assert bad == []
    return {e.id: e for e in good if e.status != "retracted"}


def _statuses(wiki: Wiki) -> dict[str, str]:
    good, _ = wiki.snapshot().entries()
    return {e.id: e.status for e in good}


def test_nfc_to_nfd_rename_keeps_the_id(wiki: Wiki, repo: Path) -> None:
    nfc = unicodedata.normalize("NFC", "café-rules.md")
    nfd = unicodedata.normalize("NFD", nfc)
    assert nfc != nfd
    write(repo / "kb" / nfc, "# Café rules\n\nThe café opens at eight and closes at five.\n")
    ingest_and_land(wiki, repo / "kb")
    (before,) = _live(wiki).values()
    os.rename(repo / "kb" / nfc, repo / "kb" / nfd)
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.added, report.retracted, report.updated) == (0, 0, 1)
    assert report.renamed == {f"git:kb/{nfd}": f"git:kb/{nfc}"}
    (after,) = _live(wiki).values()
    assert (after.id, after.path) == (before.id, before.path)
    assert after.sources[0].uri == f"git:kb/{nfd}"
    assert after.body.endswith(f"[1]: git:kb/{nfd}\n")
    assert _statuses(wiki) == {before.id: "active"}


def test_git_mv_staged_then_reingested_keeps_every_section_id(wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "guide.md", GUIDE)
    git(repo, "add", "kb")
    git(repo, "commit", "-q", "-m", "guide")
    ingest_and_land(wiki, repo / "kb")
    before = _live(wiki)
    assert len(before) == 5
    git(repo, "mv", "kb/guide.md", "kb/handbook.md")  # staged, not committed
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.added, report.retracted, report.updated) == (0, 0, 5)
    after = _live(wiki)
    assert set(after) == set(before)
    assert {e.path for e in after.values()} == {e.path for e in before.values()}
    assert {e.sources[0].uri for e in after.values()} == {"git:kb/handbook.md"}
    assert {e.sources[0].locator for e in after.values()} == \
        {e.sources[0].locator for e in before.values()}
    assert set(_statuses(wiki).values()) == {"active"}


def test_committed_git_mv_with_an_edit_keeps_the_id_and_takes_the_edit(
        wiki: Wiki, repo: Path) -> None:
    text = "# Leave\n\n" + "".join(f"Rule {i}: leave is booked in the tool.\n" for i in range(12))
    write(repo / "policies" / "leave.md", text)
    git(repo, "add", "policies")
    git(repo, "commit", "-q", "-m", "leave")
    ingest_and_land(wiki, repo / "policies")
    (before,) = _live(wiki).values()
    git(repo, "mv", "policies/leave.md", "policies/time-off.md")
    write(repo / "policies" / "time-off.md", text + "Rule 12: carry over five days.\n")
    git(repo, "commit", "-q", "-am", "rename and edit")
    report = ingest_and_land(wiki, repo / "policies")
    assert (report.added, report.retracted) == (0, 0)
    assert report.renamed == {"git:policies/time-off.md": "git:policies/leave.md"}
    (after,) = _live(wiki).values()
    assert after.id == before.id and after.path == before.path
    assert "carry over five days" in after.body
    assert after.sources[0].fingerprint != before.sources[0].fingerprint


def test_plain_move_of_a_file_outside_the_repository(wiki: Wiki, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    write(folder / "old-name.md", "# Parking\n\nParking permits are renewed each January.\n")
    ingest_and_land(wiki, folder)
    (before,) = _live(wiki).values()
    (folder / "old-name.md").rename(folder / "new-name.md")
    report = ingest_and_land(wiki, folder)
    assert (report.added, report.retracted) == (0, 0)
    (after,) = _live(wiki).values()
    assert after.id == before.id
    assert after.sources[0].uri == (folder / "new-name.md").resolve().as_uri()


def test_a_deleted_source_beside_an_unrelated_new_one_is_still_retracted(
        wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "a.md", "# A\n\nAlpha is the first letter.\n")
    ingest_and_land(wiki, repo / "kb")
    (old,) = _live(wiki).values()
    (repo / "kb" / "a.md").unlink()
    write(repo / "kb" / "b.md", "# B\n\nBravo is a different text altogether.\n")
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.added, report.retracted, report.renamed) == (1, 1, {})
    assert _statuses(wiki)[old.id] == "retracted"


def test_two_identical_moves_are_ambiguous_and_left_alone(wiki: Wiki, repo: Path) -> None:
    """Two gone sources with one text, one new file with that text: which one moved is
    not known, so no id is carried over (retract + new, as before)."""
    write(repo / "x" / "one.md", "# Same\n\nThe same words twice.\n")
    write(repo / "y" / "two.md", "# Same\n\nThe same words twice.\n")
    ingest_and_land(wiki, repo / "x", repo / "y")
    (repo / "x" / "one.md").rename(repo / "x" / "three.md")
    (repo / "y" / "two.md").unlink()
    report = ingest(wiki, [repo / "x", repo / "y"], author=ALICE)
    assert report.renamed == {} and (report.added, report.retracted) == (1, 2)


def test_renamed_back_and_unchanged_is_a_no_op_after_landing(wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "a.md", "# A\n\nAlpha text here.\n")
    ingest_and_land(wiki, repo / "kb")
    (repo / "kb" / "a.md").rename(repo / "kb" / "b.md")
    ingest_and_land(wiki, repo / "kb")
    again = ingest(wiki, [repo / "kb"], author=ALICE)
    assert (again.changed, again.proposal, again.renamed) == (0, None, {})


def test_cli_ingest_names_the_rename(wiki: Wiki, repo: Path, cli) -> None:
    write(repo / "kb" / "a.md", "# A\n\nAlpha text here.\n")
    ingest_and_land(wiki, repo / "kb")
    (repo / "kb" / "a.md").rename(repo / "kb" / "b.md")
    result = cli("ingest", str(repo / "kb"), "--json")
    assert result.exit_code == 0, result.stderr
    assert "renamed git:kb/a.md -> git:kb/b.md: its entries keep their ids" in result.stderr
    data = json.loads(result.stdout)
    assert data["renamed"] == {"git:kb/b.md": "git:kb/a.md"}
    assert (data["added"], data["retracted"], data["updated"]) == (0, 0, 1)


def test_hostile_uris_in_the_branch_neither_crash_nor_pair(wiki: Wiki, repo: Path) -> None:
    """Uris written by others: a name too long for the file system, a path leaving the
    repository, a file elsewhere on the disk; ingest of a new file is unaffected."""
    from conftest import BOB, entry_text

    from wiki.review.proposals import approve, propose

    long_name = "git:kb/" + "a" * 5000 + ".md"
    seeded = {f"kb/e{i}.md": entry_text(f"h{i}", f"Hostile {i}", "Text.", sources=(
        f'[{{uri: "{uri}", fingerprint: "sha256:{"0" * 64}"}}]'))
        for i, uri in enumerate([long_name, "git:../../etc/hosts", "file:///etc/hosts"])}
    proposal = propose(wiki, {p: t.encode() for p, t in seeded.items()}, base=None, kind="seed",
                          subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    write(repo / "kb" / "new.md", "# New\n\nA new text.\n")
    report = ingest(wiki, [repo / "kb"], author=ALICE)
    assert (report.added, report.renamed, report.skipped) == (1, {}, [])
