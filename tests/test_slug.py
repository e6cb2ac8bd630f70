"""Slugs keep Unicode, are stable and never merge two entries (ROBUSTNESS F1-F2)."""

from __future__ import annotations

import unicodedata

import pytest

from wiki.store.slug import slug_path, slugify, unique_path


@pytest.mark.robustness("F1")
def test_names_a_careless_rule_would_merge_stay_distinct() -> None:
    taken: set[str] = set()
    paths = [unique_path("notes", slugify(n), taken)
             for n in ("my_file", "my-file", "my file")]
    assert paths == ["notes/my_file.md", "notes/my-file.md", "notes/my-file-2.md"]


@pytest.mark.robustness("F1")
def test_nfc_and_nfd_give_the_same_slug() -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    assert slugify(nfc) == slugify(nfd) == "café"


@pytest.mark.robustness("F2")
def test_non_latin_titles_get_stable_distinct_slugs() -> None:
    assert slugify("日本語のタイトル") == "日本語のタイトル"
    assert slugify("中文标题") == "中文标题"
    assert slugify("日本語のタイトル") != slugify("中文标题")
    assert slugify("Привет мир") == "привет-мир"
    assert slugify("🚀 Launch!") == "🚀-launch"


@pytest.mark.robustness("F1")
def test_symbols_only_and_reserved_names() -> None:
    assert slugify("{") == "entry-021fb596"  # the hash of the name: "}" is another file
    assert slugify("   ") == "entry"
    assert slugify("index") == "index-entry"
    assert slugify("CON") == "con-entry"
    taken: set[str] = set()
    assert unique_path("", slugify("{"), taken) == "entry-021fb596.md"
    assert unique_path("", slugify("}"), taken) == "entry-d10b36aa.md"


def test_shell_and_path_characters_are_removed() -> None:
    assert slugify("$(rm -rf ~); `x`") == "rm-rf-x"
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slug_path("Travel & Leave/../Per Diem") == "travel-leave/per-diem"


def test_case_insensitive_collisions_are_avoided() -> None:
    taken = {"notes/readme.md"}
    assert unique_path("notes", "README", taken) == "notes/README-2.md"


def test_long_names_are_cut() -> None:
    assert len(slugify("word " * 100)) <= 80
