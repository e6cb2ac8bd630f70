"""A PostgreSQL index prepares its database once per process (``indexes.pg.prepared``):
later opens take no schema lock and run no schema statements, yet a schema moved on by
another release is still refused and a table dropped by hand is still made again."""

from __future__ import annotations

import psycopg
import pytest

from indexes.documents import Document
from indexes.errors import IndexSchemaError
from indexes.pg.engine import PgIndex
from indexes.pg.schema import LOCK_SCHEMA, VERSION


def _doc(key: str) -> Document:
    return Document(key=key, doc_id=key, title=key, body=f"{key} travel vouchers")


def test_a_later_open_does_not_wait_for_the_schema_lock(pg_database: str) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a")])
    with psycopg.connect(pg_database, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_SCHEMA,))  # a migration runs
        conn = psycopg.connect(pg_database, autocommit=True)
        conn.execute("SET lock_timeout = '2s'")  # the old open waited here, then failed
        with PgIndex(pg_database, "s", conn=conn) as index:
            assert [h.key for h in index.search_bm25("vouchers", limit=5)] == ["a"]
            vector = index.conn.execute("SELECT '[1,2]'::vector").fetchone()[0]  # adapters
            assert list(vector.to_numpy()) == [1.0, 2.0]


def test_a_schema_moved_on_by_another_release_is_still_refused(pg_database: str) -> None:
    PgIndex(pg_database, "s").close()
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("UPDATE wiki_schema SET version = %s", (VERSION + 1,))
    with pytest.raises(IndexSchemaError, match="newer"):
        PgIndex(pg_database, "s")


def test_a_table_dropped_by_hand_is_made_again_on_the_next_open(pg_database: str) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a")])
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute("DROP TABLE wiki_sentences")
    with PgIndex(pg_database, "s") as index:
        assert index.conn.execute("SELECT count(*) FROM wiki_sentences").fetchone()[0] == 0
        index.upsert([_doc("b")])
        assert sorted(h.key for h in index.search_bm25("vouchers", limit=5)) == ["a", "b"]
