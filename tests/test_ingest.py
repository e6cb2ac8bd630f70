"""Ingest: sources to entries as a proposal; unchanged is a no-op; bad files are skipped."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import ALICE, git, ingest_and_land, write

from wiki.ingest.pipeline import ingest
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki

LONG_SECTION = " ".join(f"word{i}" for i in range(120))


def _entries(wiki: Wiki) -> dict[str, Entry]:
    good, bad = wiki.snapshot().entries()
    assert bad == []
    return {e.path: e for e in good}


def test_ingest_compiles_sources_into_entries(wiki: Wiki, repo: Path) -> None:
    write(repo / "docs" / "travel" / "per-diem.md",
          "---\ntitle: Per Diem\nkeywords: [travel, money]\naliases: [M&IE]\n---\n"
          "Per diem covers meals. It is paid daily.\n")
    write(repo / "docs" / "notes.txt", "Plain text notes about the office.\n")
    report = ingest_and_land(wiki, repo / "docs")
    assert (report.sources, report.added, report.skipped) == (2, 2, [])
    entries = _entries(wiki)
    assert set(entries) == {"docs/travel/per-diem.md", "docs/notes.md"}
    entry = entries["docs/travel/per-diem.md"]
    assert entry.title == "Per Diem"
    assert entry.summary == "Per diem covers meals. It is paid daily."
    assert entry.tags == ["travel", "money"] and entry.aliases == ["M&IE"]
    assert entry.sources[0].uri == "git:docs/travel/per-diem.md"
    assert entry.sources[0].fingerprint.startswith("sha256:")
    assert entry.body.endswith("[1]: git:docs/travel/per-diem.md\n")
    assert "[Per Diem](per-diem.md)" in wiki.snapshot().read("docs/travel/index.md").decode()
    assert git(repo, "status", "--porcelain") == "?? docs/"  # the work tree is untouched


def test_reingesting_unchanged_sources_changes_nothing(wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "a.md", "# A\n\nAlpha text here.\n")
    ingest_and_land(wiki, repo / "kb")
    head = wiki.head()
    # CRLF, BOM, trailing spaces and a frontmatter-only edit are not content changes
    (repo / "kb" / "a.md").write_bytes(b"\xef\xbb\xbf---\nx: 1\n---\n# A  \r\n\r\nAlpha text here.\r\n")
    report = ingest(wiki, [repo / "kb"], author=ALICE)
    assert (report.unchanged_sources, report.changed, report.proposal) == (1, 0, None)
    assert wiki.head() == head


def test_changed_source_updates_its_entry_in_place(wiki: Wiki, repo: Path) -> None:
    source = write(repo / "kb" / "a.md", "---\ntitle: A\n---\nThe limit is 10.\n")
    ingest_and_land(wiki, repo / "kb")
    before = _entries(wiki)["kb/a.md"]
    source.write_text("---\ntitle: A\n---\nThe limit is 20.\n")
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.added, report.updated) == (0, 1)
    after = _entries(wiki)["kb/a.md"]
    assert after.id == before.id and after.meta["created"] == before.meta["created"]
    assert "The limit is 20." in after.body
    assert after.sources[0].fingerprint != before.sources[0].fingerprint


def test_long_source_is_split_at_headings(wiki: Wiki, repo: Path) -> None:
    text = "---\ntitle: Guide\n---\nIntro.\n\n" + "".join(
        f"## Part {n}\n\n{LONG_SECTION}\n\n" for n in ("One", "Two", "Three", "Four", "Five", "Six"))
    write(repo / "kb" / "guide.md", text)
    ingest_and_land(wiki, repo / "kb")
    entries = _entries(wiki)
    assert sorted(entries) == [f"kb/guide--part-{n}.md" for n in
                               ("five", "four", "one", "six", "three", "two")]
    assert entries["kb/guide--part-one.md"].title == "Guide: Part One"
    assert entries["kb/guide--part-one.md"].body.startswith("Intro.")  # short intro merged
    assert {e.sources[0].locator for e in entries.values()} == \
        {"Part One", "Part Two", "Part Three", "Part Four", "Part Five", "Part Six"}
    # a section that disappears is retracted, never deleted
    write(repo / "kb" / "guide.md", text.replace(f"## Part Five\n\n{LONG_SECTION}\n\n", ""))
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.retracted, report.updated) == (1, 5)
    assert _entries(wiki)["kb/guide--part-five.md"].status == "retracted"


@pytest.mark.robustness("F3")
def test_bad_files_are_reported_and_skipped_and_left_unchanged(wiki: Wiki, repo: Path) -> None:
    bad_yaml = b"---\ntitle: *Italic*\n---\nbody\n"
    write(repo / "kb" / "good.md", "# Good\n\nGood text.\n")
    (repo / "kb" / "bad.md").write_bytes(bad_yaml)
    (repo / "kb" / "unclosed.md").write_bytes(b"---\ntitle: x\nbody\n")
    (repo / "kb" / "binary.md").write_bytes(b"\x00\x01")
    report = ingest(wiki, [repo / "kb", repo / "missing"], author=ALICE)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(reasons) == {"bad.md", "unclosed.md", "binary.md", "missing"}
    assert "bad.md:2" in reasons["bad.md"] and "invalid YAML" in reasons["bad.md"]
    assert "never closed" in reasons["unclosed.md"]
    assert "binary" in reasons["binary.md"]
    assert report.added == 1
    assert (repo / "kb" / "bad.md").read_bytes() == bad_yaml


def test_sources_without_text_are_skipped_not_compiled_to_empty_entries(
        wiki: Wiki, repo: Path, cli) -> None:
    write(repo / "kb" / "good.md", "# Good\n\nGood text.\n")
    write(repo / "kb" / "empty.md", "")
    write(repo / "kb" / "blank.txt", "  \n\n\t\n")
    write(repo / "kb" / "front-only.md", "---\ntitle: Just a title\ntags: [x]\n---\n\n")
    report = ingest(wiki, [repo / "kb"], author=ALICE)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons == dict.fromkeys(["empty.md", "blank.txt", "front-only.md"],
                                    "no text to compile (empty, or frontmatter only)")
    assert report.added == 1
    result = cli("ingest", str(repo / "kb" / "empty.md"))
    assert "skipped kb/empty.md: no text to compile" in result.output.replace("\\", "/")


@pytest.mark.robustness("F1")
def test_file_names_a_careless_slug_would_merge(wiki: Wiki, repo: Path) -> None:
    for name in ("my_file.md", "my-file.md", "my file.md", "café.md", "{.md", "日本語.md"):
        write(repo / "kb" / name, f"# {name}\n\nText of {name}.\n")
    report = ingest_and_land(wiki, repo / "kb")
    assert report.added == 6
    paths = set(_entries(wiki))
    assert len(paths) == 6
    assert {"kb/my_file.md", "kb/café.md", "kb/日本語.md", "kb/entry-021fb596.md"} <= paths
    for path in paths:  # every returned path opens
        assert wiki.snapshot().read(path)


@pytest.mark.robustness("F1")
def test_robustness_f1_nfc_and_nfd_names_stay_distinct_are_indexed_and_open(
        wiki: Wiki, repo: Path, cli) -> None:
    import unicodedata

    from wiki.answering.search import search_for
    nfc, nfd = (unicodedata.normalize(form, "café.md") for form in ("NFC", "NFD"))
    write(repo / "kb" / nfc, "# Cafe one\n\nThe espresso machine is on floor two.\n")
    write(repo / "kb" / nfd, "# Cafe two\n\nThe tea kettle is on floor three.\n")
    write(repo / "kb" / "{.md", "# Brace\n\nThe brace file mentions gnocchi.\n")
    assert len(list((repo / "kb").iterdir())) == 3  # two café files on this file system
    report = ingest_and_land(wiki, repo / "kb")
    assert report.added == 3 and report.skipped == []
    paths = set(_entries(wiki))
    assert len(paths) == 3  # never merged into one entry
    found = {}
    for word in ("espresso", "kettle", "gnocchi"):
        hits = search_for(wiki, word).hits
        assert len(hits) == 1, (word, hits)
        found[word] = hits[0].key
    assert len(set(found.values())) == 3 and set(found.values()) == paths
    for word, path in found.items():  # every returned path opens, in the API and the CLI
        assert word.encode() in wiki.snapshot().read(path)
        shown = cli("show", path)
        assert shown.exit_code == 0 and word in shown.stdout, shown.output


def test_dry_run_and_category_mapping(wiki: Wiki, repo: Path) -> None:
    write(repo / "pages" / "hr" / "leave.md", "# Leave\n\nAnnual leave rules.\n")
    report = ingest(wiki, [repo / "pages"], author=ALICE, dry_run=True)
    assert report.added == 1 and report.proposal is None
    config = wiki.snapshot().read("wiki.toml").decode().replace(
        '# "pages/" = ""', '"pages/" = ""')
    from conftest import BOB

    from wiki.review.proposals import approve, propose
    proposal = propose(wiki, {"wiki.toml": config.encode()}, base=None, kind="config",
                          subject="map pages/ to the root", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    ingest_and_land(wiki, repo / "pages")
    assert "hr/leave.md" in _entries(wiki)


@pytest.mark.robustness("W1")
def test_same_content_proposed_twice_points_at_the_first(wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "a.md", "# A\n\nText.\n")
    first = ingest(wiki, [repo / "kb"], author=ALICE)
    time.sleep(1.1)  # the second run stamps a different time: still the same proposal
    second = ingest(wiki, [repo / "kb"], author=ALICE)
    assert first.proposal_created and not second.proposal_created
    assert second.proposal.name == first.proposal.name


@pytest.mark.robustness("F6")
def test_huge_sources_are_skipped_with_a_reason_and_the_run_goes_on(wiki: Wiki,
                                                                   repo: Path) -> None:
    write(repo / "kb" / "small.md", "# Small\n\nSmall text.\n")
    with open(repo / "kb" / "huge.md", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    (repo / "kb" / "app.txt").write_text("log line\n" * 100_000)
    report = ingest(wiki, [repo / "kb"], author=ALICE)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons["huge.md"].startswith("too large: 52,428,800 bytes")
    assert reasons["app.txt"].startswith("too large: 100,001 lines")
    assert report.added == 1


def test_deleted_sources_retract_their_entries(wiki: Wiki, repo: Path) -> None:
    write(repo / "kb" / "keep.md", "# Keep\n\nKept text.\n")
    gone = write(repo / "kb" / "gone.md", "# Gone\n\nOkapis live in forests.\n")
    ingest_and_land(wiki, repo / "kb")
    gone.unlink()
    report = ingest_and_land(wiki, repo / "kb")
    assert (report.retracted, report.added, report.updated) == (1, 0, 0)
    assert _entries(wiki)["kb/gone.md"].status == "retracted"
    from wiki.answering.search import search_for
    assert search_for(wiki, "okapis forests").hits == []


def test_a_pipe_or_socket_in_a_source_folder_is_reported_not_opened(wiki: Wiki, repo: Path) -> None:
    """A FIFO named like a source (``notes.md``) would block the read forever; it was left
    out without a word. Now it is skipped and said, and the other files are ingested."""
    import os
    import socket

    write(repo / "kb" / "ok.md", "# Ok\n\nInside text.\n")
    os.mkfifo(repo / "kb" / "notes.md")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(repo / "kb" / "live.md"))
        report = ingest(wiki, [repo / "kb"], author=ALICE)
    assert sorted((Path(s.path).name, s.reason) for s in report.skipped) == \
        [("live.md", "not a regular file"), ("notes.md", "not a regular file")]
    assert report.added == 1


def test_symlinks_are_not_followed(wiki: Wiki, repo: Path, tmp_path: Path) -> None:
    secret = write(tmp_path / "outside" / "secret.md", "# Secret\n\nOutside text.\n")
    write(repo / "kb" / "ok.md", "# Ok\n\nInside text.\n")
    (repo / "kb" / "link.md").symlink_to(secret)
    report = ingest(wiki, [repo / "kb"], author=ALICE)
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == \
        [("link.md", "symbolic link (not followed)")]
    assert report.added == 1


def test_plain_text_keeps_underscores_inside_words_and_drops_emphasis() -> None:
    """CommonMark: `include_superseded` and `as_of` are words, `_this_` is emphasis (a
    user saw "includesuperseded" quoted in an answer)."""
    from wiki.store.markdown_text import inline_plain

    assert inline_plain("pass include_superseded or as_of, not checked_at") == \
        "pass include_superseded or as_of, not checked_at"
    assert inline_plain("a _real_ one, __strong__, **bold**, *it*") == \
        "a real one, strong, bold, it"
    assert inline_plain("| `as_of` | the_date |") == "| as_of | the_date |"


def test_a_source_replaced_by_a_pipe_or_device_is_never_read(wiki: Wiki, repo: Path) -> None:
    """A FIFO blocks a read forever and ``/dev/zero`` never ends; both have size 0, so the
    size limit let them through. ``read_text`` refuses anything but a regular file, for
    every reader of sources (ingest, lint's source check, ask's revalidation)."""
    import os
    import subprocess
    import sys

    from wiki.adapters.sources import read_text
    from wiki.errors import SourceError

    for special in (repo, Path("/dev/zero")):  # the folder first: old code read /dev/zero forever
        with pytest.raises(SourceError, match="not a regular file"):
            read_text(special, max_bytes=1000, max_lines=10)
    source = write(repo / "kb" / "a.md", "# Okapis\n\nOkapis live in forests.\n")
    ingest_and_land(wiki, repo / "kb")
    source.unlink()
    os.mkfifo(source)
    with pytest.raises(SourceError, match="not a regular file"):
        read_text(source, max_bytes=1000, max_lines=10)
    done = subprocess.run([sys.executable, "-m", "wiki_cli", "-C", str(repo), "lint", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "source git:kb/a.md is not a file" in done.stdout
