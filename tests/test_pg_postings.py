"""PostgreSQL BM25 reads postings (``wiki_terms``), kept in step with every write, and a
schema-1 database gets them on open; the vector leg's exact path (a narrow filter, or one
small space among many) ranks as the HNSW path does."""

from __future__ import annotations

import numpy as np
import psycopg

from indexes.documents import Document
from indexes.pg import vectors as pg_vectors
from indexes.pg.engine import PgIndex
from indexes.pg.schema import VERSION
from indexes.retrieval.filters import Filters
from indexes.sqlite.engine import SearchIndex

DOCS = [
    Document(key=f"d{i}.md", doc_id=f"d{i}", title=title, body=body, scope=scope)
    for i, (title, body, scope) in enumerate([
        ("Travel voucher", "File the travel voucher within five days of return.", "a"),
        ("Leave policy", "Annual leave carries over up to 240 hours.", "a"),
        ("Voucher audit", "Auditors sample one voucher in ten.", "b"),
        ("Laptop setup", "New laptops are set up by the help desk.", "b"),
        ("State of the art", "A state-of-the-art review of travel tools.", "a"),
    ])]


def _ranked(index, query: str, **kwargs) -> list[tuple[str, float]]:
    return [(h.key, round(h.score, 4)) for h in index.search_bm25(query, limit=10, **kwargs)]


def test_postings_follow_upserts_and_deletes(pg_database) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(DOCS)
        assert sorted(k for k, _ in _ranked(index, "voucher")) == ["d0.md", "d2.md"]
        index.upsert([Document(key="d2.md", doc_id="d2", title="Audit", body="Nothing.")])
        assert [k for k, _ in _ranked(index, "voucher")] == ["d0.md"]
        index.delete(["d0.md"])
        assert _ranked(index, "voucher") == []
        with psycopg.connect(pg_database) as conn:
            left = conn.execute("SELECT DISTINCT key FROM wiki_terms WHERE space = 's' "
                                "ORDER BY key").fetchall()
        assert [k for (k,) in left] == ["d1.md", "d2.md", "d3.md", "d4.md"]


def test_bm25_orders_as_sqlite_fts5_does(tmp_path, pg_database) -> None:
    with PgIndex(pg_database, "s") as pg, SearchIndex(tmp_path / "x.sqlite") as lite:
        pg.upsert(DOCS)
        lite.upsert(DOCS)
        for query in ("travel voucher", "leave hours", "state-of-the-art travel"):
            assert [h.key for h in pg.search_bm25(query, limit=10)] == \
                [h.key for h in lite.search_bm25(query, limit=10)], query


def test_a_phrase_must_match_as_a_phrase(pg_database) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(DOCS)
        assert [k for k, _ in _ranked(index, "state-of-the-art")] == ["d4.md"]


def test_a_schema_1_database_gets_its_postings_on_open(pg_database) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(DOCS)
        before = _ranked(index, "travel voucher")
    with psycopg.connect(pg_database) as conn:
        conn.execute("DELETE FROM wiki_terms")
        conn.execute("UPDATE wiki_schema SET version = 1")
    with PgIndex(pg_database, "s") as index:
        assert _ranked(index, "travel voucher") == before
    with psycopg.connect(pg_database) as conn:
        assert conn.execute("SELECT max(version) FROM wiki_schema").fetchone()[0] == VERSION


def _vectors(index: PgIndex) -> np.ndarray:
    chunks = index.vectors.chunk_keys()
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(len(chunks), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.vectors.prepare_model("m", 8)
    index.vectors.save("m", [h for _, h in chunks], vectors)
    return vectors[0]


def test_the_exact_path_and_the_hnsw_path_agree(pg_database, monkeypatch) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert(DOCS)
        query = _vectors(index)
        for filters in (None, Filters(scope="a")):
            exact = [h.key for h in index.search_vector(query, "m", filters=filters)]
            monkeypatch.setattr(pg_vectors, "EXACT_DOCS", 0)
            monkeypatch.setattr(pg_vectors, "EXACT_SHARE", 0.0)
            graph = [h.key for h in index.search_vector(query, "m", filters=filters)]
            monkeypatch.undo()
            assert exact == graph and exact[0] == "d0.md"
            assert len(exact) == (5 if filters is None else 3)
