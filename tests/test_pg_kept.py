"""What a long-running process keeps between calls on a PostgreSQL index: open connections
(``indexes.pg.connections``, on under ``wiki serve``) and marks of checks that passed
(``PgIndex.check_mark``, in the database, so every replica shares them). Each test fails on
the code before: every open connected anew, and no mark was ever held, so every served
call scanned the space for pending vectors."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from indexes.documents import Document
from indexes.pg.connections import KEPT
from indexes.pg.engine import PgIndex
from tests.test_hybrid import HashingEmbedder
from wiki.answering.embedding import ensure_vectors, top_up_vectors


def _doc(key: str, body: str = "travel vouchers") -> Document:
    return Document(key=key, doc_id=key, title=key, body=f"{key} {body}")


@pytest.fixture
def keeping() -> Iterator[None]:
    KEPT.keep(2)
    yield
    KEPT.keep(0)


def _backend(index: PgIndex) -> int:
    return index.conn.info.backend_pid


def test_a_closed_index_hands_its_connection_to_the_next_open(pg_database: str,
                                                             keeping) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a")])
        first = _backend(index)
    with PgIndex(pg_database, "s") as index:
        assert _backend(index) == first
        assert [h.key for h in index.search_bm25("vouchers", limit=5)] == ["a"]
    KEPT.keep(0)  # off: every open connects anew, as a command does
    with PgIndex(pg_database, "s") as index:
        assert _backend(index) != first


def test_a_kept_connection_the_server_dropped_is_replaced(pg_database: str, keeping) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a")])
        dropped = _backend(index)
    with psycopg.connect(pg_database, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (dropped,))
    with PgIndex(pg_database, "s") as index:  # the caller never sees the dead one
        assert _backend(index) != dropped
        assert [h.key for h in index.search_bm25("vouchers", limit=5)] == ["a"]


def test_a_connection_left_in_a_transaction_is_not_kept(pg_database: str, keeping) -> None:
    index = PgIndex(pg_database, "s")
    index.upsert([_doc("a")])
    left = _backend(index)
    index.conn.execute("BEGIN")
    index.conn.execute("INSERT INTO wiki_meta(space, key, value) VALUES ('s', 'x', 'y')")
    index.close()
    with PgIndex(pg_database, "s") as index:
        assert _backend(index) != left
        assert index.get_meta("x") is None  # what the left transaction wrote never landed


def test_at_most_size_idle_connections_are_kept(pg_database: str, keeping) -> None:
    indexes = [PgIndex(pg_database, "s") for _ in range(3)]
    pids = {_backend(index) for index in indexes}
    for index in indexes:
        index.close()
    again = [PgIndex(pg_database, "s") for _ in range(3)]
    assert len(pids & {_backend(index) for index in again}) == 2  # the third was closed
    for index in again:
        index.close()


def test_a_vector_check_that_passed_is_not_run_again_until_the_space_changes(
        pg_database: str) -> None:
    model = HashingEmbedder()
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a"), _doc("b")])
        assert ensure_vectors(index, model) == 2
        assert ensure_vectors(index, model) == 0  # checked once more, then marked
        fact = f"vectors {model.name}:{model.dim}"
        assert index.check_mark(fact).held
    with PgIndex(pg_database, "s") as other:  # another process or replica sees the mark
        assert other.check_mark(fact).held
        other.upsert([_doc("c", "lodging receipts")])
        assert not other.check_mark(fact).held
        assert top_up_vectors(other, model) == 0  # embedded the new one, nothing pending
        assert other.vectors.pending_count(model.name) == 0


def test_a_mark_is_not_recorded_for_a_space_that_changed_after_it_was_taken(
        pg_database: str) -> None:
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a")])
        mark = index.check_mark("some check")
        assert not mark.held
        index.upsert([_doc("b")])  # written between the check and its record
        mark.record()
        assert not index.check_mark("some check").held
        mark = index.check_mark("some check")
        mark.record()
        assert index.check_mark("some check").held
        index.vectors.replace_many([("a", ["a new chunk"], [])])  # chunks move the stamp
        assert not index.check_mark("some check").held
