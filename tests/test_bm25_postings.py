"""The BM25 leg of a large SQLite index scores FTS5's postings copied into arrays
(indexes/sqlite/postings.py, indexes/retrieval/bm25_arrays.py) and returns what FTS5's
whole OR query returns: the same documents in the same order with the same scores, to the
last bit, under every filter, for phrases of several tokens, and between builds while
documents are written, updated and deleted (those rows are scored by FTS5 itself).

Real SQLite indexes of Zipf-distributed words (tests/zipf_corpus.py) with the size from
which postings are kept lowered, so a few hundred documents exercise every path."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zipf_corpus import FILTERS, PAIRS, VOCABULARY, corpus, whole_query, with_pairs

from indexes.documents import Document
from indexes.retrieval.filters import Filters
from indexes.sqlite import postings
from indexes.sqlite.engine import SearchIndex


def _documents(size: int = 600, seed: int = 7) -> list[Document]:
    """The Zipf corpus with some bodies holding the hyphenated pairs."""
    return with_pairs(size, seed=seed)


def _open(path: Path, documents: list[Document]) -> SearchIndex:
    index = SearchIndex(path)
    index.postings_from = 100
    with index.transaction():
        index.upsert(documents)
    assert index.settle() is True
    return index


_SHARED: list[SearchIndex] = []


def _shared(tmp_path_factory: pytest.TempPathFactory) -> SearchIndex:
    """One built index for the read-only tests (hypothesis runs many examples)."""
    if not _SHARED:
        folder = tmp_path_factory.mktemp("postings")
        _SHARED.append(_open(folder / "postings.sqlite", _documents()))
    return _SHARED[0]


def _ranked(index: SearchIndex, query: str, limit: int,
            filters: Filters) -> list[tuple[str, float]]:
    return [(h.key, h.score) for h in index.search_bm25(query, limit=limit, filters=filters)]


def _statements(index: SearchIndex, run) -> list[str]:
    seen: list[str] = []
    index.conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        index.conn.set_trace_callback(None)
    return seen


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(VOCABULARY + PAIRS), min_size=1, max_size=9),
       st.sampled_from([1, 3, 10, 50]), st.sampled_from(FILTERS))
def test_the_postings_top_k_is_the_whole_querys_to_the_last_bit(
        tmp_path_factory, words: list[str], limit: int, filters: Filters) -> None:
    index = _shared(tmp_path_factory)
    query = " ".join(words)
    assert _ranked(index, query, limit, filters) == whole_query(index, query, limit, filters,
                                                               digits=None)


def test_a_built_index_scores_its_postings_not_fts5(tmp_path_factory) -> None:
    """With postings built, a query of one-token words runs no ``bm25()`` in SQLite; a
    phrase of two tokens is scored by FTS5 alone, the rest from the postings."""
    index = _shared(tmp_path_factory)
    seen = _statements(index, lambda: index.search_bm25("w000 w010 w150", limit=10))
    assert not [s for s in seen if "bm25(" in s], seen
    assert [s for s in seen if "FROM postings WHERE term IN" in s]
    seen = _statements(index, lambda: index.search_bm25("w000 w001-w002", limit=10))
    assert [s for s in seen if "bm25(" in s and "w001-w002" in s], seen


def test_the_postings_hold_what_fts5_matches(tmp_path_factory) -> None:
    """Every term's rowids are FTS5's matches of it, its frequencies its weighted
    occurrences, and each row's length FTS5's token count."""
    index = _shared(tmp_path_factory)
    conn = index.conn
    build = postings.read_state(conn).build
    stored = postings.term_postings(conn, ["w000", "w007", "w299", "absent"], build)
    assert postings.term_postings(conn, ["w000"], "another build") is None
    assert set(stored) <= {"w000", "w007", "w299"} and "w000" in stored
    for term, found in stored.items():
        matched = [r for r, in conn.execute(
            "SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? ORDER BY rowid", [term])]
        assert found.rowids.tolist() == matched
    rowid = int(stored["w000"].rowids[0])
    title, aliases, tags, summary, body = conn.execute(
        "SELECT title, aliases, tags, summary, body FROM docs WHERE rowid = ?",
        [rowid]).fetchone()
    counts = [text.split().count("w000") for text in (title, aliases, tags, summary, body)]
    weighted = sum(w * c for w, c in zip(index.weights, counts, strict=True))
    assert float(stored["w000"].freqs[0]) == weighted
    lengths = postings.read_state(conn, lengths=True).lengths
    assert lengths[rowid] == sum(len(t.split()) for t in (title, aliases, tags, summary, body))
    n_rows, avgdl = postings.table_totals(conn)
    assert n_rows == conn.execute("SELECT count(*) FROM docs").fetchone()[0]
    assert avgdl == pytest.approx(lengths.sum() / n_rows)


def test_phrase_tokens_are_fts5s_own() -> None:
    assert postings.phrase_tokens('"cells"') == ("cell",)
    assert postings.phrase_tokens('"COVID-19"') == ("covid", "19")
    assert postings.phrase_tokens('"say ""hi"""') == ("sai", "hi")
    assert postings.phrase_tokens('"--"') == ()


def test_writes_between_builds_keep_the_answers_exact(tmp_path: Path) -> None:
    """Updated, new and deleted documents are scored by FTS5 over the table as it is now
    (and document frequencies come from FTS5) until the next build: every answer stays
    the whole query's, to the last bit."""
    documents = _documents(size=400)
    index = _open(tmp_path / "stale.sqlite", documents)
    rng = random.Random(11)
    changed = [Document(d.key, d.doc_id, f"{d.title} w001-w002 w000", summary=d.summary,
                        body=" ".join(rng.choices(VOCABULARY[:30], k=40)), scope=d.scope,
                        category=d.category, status=d.status, tags=d.tags)
               for d in rng.sample(documents, 8)]
    fresh = corpus(seed=99, size=6)
    fresh = [Document(f"new/{d.key}", f"new-{d.doc_id}", d.title, body=d.body,
                      scope="s1", category="c2") for d in fresh]
    with index.transaction():
        index.upsert(changed + fresh)
        index.delete([documents[3].key, documents[50].key, fresh[0].key])
    stale = postings.read_state(index.conn).stale
    assert 10 <= len(stale) <= 20
    assert index.settle() is False  # 5 % of 400 is 20: not due yet
    queries = [" ".join(rng.choices(VOCABULARY[:60] + PAIRS, k=rng.randint(1, 7)))
               for _ in range(120)]
    for query in queries:
        for filters in FILTERS:
            limit = rng.choice([1, 5, 20, 100])
            assert _ranked(index, query, limit, filters) == whole_query(
                index, query, limit, filters, digits=None), (query, filters)
    deleted = {documents[3].key, documents[50].key}
    assert not deleted & {k for k, _ in _ranked(index, "w000 w001 w002", 400, Filters())}


def test_settle_builds_when_due_and_drops_below_the_size(tmp_path: Path) -> None:
    documents = _documents(size=300)
    index = _open(tmp_path / "due.sqlite", documents)
    assert index.settle() is False  # built and fresh
    with index.transaction():
        index.upsert([Document(d.key, d.doc_id, d.title + " w299", body=d.body)
                      for d in documents[:20]])
    assert len(postings.read_state(index.conn).stale) == 20
    assert index.settle() is True  # more than 5 % stale
    assert len(postings.read_state(index.conn).stale) == 0
    # other column weights: the postings are not used until built with them
    index.weights = (1.0, 1.0, 1.0, 1.0, 5.0)
    seen = _statements(index, lambda: index.search_bm25("w000 w010", limit=5))
    assert [s for s in seen if "bm25(" in s], seen
    assert _ranked(index, "w000 w010", 5, Filters()) == whole_query(
        index, "w000 w010", 5, Filters(), digits=None)
    assert index.settle() is True
    assert postings.read_state(index.conn).weights == (1.0, 1.0, 1.0, 1.0, 5.0)
    assert _ranked(index, "w000 w010", 5, Filters()) == whole_query(
        index, "w000 w010", 5, Filters(), digits=None)
    # below the size the postings are dropped and the triggers stop noting rows
    index.postings_from = 1000
    assert index.settle() is False
    assert index.conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 0
    with index.transaction():
        index.upsert(documents[:5])
    state = postings.read_state(index.conn)
    assert state.build is None and len(state.stale) == 0


def test_clear_forgets_the_postings(tmp_path: Path) -> None:
    index = _open(tmp_path / "clear.sqlite", _documents(size=150))
    with index.transaction():
        index.clear()
    assert postings.read_state(index.conn).weights is None
    assert index.conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 0
    assert index.search_bm25("w000", limit=5) == []


def test_a_wiki_above_the_size_searches_its_postings(cli, repo: Path, monkeypatch) -> None:
    """`wiki index` builds the postings of an index at or above the size (lowered here to
    3 entries; as after an upgrade, with nothing new to index) with the wiki's column
    weights, and `wiki search` answers from them; a later approval that changes one entry
    of these few (more than 5 %) builds them again, with the new words."""
    import sqlite3

    from conftest import BOB, acting_as, write

    monkeypatch.setattr(postings, "POSTINGS_FROM", 10_000)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "none")
    for n, topic in enumerate(["travel vouchers", "annual leave", "laptop setup",
                               "security badges"]):
        write(repo / "docs" / f"p{n}.md", f"# {topic.title()}\n\nHow {topic} work here: "
                                          f"{topic} are handled by the team.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    database = repo / ".git" / "wiki" / "wiki.sqlite"
    with sqlite3.connect(database) as conn:  # below the size: none
        assert conn.execute("SELECT count(*) FROM postings").fetchone()[0] == 0
    # an index that is (now) large enough, as after an upgrade: `wiki index` builds them
    monkeypatch.setattr(postings, "POSTINGS_FROM", 3)
    assert cli("index").exit_code == 0
    with sqlite3.connect(database) as conn:
        terms = conn.execute("SELECT count(*) FROM postings").fetchone()[0]
        assert terms > 10 and conn.execute("SELECT weights FROM postings_rows").fetchone()
    found = cli("search", "laptop", "--json")
    assert found.exit_code == 0, found.output
    assert "laptop" in found.stdout.lower()
    write(repo / "docs" / "p2.md", "# Laptop Setup\n\nLaptops now come from the help desk.\n")
    name = cli("ingest", str(repo / "docs" / "p2.md")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM postings_stale").fetchone()[0] == 0
        assert conn.execute("SELECT 1 FROM postings WHERE term = 'desk'").fetchone()
    found = cli("search", "help desk", "--json")
    assert found.exit_code == 0 and "help desk" in found.stdout.lower(), found.output


def test_many_stale_rows_are_scored_in_one_fts5_pass(tmp_path: Path) -> None:
    """Past :data:`~indexes.sqlite.postings.FEW_STALE` stale rows FTS5 runs the query once
    and keeps the stale rows (``+rowid``), rather than once per stale row (200 of them
    took 102 ms at 20,000 documents); answers stay exact."""
    documents = _documents(size=1000, seed=3)
    index = _open(tmp_path / "many.sqlite", documents)
    rng = random.Random(4)
    with index.transaction():
        index.upsert([Document(d.key, d.doc_id, d.title + " w002", body=d.body + " w001",
                               scope=d.scope, category=d.category, status=d.status,
                               tags=d.tags) for d in rng.sample(documents, 45)])
    assert len(postings.read_state(index.conn).stale) == 45 > postings.FEW_STALE
    seen = _statements(index, lambda: index.search_bm25("w001 w002 w030", limit=10))
    assert [s for s in seen if "+rowid IN (SELECT rowid FROM postings_stale)" in s], seen
    for _ in range(60):
        query = " ".join(rng.choices(VOCABULARY[:50] + PAIRS, k=rng.randint(1, 6)))
        filters, limit = rng.choice(FILTERS), rng.choice([1, 10, 50])
        assert _ranked(index, query, limit, filters) == whole_query(
            index, query, limit, filters, digits=None), query


def test_a_rebuild_by_another_connection_mid_search_falls_back(tmp_path: Path) -> None:
    """Another process's sync commits new rows and a new build between two statements of
    a search: the search sees the postings are no longer the build it read and ranks with
    FTS5 (it crashed with an IndexError before: rowids past the lengths it had read)."""
    path = tmp_path / "race.sqlite"
    documents = _documents(size=300)
    reader = _open(path, documents)
    writer = SearchIndex(path)
    writer.postings_from = 100
    assert reader.search_bm25("w000 w001", limit=5)  # the reader's state is read and kept
    fired: list[str] = []

    def rebuild_between(statement: str) -> None:
        if "FROM postings WHERE term IN" in statement and not fired:
            fired.append(statement)
            with writer.transaction():
                writer.upsert([Document(f"late/{i}.md", f"late{i}", "w000 w001 w001",
                                        body="w001 " * 5) for i in range(40)])
                assert writer.settle() is True

    reader.conn.set_trace_callback(rebuild_between)
    try:
        reader.memo.forget("postings")
        found = reader.search_bm25("w000 w001", limit=10)
    finally:
        reader.conn.set_trace_callback(None)
    assert fired
    assert [(h.key, h.score) for h in found] == whole_query(reader, "w000 w001", 10,
                                                            Filters(), digits=None)


def test_weights_whose_sums_round_are_ranked_by_fts5(tmp_path: Path) -> None:
    """Column weights of 0.3 and 0.1 do not sum exactly in float32 (nor in another
    order): a title word once (0.3) and a body word three times (0.3 as 0.1 * 3) tied in
    the arrays where FTS5 ranks them apart. Such weights keep no postings."""
    index = SearchIndex(tmp_path / "fraction.sqlite")
    index.postings_from = 2
    index.weights = (0.3, 1.0, 1.0, 1.0, 0.1)
    with index.transaction():
        index.upsert([Document("a.md", "a", "x", body="zz zz zz y"),
                      Document("b.md", "b", "zz", body="y y y y"),
                      *[Document(f"o{i}.md", f"o{i}", "other", body="words here and there")
                        for i in range(5)]])
    assert index.settle() is False
    assert postings.read_state(index.conn).build is None
    assert _ranked(index, "zz", 2, Filters()) == whole_query(index, "zz", 2, Filters(),
                                                             digits=None)
    index.weights = (8.0, 6.0, 3.0, 3.0, 1.0)
    assert index.settle() is True
    index.weights = (0.3, 1.0, 1.0, 1.0, 0.1)
    assert index.settle() is False and postings.read_state(index.conn).build is None


def _expiring(size: int) -> list[Document]:
    """The Zipf corpus where some documents expire: by ``valid_until`` (past or future)
    or by ``dated`` and the lifetime of their type."""
    docs = _documents(size=size, seed=5)
    for at in range(0, size, 7):
        d = docs[at]
        until, dated, kind = (("2020-01-01T00:00:00Z", "", "note") if at % 3 == 0 else
                              ("2999-01-01T00:00:00Z", "", "note") if at % 3 == 1 else
                              ("", f"2024-0{1 + at % 9}-15T00:00:00Z", "meeting"))
        docs[at] = Document(d.key, d.doc_id, d.title, summary=d.summary, body=d.body,
                            tags=d.tags, status=d.status, category=d.category,
                            scope=d.scope, valid_until=until, dated=dated, doc_type=kind)
    return docs


def test_expiry_is_applied_exactly_while_the_rest_of_the_filter_is_kept(tmp_path: Path) -> None:
    """A search passes the current second as ``valid_at``: the rows of the filter without
    it are kept between searches and the documents expired at that second taken out, so
    each second's answer is still the whole query's under the full filter (valid_until,
    and dated plus the type's lifetime, on either side of the time)."""
    index = _open(tmp_path / "expiry.sqlite", _expiring(400))
    rng = random.Random(8)
    for valid_at in ("2024-03-01T00:00:00Z", "2024-06-20T12:00:00Z", "2031-01-01T00:00:00Z"):
        for base in (Filters(), Filters(scope="s1"), Filters(statuses=None, tags=("t1",))):
            filters = Filters(statuses=base.statuses, scope=base.scope, tags=base.tags,
                              valid_at=valid_at, lifetimes=(("meeting", 60.0),))
            expired = set(index._expired(filters))
            assert expired and len(expired) < 60, valid_at
            for _ in range(15):
                query = " ".join(rng.choices(VOCABULARY[:40], k=rng.randint(1, 5)))
                assert _ranked(index, query, 30, filters) == whole_query(
                    index, query, 30, filters, digits=None), (query, filters)
