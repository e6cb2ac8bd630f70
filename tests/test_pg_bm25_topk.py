"""The PostgreSQL BM25 leg's MaxScore top k (indexes/pg/bm25.py) returns what the whole
query returns (same documents, same order, scores equal to rounding) under every filter,
and takes its pruned path for most queries; the space statistics it reads (``wiki_stats``)
follow every write, also a schema-2 database's."""

from __future__ import annotations

import random
from collections import Counter

import psycopg
import pytest
from zipf_corpus import FILTERS, VOCABULARY, corpus

from indexes.documents import Document
from indexes.pg import bm25 as pg_bm25
from indexes.pg import ranking
from indexes.pg.engine import PgIndex
from indexes.pg.filters import pg_sql
from indexes.pg.schema import VERSION
from indexes.retrieval.filters import Filters
from indexes.retrieval.maxscore import fts5_idf


class Recording:
    """A connection that notes the SQL it runs (to tell which path ranked)."""

    def __init__(self, conn) -> None:
        self.conn, self.sql = conn, []

    def execute(self, sql, params=None):
        self.sql.append(sql)
        return self.conn.execute(sql, params)


def _ranked(index: PgIndex, query: str, limit: int, filters: Filters, *,
            whole: bool) -> tuple[list[tuple[str, float]], str]:
    """``(hits as (key, score), the path that ranked: "whole" or "split")``."""
    conn = Recording(index.conn)
    tsquery, terms = ranking.lexemes(index.conn, query)
    stats = pg_bm25.space_stats(index.conn, index.space)
    classes = ranking.class_weights(index.weights)
    where, params = pg_sql(filters)

    def frequencies(words):
        return pg_bm25.document_frequencies(index.conn, index.space, words)

    if whole:
        df = frequencies(terms)
        idf = {t: fts5_idf(df[t], stats.docs) for t in terms}
        phrase = " AND d.fts @@ %s::tsquery" if "<->" in tsquery else ""
        hits = pg_bm25.whole_query(conn, index.space, terms, idf, where + phrase,
                                   [*params, *([tsquery] if phrase else [])], limit=limit,
                                   classes=classes, stats=stats)
    else:
        hits = pg_bm25.search_bm25(conn, index.space, terms, tsquery, where, params,
                                   limit=limit, classes=classes, stats=stats,
                                   frequencies=frequencies, narrow=filters.narrow)
    path = "whole" if any(pg_bm25.WHOLE_QUERY in sql for sql in conn.sql) else "split"
    return [(h.key, h.score) for h in hits], path


def test_the_pruned_top_k_is_the_whole_querys(pg_database) -> None:
    rng = random.Random(5)
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(VOCABULARY))]
    paths: Counter[str] = Counter()
    with PgIndex(pg_database, "s") as index:
        index.upsert(corpus())
        for number in range(160):
            query = " ".join(rng.choices(VOCABULARY, weights, k=rng.randint(2, 9)))
            limit = rng.choice([1, 3, 10, 25])
            filters = FILTERS[number % len(FILTERS)]
            pruned, path = _ranked(index, query, limit, filters, whole=False)
            whole, _ = _ranked(index, query, limit, filters, whole=True)
            assert [k for k, _ in pruned] == [k for k, _ in whole], (query, limit, filters)
            assert [s for _, s in pruned] == pytest.approx([s for _, s in whole], rel=1e-9)
            paths[path] += 1
            paths["narrow whole"] += filters.narrow and path == "whole"
    assert min(paths["whole"], paths["split"]) >= 30, paths
    assert paths["narrow whole"] >= 5, paths  # the scope's postings alone summed


def _stats_agree(url: str) -> list[tuple]:
    with psycopg.connect(url) as conn:
        kept = conn.execute("SELECT space, docs, total_len FROM wiki_stats WHERE docs > 0 "
                            "ORDER BY space").fetchall()
        counted = conn.execute("SELECT space, count(*), sum(doc_len) FROM wiki_docs "
                               "GROUP BY space ORDER BY space").fetchall()
    assert kept == counted
    return kept


def test_space_statistics_follow_every_write(pg_database) -> None:
    docs = corpus(size=40)
    with PgIndex(pg_database, "a") as a, PgIndex(pg_database, "b") as b:
        a.upsert(docs)
        b.upsert(docs[:10])
        assert [(s, n) for s, n, _ in _stats_agree(pg_database)] == [("a", 40), ("b", 10)]
        a.upsert([Document(docs[0].key, "x", "longer title", body="many more words " * 30)])
        _stats_agree(pg_database)
        a.delete([d.key for d in docs[5:15]])
        assert _stats_agree(pg_database)[0][1] == 30
        b.clear()
        assert [s for s, _, _ in _stats_agree(pg_database)] == ["a"]
        assert pg_bm25.space_stats(b.conn, "b").docs == 0
        stats = pg_bm25.space_stats(a.conn, "a")
        assert stats.docs == 30 and stats.avg_len > 0
        before = stats.version
        a.upsert(docs[5:6])
        assert pg_bm25.space_stats(a.conn, "a").version > before


def test_a_schema_2_database_gets_its_statistics_on_open(pg_database) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(corpus(size=30))
        before = [h.key for h in index.search_bm25("w001 w010 w050", limit=10)]
    with psycopg.connect(pg_database) as conn:
        for trigger in ("insert", "delete", "update_old", "update_new"):
            conn.execute(f"DROP TRIGGER wiki_stats_{trigger} ON wiki_docs")
        conn.execute("DROP TABLE wiki_stats")
        conn.execute("UPDATE wiki_schema SET version = 2")
    with PgIndex(pg_database, "s") as index:
        assert [h.key for h in index.search_bm25("w001 w010 w050", limit=10)] == before
        index.delete(["c0/d0.md"])
    assert _stats_agree(pg_database)[0][1] == 29
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT max(version) FROM wiki_schema").fetchone()[0] == VERSION


def _matched(index: PgIndex, word: str, key: str) -> tuple[int, bool]:
    """What the documents' tsvectors say: the phrase match over every document."""
    row = index.conn.execute(
        "SELECT count(*), coalesce(bool_or(key = %s), false) FROM wiki_docs WHERE space = %s "
        "AND fts @@ phraseto_tsquery('english', %s)", (key, index.space, word)).fetchone()
    return int(row[0]), bool(row[1])


def test_word_matches_from_the_postings_equal_the_documents_and_follow_writes(
        pg_database) -> None:
    docs = corpus(size=60)
    with PgIndex(pg_database, "s") as index:
        index.upsert([*docs, Document("x.md", "x", "State-of-the-art travel",
                                      body="The travellers' vouchers")])
        words = ["w000", "w003", "w040", "w299", "travel", "vouchers", "travellers'",
                 "state-of-the-art", "the", "nowhere"]
        for word in words:
            for key in ("x.md", docs[0].key):
                assert index.word_matches(word, key) == _matched(index, word, key), word
        assert index.count() == 61 == index.count(Filters(statuses=None))
        before = index.word_matches("travel", "x.md")
        index.upsert([Document("y.md", "y", "Travel again")])
        assert index.word_matches("travel", "x.md") == (before[0] + 1, True)
        assert index.count() == 62


def test_a_full_df_cache_keeps_answering(pg_database) -> None:
    """The kept document frequencies start afresh when full; a query whose words were
    partly kept still gets every word's df (it raised KeyError)."""
    with PgIndex(pg_database, "s") as index:
        index.upsert(corpus(size=40))
        expected = [h.key for h in index.search_bm25("w000 w001 w002", limit=5)]
        version = pg_bm25.space_stats(index.conn, "s").version
        lookup = index._frequencies(version)
        lookup(["w000", "w001"])
        index.memo.values.update({f"filler{i}": 0 for i in range(100_001)})
        assert set(lookup(["w000", "w001", "w002"])) == {"w000", "w001", "w002"}
        assert [h.key for h in index.search_bm25("w000 w001 w002", limit=5)] == expected


def test_nothing_counted_inside_a_write_is_kept(pg_database) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(corpus(size=20))
        with pytest.raises(RuntimeError), index.transaction():
            index.upsert([Document("new.md", "n", "w299 w299 w299")])
            assert index.word_matches("w299", "new.md")[1]
            raise RuntimeError("abandon the write")
        assert index.word_matches("w299", "new.md") == _matched(index, "w299", "new.md")
        assert not index.word_matches("w299", "new.md")[1]
