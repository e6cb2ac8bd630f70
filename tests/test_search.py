"""Search: every ROBUSTNESS Q-case, filters, and index freshness (I1-I2)."""

from __future__ import annotations

import pytest
from conftest import ALICE, BOB, entry_text, git

from indexes.errors import EmptyQueryError
from wiki.answering.ask import ask_for
from wiki.answering.filters import NoMatchingEntriesError, filters_for
from wiki.answering.search import search_for
from wiki.errors import NotInitializedError
from wiki.review.proposals import approve, propose
from wiki.store.derived import rebuild
from wiki.store.workspace import Wiki

ENTRIES = {
    "decisions/dec-0054.md": entry_text("d54", "Database choice", "We decided DEC-0054: use Postgres."),
    "decisions/dec-0055.md": entry_text("d55", "Queue choice", "DEC 0055 was about queues; see dec and 0054 apart."),
    "releases/v.md": entry_text("rel", "Release notes", "Version 2026.4.10 ships v1.2.3 of src/store.ts and @scope/pkg on host:8080 via wiki://notes/x."),
    "travel/per-diem.md": entry_text("pd", "Per diem", "Per diem covers meals and incidental expenses on travel days."),
    "travel/lodging.md": entry_text("lod", "Lodging", "Hotels are booked through the travel system."),
    "ja/ml.md": entry_text("ja1", "機械学習の基礎", "機械学習の基礎について説明します。深層学習も扱います。"),
    "zh/db.md": entry_text("zh1", "数据库设计", "我们使用关系型数据库存储订单数据。"),
    "meta/fields.md": entry_text("meta1", "Field names", "Ordinary body text.", tags="[secretsauce]"),
    "old/superseded.md": entry_text("old1", "Old per diem", "Per diem was 40 dollars.", status="superseded"),
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


@pytest.mark.robustness("Q1")
@pytest.mark.parametrize("query", ["DEC-0054", '"DEC-0054"', "dec-0054"])
def test_hyphenated_identifier_finds_the_literal_first(populated: Wiki, query: str) -> None:
    assert _keys(populated, query)[0] == "decisions/dec-0054.md"
    assert "decisions/dec-0055.md" not in _keys(populated, query)  # not "dec NOT 0054"


@pytest.mark.robustness("Q2")
@pytest.mark.parametrize("query", ["2026.4.10", "v1.2.3", "src/store.ts", "@scope/pkg",
                                   "host:8080", "wiki://notes/x"])
def test_dotted_and_slashed_tokens(populated: Wiki, query: str) -> None:
    assert _keys(populated, query)[0] == "releases/v.md"


@pytest.mark.robustness("Q3")
@pytest.mark.parametrize("query", ['"', "status: done", "retry OR", "-only", "why?", "50%",
                                   "a,b", "(x", "*", "NEAR", "AND OR NOT", "x" * 20_000,
                                   "per diem " * 3000, "title:per", "^meals", "{near}"])
def test_punctuation_is_never_a_syntax_error(populated: Wiki, query: str) -> None:
    try:
        search_for(populated, query)
    except EmptyQueryError:
        assert not any(ch.isalnum() for ch in query)


@pytest.mark.parametrize("query", ["lodging's hotels", "Lodging’s hotels?", "lodgings' hotels"])
def test_a_possessive_searches_its_word(populated: Wiki, query: str) -> None:
    """Quoted whole, ``lodging's`` would be the phrase ``lodging s``, found only where the
    text spells the possessive too (chg-09: "TTS's core values")."""
    from indexes.retrieval.query import query_words

    assert query_words(query)[0].casefold().startswith("lodging")
    assert _keys(populated, query)[0] == "travel/lodging.md"
    assert query_words("rock'n'roll O'Brien l'été") == ["rock'n'roll", "O'Brien", "l'été"]


def test_a_word_and_the_same_word_ending_a_sentence_are_searched_once(tmp_path) -> None:
    """SciFact claims end in a full stop: "B cells ... by stromal cells." made the phrases
    ``"cells"`` and ``"cells."``, one FTS5 token, so BM25 counted it twice and read its
    postings twice. The ranking is now that of the word said once."""
    from indexes.documents import Document
    from indexes.retrieval.query import match_phrases, query_words
    from indexes.sqlite.engine import SearchIndex

    assert query_words("stromal cells activate B cells.") == ["stromal", "cells", "activate",
                                                              "B"]
    assert match_phrases("(Cells) and cells, cells!") == ['"(Cells)"']
    docs = [Document("a.md", "a", "A", body="cells cells cells cells cells stromal"),
            Document("b.md", "b", "B", body="stromal stromal stromal cells")]
    with SearchIndex(tmp_path / "x.sqlite") as index, index.transaction():
        index.upsert(docs)
    with SearchIndex(tmp_path / "x.sqlite") as index:
        once = [(h.key, round(h.score, 6)) for h in index.search_lexical("stromal cells")]
        ended = [(h.key, round(h.score, 6))
                 for h in index.search_lexical("stromal cells. cells")]
    assert ended == once


def test_get_as_a_passive_auxiliary_is_not_searched(wiki: Wiki) -> None:
    """"How does a proposal *get* approved?": "get" is a function word there, like "does";
    searched, it ranked the page naming the MCP tool ``get`` first (this project's demo)."""
    from indexes.retrieval.query import query_words

    pages = {"dev/tools.md": entry_text("tools1", "Agent tools", "The tools are search, ask, get and propose. "
                                    "Use get to read one proposal or page."),
             "dev/review.md": entry_text("rev1", "Review", "A proposal is approved by someone other "
                                     "than its author.")}
    proposal = propose(wiki, {p: t.encode() for p, t in pages.items()}, base=None,
                          kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    assert query_words("how does a proposal get approved?") == ["proposal", "approved?"]
    assert query_words("when do I get paid") == ["paid"]
    assert query_words("how do I get a PIV card") == ["get", "PIV", "card"]
    assert query_words("get token") == ["get", "token"]
    assert query_words("get") == ["get"]
    assert _keys(wiki, "how does a proposal get approved?", legs=("bm25",))[0] == "dev/review.md"
    assert _keys(wiki, "get proposal", legs=("bm25",))[0] == "dev/tools.md"


@pytest.mark.robustness("Q3")
@pytest.mark.parametrize("query", ["", "   ", "\t\n", '"', "*", "?!"])
def test_empty_queries_raise_a_clear_error(populated: Wiki, query: str) -> None:
    with pytest.raises(EmptyQueryError, match="no searchable words"):
        search_for(populated, query)


@pytest.mark.robustness("Q4")
def test_missing_terms_lower_the_rank_instead_of_emptying_it(populated: Wiki) -> None:
    keys = _keys(populated, "per diem meals incidental zebra unicorn")
    assert keys[0] == "travel/per-diem.md"
    assert _keys(populated, "lodging hotels travel")[0] == "travel/lodging.md"


@pytest.mark.robustness("Q4")
def test_robustness_q4_partial_matches_come_back_ranked_below_full_ones(populated: Wiki) -> None:
    keys = _keys(populated, "per diem meals travel")  # lodging.md has only "travel"
    assert keys[0] == "travel/per-diem.md"
    assert "travel/lodging.md" in keys[1:]


@pytest.mark.robustness("Q5")
@pytest.mark.parametrize(("query", "expected"), [("機械学習", "ja/ml.md"), ("深層学習", "ja/ml.md"),
                                                 ("学習", "ja/ml.md"), ("数据库", "zh/db.md"),
                                                 ("订单", "zh/db.md")])
def test_cjk_substrings_are_found(populated: Wiki, query: str, expected: str) -> None:
    assert _keys(populated, query)[0] == expected


@pytest.mark.robustness("Q6")
def test_nonsense_query_is_an_evidence_gap(populated: Wiki) -> None:
    result = search_for(populated, "zzqx plugh frobnicate")
    assert result.hits == [] and result.gap
    answer = ask_for(populated, "zzqx plugh frobnicate")
    assert answer.gap and answer.sentences == []
    log = (populated.state_dir / "gaps.jsonl").read_text()
    assert "zzqx plugh frobnicate" in log


@pytest.mark.robustness("Q6")
def test_partial_nonsense_has_low_confidence(populated: Wiki) -> None:
    result = search_for(populated, "per diem for quantum zzqx teleportation")
    assert result.hits and result.confidence < result.threshold


@pytest.mark.robustness("Q6")
def test_frontmatter_is_not_body_text(populated: Wiki) -> None:
    assert _keys(populated, "id") == []          # a key name matches nothing
    assert _keys(populated, "meta1") == []       # neither does an id value
    assert _keys(populated, "secretsauce") == ["meta/fields.md"]  # tags are their own field


def test_status_and_category_filters_apply_before_ranking(populated: Wiki) -> None:
    assert "old/superseded.md" not in _keys(populated, "per diem dollars")
    assert "old/superseded.md" in _keys(populated, "per diem dollars",
                                        filters=filters_for(include_superseded=True))
    assert _keys(populated, "per diem", filters=filters_for(category="travel")) == \
        ["travel/per-diem.md"]
    with pytest.raises(NoMatchingEntriesError, match="category 'trav'"):  # a whole folder
        _keys(populated, "per diem", filters=filters_for(category="trav"))


def test_ask_cites_entries_and_their_sources(populated: Wiki) -> None:
    answer = ask_for(populated, "what does per diem cover?")
    assert not answer.gap
    assert answer.sentences[0] == (
        "Per diem covers meals and incidental expenses on travel days.", 1)
    assert answer.citations[0].path == "travel/per-diem.md"
    assert answer.citations[0].entry_id == "pd"


@pytest.mark.robustness("I1")
def test_index_follows_edits_and_deletions_made_with_plain_git(populated: Wiki, tmp_path) -> None:
    assert _keys(populated, "lodging")[0] == "travel/lodging.md"
    view = tmp_path / "view"
    git(populated.root, "worktree", "add", "-q", str(view), "wiki")
    (view / "travel" / "lodging.md").unlink()
    (view / "travel" / "per-diem.md").write_text(
        entry_text("pd", "Per diem", "Per diem now covers only meals, mileage stipend."))
    git(view, "add", "-A")
    git(view, "commit", "-q", "-m", "hand edit")
    assert _keys(populated, "lodging hotels") == []
    assert _keys(populated, "mileage stipend")[0] == "travel/per-diem.md"
    assert search_for(populated, "mileage").commit == populated.head()


@pytest.mark.robustness("F3")
def test_invalid_entry_on_the_branch_is_left_out_not_fatal(populated: Wiki, tmp_path) -> None:
    view = tmp_path / "view"
    git(populated.root, "worktree", "add", "-q", str(view), "wiki")
    (view / "travel" / "lodging.md").write_text("---\ntitle: *broken\n---\nHotels\n")
    git(view, "commit", "-q", "-am", "break it")
    result = search_for(populated, "hotels per diem")
    assert "travel/lodging.md" not in [h.key for h in result.hits]
    assert result.sync.invalid and result.sync.invalid[0][0] == "travel/lodging.md"


@pytest.mark.robustness("I2")
def test_rebuild_without_a_wiki_branch_fails_clearly(repo) -> None:
    with pytest.raises(NotInitializedError, match="no wiki branch 'wiki'"):
        rebuild(Wiki(repo))


def test_rebuild_gives_the_same_results(populated: Wiki) -> None:
    before = _keys(populated, "per diem meals")
    report = rebuild(populated)
    assert report.added == len(ENTRIES)
    assert _keys(populated, "per diem meals") == before


def test_corrupt_database_is_rebuilt(populated: Wiki) -> None:
    search_for(populated, "per diem")
    path = populated.database_path()
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.write_bytes(b"this is not a sqlite database" * 100)
    report = rebuild(populated)
    assert report.added == len(ENTRIES)
    assert _keys(populated, "per diem meals")[0] == "travel/per-diem.md"
