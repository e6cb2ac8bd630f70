"""Property-based tests (hypothesis): the FTS query builder, frontmatter, slugs and the
``index.md`` generator. ``make fuzz`` runs the ``fuzz_*`` properties for a bounded time
with many more examples (scripts/fuzz.py, docs/decisions.md)."""

from __future__ import annotations

import os
import re
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from indexes.documents import Document
from indexes.errors import EmptyQueryError
from indexes.retrieval.query import MAX_WORDS, match_expression, query_words
from indexes.retrieval.text import has_token
from indexes.sqlite.engine import Filters, SearchIndex
from wiki.errors import EntryError
from wiki.store.entry import Entry
from wiki.store.frontmatter import TEXT_FIELDS, parse, render
from wiki.store.indextree import Listing, regenerate
from wiki.store.slug import slug_path, slugify, unique_path

settings.register_profile("fuzz", max_examples=500, deadline=None, database=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("tests", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("WIKI_HYPOTHESIS_PROFILE", "tests"))

_FOLDER = tempfile.mkdtemp(prefix="wiki-properties-")
_INDEX: list[SearchIndex] = []


def _shared_index() -> SearchIndex:
    """One index for the whole module (hypothesis runs many examples per test)."""
    if not _INDEX:
        index = SearchIndex(Path(_FOLDER) / "shared.sqlite")
        index.upsert([Document("a.md", "ea", "Travel vouchers", "File them in Concur.",
                               "DEC-0054 says v1.2.3 of src/store.ts; 旅行の精算は五日以内。",
                               aliases=("TV",), tags=("travel",))])
        _INDEX.append(index)
    return _INDEX[0]


# -- the FTS query builder ----------------------------------------------------------------

QUERY_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(['"', "'", "-", "*", ":", "(", ")", "^", "+", "NEAR", "OR",
                              "AND", "NOT", "NEAR/2", "{", "}", "?", "%", ",", "\\", "\x00",
                              "dec-0054", "v1.2.3", "旅行", "\u200b", " ", "\t", "\n",
                              "c++", "C#", "f#", ".NET", "->", "::", "std::vector<int>",
                              "@scope/pkg", "x86-64", "한국어", "ｶﾀｶﾅ", "น้ำ", "\u1100\u1161",
                              "e\u0301"]),
             max_size=30).map("".join),
)


@given(QUERY_TEXT)
@example("0\x00")  # FTS5 ended the quoted string at the NUL: "unterminated string"
def fuzz_query_builder(query: str) -> None:
    """Any string is an FTS5 query SQLite accepts (every leg), or an EmptyQueryError."""
    index = _shared_index()
    try:
        words = query_words(query)
    except EmptyQueryError:
        with pytest.raises(EmptyQueryError):
            index.search_lexical(query)
        return
    assert 0 < len(words) <= MAX_WORDS
    index.conn.execute("SELECT count(*) FROM docs_fts WHERE docs_fts MATCH ?",
                       [match_expression(query)]).fetchone()
    index.search_lexical(query, limit=5, filters=Filters(statuses=None))
    index.search_names(query, limit=5)


def test_any_query_is_accepted_by_sqlite() -> None:
    fuzz_query_builder()


WORD = st.text(st.characters(codec="utf-8", categories=("L", "N", "Pd", "Po", "Sm")),
               min_size=1, max_size=20)


@pytest.mark.robustness("Q1", "Q2", "Q4")
@given(st.lists(WORD, min_size=1, max_size=8), st.data())
def test_a_word_of_an_entry_finds_it(words: list[str], data) -> None:
    """ROBUSTNESS Q1/Q2/Q4 as a property: any word of a document finds it, alone or next
    to a missing word (unless it is a stopword, dropped when other words are left)."""
    word = data.draw(st.sampled_from(words))
    assume(has_token(word))
    with tempfile.TemporaryDirectory() as folder, \
            SearchIndex(Path(folder) / "i.sqlite") as index:
        index.upsert([Document("x.md", "ex", "Entry", "", " ".join(words)),
                      Document("y.md", "ey", "Other", "", "nothing in common here")])
        assert "x.md" in [h.key for h in index.search_lexical(word)]
        if query_words(f"{word} zzqxmissing") != ["zzqxmissing"]:  # not a stopword
            assert "x.md" in [h.key for h in index.search_lexical(f"{word} zzqxmissing")]


CODE_WORD = st.sampled_from([
    "c++", "C++", "C#", "f#", "J#", ".NET", "ASP.NET", "node.js", "x86-64", "->", "::",
    "std::vector<int>", "@scope/pkg", "g++", "Notepad++", "C++17", "i++", "--flag",
    "#include", "<T>", "0x1F", "obj->field", "ns::Type", "c+++", "a+b", "C#.", "docs#install",
    "C--", "A*", "D*", "C/C++", "i--", "*.md", "src/*", "well--"])
SCRIPT_PART = st.sampled_from([
    "東京", "Tower", "한국어", unicodedata.normalize("NFD", "한국어"), "ｶﾀｶﾅ", "カタカナ",
    "น้ำ", "café", unicodedata.normalize("NFD", "café"), "Ωmega", "Москва", "दिल्ली",
    "क़िला", "2026", "ß", "ﬁle", "ＡＢＣ", "\u1100\u1161\u11a8"])
MIXED_WORD = st.one_of(
    CODE_WORD,
    st.lists(SCRIPT_PART, min_size=1, max_size=3).map("".join),
    st.tuples(CODE_WORD, SCRIPT_PART).map("".join),
    st.tuples(SCRIPT_PART, CODE_WORD).map("".join))


@given(st.lists(MIXED_WORD, min_size=1, max_size=6), st.data())
@example(["C++", "vitamin"], None)
def fuzz_code_and_script_words(words: list[str], data) -> None:
    """Code-like tokens and mixed scripts: the index and the query tokenise a word the same
    way, so any word of a document finds it (and SQLite accepts every query)."""
    word = data.draw(st.sampled_from(words)) if data is not None else words[0]
    assume(has_token(word))
    with tempfile.TemporaryDirectory() as folder, \
            SearchIndex(Path(folder) / "i.sqlite") as index:
        index.upsert([Document("x.md", "ex", "Entry", "", " ".join(words)),
                      Document("y.md", "ey", "Other", "", "vitamin C and appendix C")])
        assert "x.md" in [h.key for h in index.search_lexical(word)], match_expression(word)
        index.search_lexical(" ".join(words), limit=5)
        index.search_names(word, limit=5)


def test_code_and_script_words_find_their_entry() -> None:
    fuzz_code_and_script_words()


# -- frontmatter ----------------------------------------------------------------------------

SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                   st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=40))
VALUE = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.text(st.characters(codec="utf-8"), min_size=1, max_size=8), inner,
                    max_size=4)), max_leaves=12)
KEY = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1,
              max_size=16)
BODY = st.text(st.characters(codec="utf-8", exclude_characters="\r"), max_size=200)
UNKNOWN = st.dictionaries(st.from_regex(r"x_[a-z0-9_]{1,10}", fullmatch=True), VALUE,
                          max_size=5)


@given(st.dictionaries(KEY.filter(lambda key: key not in TEXT_FIELDS), VALUE, max_size=6), BODY)
def test_render_then_parse_gives_the_same_fields_and_body(data: dict, body: str) -> None:
    """Any field but the text fields (whose scalars read back as the text written, by
    design: tests/test_faults_frontmatter.py) round-trips to the same value."""
    parsed = parse(render(data, body), "p.md")
    assert parsed.data == data and parsed.body == body


@pytest.mark.robustness("F4")
@given(UNKNOWN, BODY, st.text(min_size=1, max_size=60).filter(str.strip))
@example({"x_sep": "a\u2028b"}, "", "0\x85")  # dumped plain, NEL/LS read back as a space
@example({}, "", "---\n")  # a summary holding the delimiter's text is quoted, not a delimiter
def test_entries_round_trip_byte_for_byte_and_edits_keep_unknown_fields(
        extra: dict, body: str, summary: str) -> None:
    raw = render({"id": "e1", "title": "T", **extra}, body).encode("utf-8")
    entry = Entry.parse("e.md", raw)
    assert entry.to_bytes() == raw  # untouched: the same bytes
    edited = entry.updated_with(summary=summary).to_bytes().decode("utf-8")
    again = Entry.parse("e.md", edited.encode("utf-8"))
    assert again.meta == {"id": "e1", "title": "T", **extra, "summary": summary}
    # one frontmatter block: two delimiter lines (a value may hold the text "---")
    assert again.body == body
    assert edited[:len(edited) - len(body)].splitlines().count("---") == 2
    for key in extra:  # each unknown field keeps its exact lines
        assert entry.original.chunks[key] in edited


ENTRY_TEXT = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: ("---\n" + t).encode("utf-8", "surrogatepass")),
    st.lists(st.sampled_from(["---", "title: x", "id: 1", "title: *Italic*", "\ttab: 1",
                              "a: &a [*a]", "- list", "key: {", "type: null", "'q': 2",
                              "x: !!python/object:os.system", "C:\\path", "\ufeff", "\r\n",
                              "\n", "...", "title: [a, b]", "sources: [{uri: 1}]"]),
             max_size=15).map(lambda parts: "\n".join(parts).encode("utf-8")),
)


@given(ENTRY_TEXT)
def fuzz_frontmatter_parser(data: bytes) -> None:
    """Any bytes are an entry or an EntryError naming the file, never another exception;
    a parsed entry writes back its own bytes."""
    try:
        entry = Entry.parse("fuzz.md", data)
    except EntryError as error:
        assert str(error).startswith("fuzz.md")
        return
    assert entry.to_bytes() == data
    Entry.parse("fuzz.md", entry.updated_with(summary="s").to_bytes())


def test_any_bytes_parse_or_raise_entry_error() -> None:
    fuzz_frontmatter_parser()


# -- slugs -----------------------------------------------------------------------------------

UNSAFE = set(" /\\:*?\"'<>|#%&$`;!=+,[](){}^~\t\n\r")
BIDI_CONTROLS = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI", "LRM", "RLM",
                 "ALM"}


@given(st.text(max_size=120))
@example("\x9b31m")  # C1 control: a terminal escape in a file name
@example("invoice\u202efdp.md")  # RLO: reads as "invoice.pdf"
def test_slugs_are_safe_stable_and_idempotent(name: str) -> None:
    slug = slugify(name)
    assert slug and len(slug) <= 80 + len("-entry")
    assert not UNSAFE & set(slug) and all(unicodedata.category(c) != "Cc" for c in slug)
    assert all(unicodedata.bidirectional(c) not in BIDI_CONTROLS for c in slug)
    assert slug not in (".", "..") and not slug.startswith(("-", "."))
    assert slugify(slug) == slug
    assert slugify(unicodedata.normalize("NFD", name)) == slug


@given(st.lists(st.text(max_size=30), max_size=20))
def test_unique_paths_never_collide(names: list[str]) -> None:
    taken: set[str] = set()
    paths = [unique_path("folder", slugify(n), taken) for n in names]
    assert len({p.casefold() for p in paths}) == len(paths)


@given(st.text(max_size=80))
def test_slug_paths_stay_inside_the_wiki(path: str) -> None:
    folder = slug_path(path)
    assert not folder.startswith("/") and "//" not in folder
    assert all(part not in ("", ".", "..") for part in folder.split("/")) or folder == ""


# -- index.md ----------------------------------------------------------------------------------

SEGMENT = st.text(st.characters(codec="utf-8", exclude_characters="/<>\r\n\x00"), min_size=1,
                  max_size=10).filter(lambda s: s.strip(" .") == s and s not in ("index",))
ENTRIES = st.dictionaries(
    st.lists(SEGMENT, min_size=1, max_size=3).map(lambda parts: "/".join(parts) + ".md"),
    st.tuples(st.text(max_size=30), st.text(max_size=60)), max_size=15)


@given(ENTRIES, st.randoms(use_true_random=False))
def test_index_files_are_byte_stable_sorted_and_complete(entries: dict, rnd) -> None:
    def build(order: list[str], existing=lambda _path: None):
        folders = {p.rpartition("/")[0] for p in order} | {""}
        for p in order:  # and every ancestor
            parts = p.split("/")[:-1]
            folders |= {"/".join(parts[:i]) for i in range(1, len(parts))}
        return regenerate(order, folders, lambda p: Listing(*entries[p]), existing)

    paths = list(entries)
    first = build(paths)
    rnd.shuffle(paths)
    assert build(paths) == first  # input order does not matter
    assert build(paths, lambda path: (first.get(path) or b"").decode() or None) == first
    folders = {p.rpartition("/")[0] for p in entries}
    for folder in folders:
        prefix = f"{folder}/" if folder else ""
        names = [p[len(prefix):] for p in entries if p.rpartition("/")[0] == folder]
        expected = sorted(names, key=lambda n: (entries[prefix + n][0].casefold(), n))
        text = first[prefix + "index.md"].decode().split("## Entries\n", 1)[1]
        listed = [LINK.match(line)[1].strip("<>") for line in text.split("\n")
                  if line.startswith("- [")]
        assert listed == expected  # each entry once, sorted by title then name


LINK = re.compile(r"^- \[(?:\\.|[^\\\]])*\]\((<[^>]*>|[^)]*)\)")
