"""Query faults of issue 15 part 9: code-like names (C++, C#, F#, .NET) are not the letter
``c``; words of scripts whose NFKC form differs from what was typed are found inside
unspaced text; a query past MAX_WORDS says what it ignored (stderr and ``--json``)."""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from pathlib import Path

import pytest
from conftest import ALICE, BOB, entry_text

from indexes.documents import Document
from indexes.retrieval.names import fold_name
from indexes.retrieval.passages import rank_passages
from indexes.retrieval.query import MAX_WORDS, match_expression, truncation
from indexes.retrieval.text import code_tokens
from indexes.sqlite.engine import MIGRATIONS, SearchIndex
from wiki.answering.search import search_for
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki

ENTRIES = {
    "lang/cpp.md": entry_text("cpp", "C++ templates", "Templates in C++ are instantiated per "
                              "type; the compiler is g++ or clang."),
    "lang/csharp.md": entry_text("cs", "C# services", "Our services are written in C# on "
                                 ".NET 8 and deployed as containers."),
    "lang/fsharp.md": entry_text("fs", "F# pipelines", "Data pipelines use F# type providers."),
    "ref/appendix-c.md": entry_text("apc", "Appendix C", "Appendix C lists form C, schedule "
                                    "C, part C and annex F of the templates, services and "
                                    "pipelines; F is final."),
    "health/vitamin-c.md": entry_text("vc", "Vitamin C", "Vitamin C (C for citrus) keeps "
                                      "services staff healthy; take C daily."),
    "ko/lang.md": entry_text("ko", "Language course", "저는매일한국어를공부합니다"),
    "ja/kana.md": entry_text("ja", "Writing practice", "毎日カタカナを書く練習をします"),
    "th/water.md": entry_text("th", "Drinking", "ควรดื่มน้ำเย็นทุกวัน"),
}


def _seed(wiki: Wiki, repo) -> None:
    proposal = propose(wiki, {p: t.encode() for p, t in ENTRIES.items()}, base=None, kind="seed",
                          subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


@pytest.fixture
def populated(from_template) -> Wiki:
    return from_template(_seed)


def _keys(wiki: Wiki, query: str, **kwargs) -> list[str]:
    return [h.key for h in search_for(wiki, query, **kwargs).hits]


# -- code-like names ------------------------------------------------------------------------

@pytest.mark.parametrize(("query", "expected"), [
    ("C++", "lang/cpp.md"), ("c++", "lang/cpp.md"), ("C#", "lang/csharp.md"),
    ("F#", "lang/fsharp.md"), ("C++ templates", "lang/cpp.md"),
    ("C# services", "lang/csharp.md"), ("F# pipelines", "lang/fsharp.md"),
    (".NET", "lang/csharp.md"), ("csharp", "lang/csharp.md"), ("g++", "lang/cpp.md")])
def test_code_names_rank_their_entry_first(populated: Wiki, query: str, expected: str) -> None:
    keys = _keys(populated, query)
    assert keys[0] == expected
    for letter_c in ("ref/appendix-c.md", "health/vitamin-c.md"):
        assert letter_c not in keys or keys.index(letter_c) > keys.index(expected)


def test_the_letter_c_alone_still_finds_every_c(populated: Wiki) -> None:
    keys = set(_keys(populated, "C"))
    assert {"ref/appendix-c.md", "health/vitamin-c.md", "lang/cpp.md",
            "lang/csharp.md"} <= keys


def test_code_names_are_not_each_other(populated: Wiki) -> None:
    assert "lang/csharp.md" not in _keys(populated, "C++", legs=("bm25",))
    assert "lang/cpp.md" not in _keys(populated, "C#", legs=("bm25",))
    assert "lang/csharp.md" not in _keys(populated, "F#", legs=("bm25",))
    assert _keys(populated, "C++", legs=("alias",)) == []  # no title is just "C++"


def test_titles_fold_apart() -> None:
    assert fold_name("C++") == "c cplusplus" and fold_name("C#") == "c csharp"
    assert fold_name("c++") == fold_name("C++") != fold_name("C")


@pytest.mark.parametrize(("text", "spelled"), [
    ("C++17", "c++ cplusplus 17"), ("Notepad++", "notepad++ notepadplusplus "),
    ("j#", "j# jsharp "), ("ASP.NET", "asp.net"), ("docs#install", "docs#install"),
    ("std::vector<int>", "std::vector<int>"), ("a+b", "a+b"), ("#tag", "#tag"),
    ("x86-64", "x86-64"), ("node.js", "node.js")])
def test_code_tokens_spell_only_code_names(text: str, spelled: str) -> None:
    assert code_tokens(text).lower() == spelled


def test_passages_rank_with_the_same_rule() -> None:
    ranked = rank_passages("C++", ["Vitamin C is good.", "We write C++ daily."])
    assert [i for i, _ in ranked] == [1]


def test_an_index_of_schema_4_is_rebuilt_with_the_code_rule(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for number in range(4):
        conn.executescript(MIGRATIONS[number])
    conn.execute("PRAGMA user_version = 4")
    conn.execute("INSERT INTO docs(key, doc_id, title, aliases, tags, summary, body, status, "
                 "category, doc_type, content_hash, extra) VALUES ('k.md', 'k', 'C++ notes', "
                 "'', '', '', 'About C++.', 'active', '', 'note', 'h', '{}')")
    conn.commit()
    conn.close()
    with SearchIndex(path) as index:
        assert index.conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert [h.key for h in index.search_lexical("C++")] == ["k.md"]
        assert index.content_hashes() == {"k.md": ""}  # re-indexed by the next sync
        index.upsert([Document("k.md", "k", "C# notes", "", "About C#.")])
        assert index.search_lexical("C++") == [] and [h.key for h in index.search_lexical("C#")] == ["k.md"]
        index.delete(["k.md"])
        assert index.search_lexical("C#") == []
        assert index.conn.execute(
            "INSERT INTO docs_fts(docs_fts) VALUES ('integrity-check')") is not None


# -- normalisation inside unspaced text -----------------------------------------------------

@pytest.mark.parametrize(("typed", "expected"), [
    (unicodedata.normalize("NFD", "한국어"), "ko/lang.md"),      # conjoining jamo
    ("ｶﾀｶﾅ", "ja/kana.md"),                                        # half-width katakana
    ("น้ำ", "th/water.md"),                                        # SARA AM: NFKC splits it
    (unicodedata.normalize("NFD", "공부"), "ko/lang.md")])
def test_a_word_typed_in_another_normal_form_is_found_inside_unspaced_text(
        populated: Wiki, typed: str, expected: str) -> None:
    assert unicodedata.normalize("NFKC", typed) != typed
    assert _keys(populated, typed)[:1] == [expected]


def test_normalised_cjk_words_count_for_confidence(populated: Wiki) -> None:
    result = search_for(populated, unicodedata.normalize("NFD", "한국어"))
    assert result.hits and not result.gap


# -- truncation ----------------------------------------------------------------------------

LONG = " ".join(f"word{i}" for i in range(70))


def test_truncation_counts_the_words_left_out() -> None:
    assert truncation(LONG) == {"kept": MAX_WORDS, "dropped": 6}
    assert truncation("per diem " * 3000) is None  # repeats are one word each
    assert truncation("the " * 100 + " ".join(f"w{i}" for i in range(64))) is None
    assert truncation("") is None
    assert match_expression(LONG).count(" OR ") == MAX_WORDS - 1


def test_a_70_word_query_says_so_on_stderr_and_in_json(populated: Wiki, cli) -> None:
    query = "C++ templates " + LONG
    plain = cli("search", query)
    assert "only the first 64 were searched (8 ignored)" in plain.stderr
    assert "only the first" not in plain.stdout
    data = cli("search", query, "--json")
    payload = json.loads(data.stdout)
    # exit 1 when the filler words leave no confident hit (issue 17.6), else 0
    assert data.exit_code == plain.exit_code == (1 if payload["gap"] else 0), plain.stderr
    assert payload["truncated"] == {"kept": 64, "dropped": 8}
    assert payload["hits"][0]["path"] == "lang/cpp.md"
    assert "8 ignored" in data.stderr
    short = json.loads(cli("search", "C++", "--json").stdout)
    assert short["truncated"] is None


def test_ask_reports_truncation_too(populated: Wiki, cli) -> None:
    answered = cli("ask", "F# pipelines " + LONG, "--json")
    assert answered.exit_code in (0, 3), answered.stderr
    assert json.loads(answered.stdout)["truncated"] == {"kept": 64, "dropped": 8}
    assert "8 ignored" in answered.stderr
