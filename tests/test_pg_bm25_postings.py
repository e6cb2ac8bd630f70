"""PostgreSQL BM25 from a space's packed postings (indexes/pg/postings.py) returns what
the SQL leg's whole query returns: same keys in the same order, same scores (to 1e-9),
under every filter, for hyphenated words (a phrase the documents must match), and between
builds while documents are written and deleted (those scored from ``wiki_terms``)."""

from __future__ import annotations

import random

import pytest
from zipf_corpus import FILTERS, VOCABULARY, with_pairs

from indexes.documents import Document
from indexes.pg import bm25 as pg_bm25
from indexes.pg import ranking
from indexes.pg.engine import PgIndex
from indexes.pg.filters import pg_sql
from indexes.retrieval.filters import Filters
from indexes.retrieval.maxscore import fts5_idf

pytestmark = pytest.mark.pg

PAIRS = ["w001-w002", "w000-w003"]


def _documents(size: int, seed: int = 7) -> list[Document]:
    return with_pairs(size, seed=seed, share=5, pairs=PAIRS)


def _whole(index: PgIndex, query: str, limit: int, filters: Filters) -> list[tuple[str, float]]:
    """The definition: the SQL leg's whole query over ``wiki_terms``."""
    tsquery, terms = ranking.lexemes(index.conn, query)
    stats = pg_bm25.space_stats(index.conn, index.space)
    df = pg_bm25.document_frequencies(index.conn, index.space, terms)
    idf = {t: fts5_idf(df[t], stats.docs) for t in terms}
    where, params = pg_sql(filters)
    phrase = " AND d.fts @@ %s::tsquery" if "<->" in tsquery else ""
    hits = pg_bm25.whole_query(index.conn, index.space, terms, idf, where + phrase,
                               [*params, *([tsquery] if phrase else [])], limit=limit,
                               classes=ranking.class_weights(index.weights), stats=stats)
    return [(h.key, h.score) for h in hits]


def _agree(index: PgIndex, query: str, limit: int, filters: Filters) -> None:
    """The packed list is the whole query's, where documents whose scores differ only in
    the last bits (the SQL aggregate sums in any order; the arrays sum exact ties
    exactly, then order them by key) count as tied."""
    found = [(h.key, h.score) for h in index.search_bm25(query, limit=limit, filters=filters)]
    whole = _whole(index, query, limit + 20, filters)
    assert [s for _, s in found] == pytest.approx([s for _, s in whole[:len(found)]],
                                                  rel=1e-9), (query, limit, filters)
    assert len(found) == min(limit, len(whole))
    tied = {}
    for key, score in whole:
        tied.setdefault(round(score, 9), set()).add(key)
    assert all(key in tied.get(round(score, 9), ()) for key, score in found), (
        query, limit, filters, found, whole)
    assert len({k for k, _ in found}) == len(found)


def _statements(index: PgIndex, call) -> tuple[object, list[str]]:
    """``(call(), the SQL it ran on the index's connection)``."""
    seen: list[str] = []
    execute = index.conn.execute

    def noting(sql, params=None, **kwargs):
        seen.append(str(sql))
        return execute(sql, params, **kwargs)

    index.conn.execute = noting
    try:
        return call(), seen
    finally:
        del index.conn.execute


def _packed_ran(index: PgIndex, query: str) -> bool:
    """Whether ``search_bm25`` ranked from the packed postings (it reads the space's
    build, and neither the SQL leg's whole query nor its MaxScore candidates ran)."""
    _, seen = _statements(index, lambda: index.search_bm25(query, limit=5))
    return (any("wiki_postings_docs" in s for s in seen) and not any(
        pg_bm25.WHOLE_QUERY in s or "ORDER BY score DESC" in s for s in seen))


def test_packed_postings_rank_as_the_whole_query(pg_database) -> None:
    rng = random.Random(5)
    with PgIndex(pg_database, "s") as index:
        index.postings_from = 100
        docs = _documents(500)
        index.upsert(docs)
        assert index.settle() is True and index.settle() is False
        assert _packed_ran(index, "w000 w010 w150")
        for number in range(120):
            query = " ".join(rng.choices(VOCABULARY[:80] + PAIRS, k=rng.randint(1, 8)))
            _agree(index, query, rng.choice([1, 3, 10, 40]), FILTERS[number % len(FILTERS)])
        # written since the build: updated, new and deleted documents
        changed = [Document(d.key, d.doc_id, d.title + " w001-w002 w007", body=" ".join(
            rng.choices(VOCABULARY[:20], k=30)), scope=d.scope, category=d.category,
            status=d.status, tags=d.tags) for d in rng.sample(docs, 8)]
        fresh = [Document(f"new/{i}.md", f"new{i}", "w000 w005", body="w009 " * i,
                          scope="s1", category="c2") for i in range(1, 6)]
        index.upsert(changed + fresh)
        index.delete([docs[4].key, fresh[0].key])
        stale = index.conn.execute("SELECT count(*) FROM wiki_postings_stale WHERE space = "
                                   "'s'").fetchone()[0]
        assert 13 <= stale <= 14 and index.settle() is False  # 5 % of 500 is 25
        assert _packed_ran(index, "w000 w010 w150")
        for number in range(120):
            query = " ".join(rng.choices(VOCABULARY[:40] + PAIRS, k=rng.randint(1, 8)))
            _agree(index, query, rng.choice([1, 5, 20, 100]), FILTERS[number % len(FILTERS)])
        assert docs[4].key not in {h.key for h in index.search_bm25("w000 w001", limit=500)}


def test_settle_rebuilds_when_due_and_other_weights_fall_back(pg_database) -> None:
    with PgIndex(pg_database, "w") as index:
        index.postings_from = 50
        docs = _documents(120)
        index.upsert(docs[:40])
        assert index.settle() is False  # below the size: nothing built
        index.upsert(docs[40:])
        assert index.settle() is True
        index.upsert([Document(d.key, d.doc_id, d.title + " w299", body=d.body)
                      for d in docs[:10]])
        assert index.settle() is True  # 10 of 120 stale: more than 5 %
        index.weights = (1.0, 1.0, 1.0, 1.0, 4.0)
        assert not _packed_ran(index, "w000 w003")
        _agree(index, "w000 w003 w001-w002", 10, Filters())
        assert index.settle() is True and _packed_ran(index, "w000 w003")
        _agree(index, "w000 w003 w001-w002", 10, Filters())
        index.delete([d.key for d in docs[:80]])
        assert index.settle() is False
        assert index.conn.execute("SELECT count(*) FROM wiki_postings WHERE space = "
                                  "'w'").fetchone()[0] == 0
        index.clear()


def test_two_spaces_keep_their_own_postings(pg_database) -> None:
    with PgIndex(pg_database, "a") as a, PgIndex(pg_database, "b") as b:
        for index, seed in ((a, 1), (b, 2)):
            index.postings_from = 50
            index.upsert(_documents(150, seed=seed))
            assert index.settle() is True
        for index in (a, b):
            _agree(index, "w000 w004 w011", 10, Filters())
        a.clear()
        assert a.conn.execute("SELECT count(*) FROM wiki_postings WHERE space = 'a'"
                              ).fetchone()[0] == 0
        assert b.conn.execute("SELECT count(*) FROM wiki_postings_docs").fetchone()[0] == 1
        _agree(b, "w000 w004 w011", 10, Filters())


def test_words_matched_in_a_few_statements_equal_one_by_one(pg_database) -> None:
    """The evidence-gap coverage asks for every query word at once: three statements for
    the one-lexeme words (plus one per hyphenated word) instead of three per word, with
    the same answers as asking word by word, for a key that holds some, for none, and
    for words in no document."""
    with PgIndex(pg_database, "c") as index:
        docs = _documents(80)
        index.upsert(docs)
        words = ["w000", "w001-w002", "w150", "zzzz", "the", "w003", "W000", "w001"]
        for key in (docs[0].key, docs[7].key, None, "missing.md"):
            batched, seen = _statements(index, lambda k=key: index.words_matched(words, k))
            assert batched == [index.word_matches(w, key) for w in words], key
            assert len(seen) <= 6, seen


def test_stale_documents_tie_with_packed_ones_by_key(pg_database) -> None:
    """Identical documents, some packed and some written since the build, score the same
    to the last bit and come out in key order (``COLLATE "C"``, as the SQL leg and
    Python order them), not stale ones first (helper-32's reproduction)."""
    with PgIndex(pg_database, "col") as index:
        index.postings_from = 50
        filler = [Document(f"f/{i:05d}.md", f"f{i}", f"w{i % 50:03d}", body="w001 w002")
                  for i in range(100)]

        def same(key: str) -> Document:
            return Document(key, "id-" + key, "qqq zzz", body="qqq common words here")

        index.upsert(filler + [same(k) for k in ["Ab.md", "B.md", "a b.md", "ab.md", "b.md"]])
        assert index.settle() is True
        index.upsert([same(k) for k in ["0.md", "a c.md", "aa.md", "\u00c4.md"]])
        index.delete(["never-there.md"])  # removes nothing: notes nothing
        assert index.conn.execute("SELECT count(*) FROM wiki_postings_stale WHERE space = "
                                  "'col'").fetchone()[0] == 4
        found = [(h.key, h.score) for h in index.search_bm25(
            "qqq", limit=50, filters=Filters(statuses=None))]
        assert [k for k, _ in found] == sorted(k for k, _ in found)
        assert len({s for _, s in found}) == 1
        assert [k for k, _ in found] == [k for k, _ in _whole(index, "qqq", 50,
                                                               Filters(statuses=None))]


def test_expiry_at_each_search_on_a_kept_mask(pg_database) -> None:
    """The packed path keeps the mask of the filter without expiry and takes out the
    documents expired at each search's ``valid_at``: the whole query's list at every
    moment, before and after documents expire."""
    rng = random.Random(9)
    with PgIndex(pg_database, "x") as index:
        index.postings_from = 100
        docs = _documents(300)
        for at in range(0, 300, 6):
            d = docs[at]
            until, dated = (("2020-01-01T00:00:00Z", "") if at % 4 == 0 else
                            ("2999-01-01T00:00:00Z", "") if at % 4 == 1 else
                            ("", f"2024-0{1 + at % 9}-10T00:00:00Z"))
            docs[at] = Document(d.key, d.doc_id, d.title, summary=d.summary, body=d.body,
                                tags=d.tags, status=d.status, category=d.category,
                                scope=d.scope, valid_until=until, dated=dated,
                                doc_type="meeting")
        index.upsert(docs)
        assert index.settle() is True
        for moment in ("2024-03-01T00:00:00Z", "2024-07-01T00:00:00Z", "2031-01-01T00:00:00Z"):
            for scope in (None, "s2"):
                filters = Filters(scope=scope, valid_at=moment, lifetimes=(("meeting", 45.0),))
                for _ in range(8):
                    query = " ".join(rng.choices(VOCABULARY[:30], k=rng.randint(1, 5)))
                    _agree(index, query, 40, filters)


def test_document_frequencies_come_from_the_packed_postings_while_fresh(pg_database) -> None:
    """A space with fresh packed postings answers a lexeme's df from its one row (length
    of its numbers); with stale keys, or without postings, from ``wiki_terms``: the same
    numbers in every state."""
    with PgIndex(pg_database, "f") as index:
        index.postings_from = 50
        docs = _documents(120)
        index.upsert(docs)
        words = ["w000", "w001", "w150", "absent", "w000"]

        def counted() -> dict[str, int]:
            return {w: index.conn.execute(
                "SELECT count(*) FROM wiki_terms WHERE space = 'f' AND lexeme = %s",
                (w,)).fetchone()[0] for w in words}

        assert pg_bm25.document_frequencies(index.conn, "f", words) == counted()
        assert index.settle() is True
        found, seen = _statements(index, lambda: pg_bm25.document_frequencies(
            index.conn, "f", words))
        assert found == counted() and len(seen) == 1
        index.upsert([Document(docs[0].key, "x", "w150 w150", body="w000")])
        assert pg_bm25.document_frequencies(index.conn, "f", words) == counted()


def test_a_build_without_key_rows_or_rebuilt_mid_search_answers_by_sql(pg_database) -> None:
    """Numbers and keys are mapped in SQL, by the build's rows of ``wiki_postings_keys``:
    a build made by code before that table (no rows) ranks by the SQL leg until
    ``settle`` builds again, and a build replaced between a search's statements makes that
    search answer by SQL, never with another build's numbers. A process that never read
    the build's keys (a new one) ranks the same."""
    from indexes.pg import postings as pg_postings

    with PgIndex(pg_database, "k") as index:
        index.postings_from = 50
        index.upsert(_documents(200))
        assert index.settle() is True
        assert _packed_ran(index, "w000 w010")
        pg_postings._BUILDS.clear()  # as a process that searches once
        for filters in FILTERS:
            _agree(index, "w000 w010 w001-w002", 7, filters)
        index.conn.execute("DELETE FROM wiki_postings_keys WHERE space = 'k'")  # older code
        pg_postings._BUILDS.clear()
        assert not _packed_ran(index, "w000 w010")
        _agree(index, "w000 w010", 7, Filters(scope="s1"))
        assert index.settle() is True and _packed_ran(index, "w000 w010")
        real = pg_postings._filter

        def rebuilt_meanwhile(conn, space, build, *args):
            """Another process builds again (same documents, a new name) just before
            this search reads its filter."""
            for table in ("wiki_postings_docs", "wiki_postings_keys"):
                conn.execute(f"UPDATE {table} SET build = 'again' WHERE space = 'k'")
            return real(conn, space, build, *args)

        pg_postings._BUILDS.clear()
        pg_postings._filter = rebuilt_meanwhile
        try:
            found, seen = _statements(index, lambda: index.search_bm25(
                "w000 w010", limit=7, filters=Filters(scope="s1")))
        finally:
            pg_postings._filter = real
        assert any(pg_bm25.WHOLE_QUERY in s or "ORDER BY score DESC" in s for s in seen)
        assert _packed_ran(index, "w000 w010")  # the new build
        _agree(index, "w000 w010", 7, Filters(scope="s1"))
        assert [h.key for h in found] == [h.key for h in index.search_bm25(
            "w000 w010", limit=7, filters=Filters(scope="s1"))]


def test_a_hit_deleted_by_another_process_mid_search_is_no_short_list(pg_database) -> None:
    """On the stale path, a document another process deletes between the search's
    statements makes the search answer by SQL (the list after the delete), not a list one
    hit short (helper-34)."""
    with PgIndex(pg_database, "d") as index, PgIndex(pg_database, "d") as other:
        index.postings_from = 50
        docs = _documents(200)
        index.upsert(docs)
        assert index.settle() is True
        index.upsert([docs[50]])  # one stale key: the path that reads keys, then rows
        fifth = index.search_bm25("w000 w010", limit=5)[-1].key
        execute = index.conn.execute

        def deleted_meanwhile(sql, params=None, **kwargs):
            if str(sql).startswith("SELECT d.key, d.doc_id"):  # the search's last statement
                other.delete([fifth])
            return execute(sql, params, **kwargs)

        index.conn.execute = deleted_meanwhile
        try:
            found = index.search_bm25("w000 w010", limit=5)
        finally:
            del index.conn.execute
        assert len(found) == 5 and fifth not in {h.key for h in found}
        assert [h.key for h in found] == [h.key for h in index.search_bm25("w000 w010",
                                                                          limit=5)]


def test_a_new_process_does_not_wait_for_another_processs_build(pg_database) -> None:
    """Opening the index runs the schema's statements; none may wait for a transaction
    that is building a space's postings (a ``CREATE INDEX IF NOT EXISTS`` on the key
    table did: a new ``wiki search`` waited out the build, helper-34)."""
    import threading
    import time

    import psycopg

    from indexes.pg import postings as pg_postings
    from indexes.pg import prepared

    with PgIndex(pg_database, "L") as index:
        index.upsert(_documents(200))
    builder = psycopg.connect(pg_database, autocommit=True)
    try:
        with builder.transaction():
            pg_postings.drop(builder, "L")
            assert pg_postings.settle(builder, "L", (1.0, 1.0, 1.0, 1.0), 200,
                                      postings_from=50)
            opened: dict = {}

            def open_fresh() -> None:
                prepared.PREPARED._seen.clear()  # as a new process
                start = time.monotonic()
                with PgIndex(pg_database, "other"):
                    opened["s"] = time.monotonic() - start

            opener = threading.Thread(target=open_fresh)
            opener.start()
            opener.join(timeout=1.5)
            waited = opener.is_alive()
        opener.join()
    finally:
        builder.close()
    assert not waited and opened["s"] < 1.5
