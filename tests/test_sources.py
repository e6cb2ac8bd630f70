"""Canonical text and fingerprints (ROBUSTNESS F5), and unreadable sources (F6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from wiki.adapters.sources import canonical_text, fingerprint, read_text, source_uri
from wiki.errors import SourceError


@pytest.mark.robustness("F5")
def test_bom_crlf_and_trailing_spaces_do_not_change_the_fingerprint() -> None:
    plain = "# Title\n\nSome text.\nMore.\n"
    messy = "\ufeff# Title  \r\n\r\nSome text.\t\r\nMore.\r\n\r\n"
    assert canonical_text(messy) == canonical_text(plain) == "# Title\n\nSome text.\nMore."
    assert fingerprint(messy) == fingerprint(plain)
    assert fingerprint(plain).startswith("sha256:") and len(fingerprint(plain)) == 71


def test_content_change_changes_the_fingerprint() -> None:
    assert fingerprint("per diem is $59") != fingerprint("per diem is $68")


def test_frontmatter_and_whitespace_changes_are_configurable() -> None:
    a = "---\ntitle: A\n---\nBody  text.\n"
    b = "---\ntitle: A\nkeywords: [x]\n---\nBody text.\n\n\n"
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a, ignore_frontmatter=True, ignore_whitespace=True) == \
        fingerprint(b, ignore_frontmatter=True, ignore_whitespace=True)


@pytest.mark.robustness("F6")
def test_too_large_is_refused_before_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    with open(big, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse 50 MB file: never read into memory
    with pytest.raises(SourceError, match="too large: 52,428,800 bytes"):
        read_text(big, max_bytes=2_000_000, max_lines=50_000)


@pytest.mark.robustness("F6")
def test_too_many_lines_binary_and_bad_utf8(tmp_path: Path) -> None:
    log = tmp_path / "app.log"
    log.write_text("line\n" * 100_000)
    with pytest.raises(SourceError, match="100,001 lines"):
        read_text(log, max_bytes=10_000_000, max_lines=50_000)
    binary = tmp_path / "x.md"
    binary.write_bytes(b"abc\x00def")
    with pytest.raises(SourceError, match="binary"):
        read_text(binary, max_bytes=1000, max_lines=1000)
    latin = tmp_path / "l.md"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(SourceError, match="not UTF-8"):
        read_text(latin, max_bytes=1000, max_lines=1000)


def test_uri_is_repo_relative_inside_the_repo(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    inside = tmp_path / "docs" / "a.md"
    inside.write_text("x")
    assert source_uri(inside, tmp_path) == "git:docs/a.md"
    outside = tmp_path.parent / "elsewhere.md"
    assert source_uri(outside, tmp_path).startswith("file:///")
