"""What a long-running process keeps between calls on a PostgreSQL index: open connections
(``indexes.pg.connections``, on under ``wiki serve``) and marks of checks that passed
(``PgIndex.check_mark``, in the database, so every replica shares them). Each test fails on
the code before: every open connected anew, and no mark was ever held, so every served
call scanned the space for pending vectors."""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

from indexes.documents import Document
from indexes.pg import connections
from indexes.pg.connections import KEPT
from indexes.pg.engine import PgIndex
from indexes.retrieval.filters import Filters
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


WORDS = ["travel", "vouchers", "lodging", "receipts", "per", "diem", "mileage", "rental", "car", "airfare", "hotel", "taxi", "meals", "conference", "badge", "laptop", "security", "training", "onboarding", "payroll"]


def _corpus(index: PgIndex, model: HashingEmbedder, n: int = 60) -> None:
    draw, docs = random.Random(7), []
    for i in range(n):
        words = " ".join(draw.choice(WORDS) for _ in range(draw.randint(3, 12)))
        docs.append(Document(key=f"d{i:02d}", doc_id=f"d{i:02d}", title=f"entry {i}",
                             body=words, scope="team-a" if i % 3 == 0 else "",
                             status="superseded" if i % 10 == 9 else "active"))
    index.upsert(docs)
    ensure_vectors(index, model)


@pytest.mark.parametrize("filters", [Filters(), Filters(scope="team-a"), Filters(statuses=None)])
def test_the_kept_matrix_ranks_as_the_database_does(pg_database: str, filters) -> None:
    model = HashingEmbedder()
    with PgIndex(pg_database, "s") as index:
        _corpus(index, model)
        query = model.encode(["hotel taxi receipts"])[0]
        in_database = index.search_vector(query, model.name, limit=8, filters=filters)
    KEPT.keep(2)
    try:
        with PgIndex(pg_database, "s") as index:
            assert index.vectors.kept is not None
            kept = index.search_vector(query, model.name, limit=8, filters=filters)
            # the matrix is kept now: the next leg ranks on a worker thread, same hits
            assert index.vectors.current(model.name) is not None
            started = index.start_vector(query, model.name, limit=8, filters=filters)()
            assert [(h.key, h.score) for h in started] == [(h.key, h.score) for h in kept]
    finally:
        KEPT.keep(0)
    assert [h.key for h in kept] == [h.key for h in in_database]
    assert [h.score for h in kept] == pytest.approx([h.score for h in in_database], abs=1e-5)
    if filters.scope:
        assert all(int(h.key[1:]) % 3 == 0 for h in kept)
    if filters.statuses:
        assert all(int(h.key[1:]) % 10 != 9 for h in kept)


def test_the_kept_matrix_and_filter_see_the_next_write(pg_database: str, keeping) -> None:
    model = HashingEmbedder()
    query = model.encode(["badge laptop security"])[0]
    with PgIndex(pg_database, "s") as index:
        _corpus(index, model)
        before = [h.key for h in index.search_vector(query, model.name, limit=3)]
    with PgIndex(pg_database, "s") as index:  # another call: a new entry, one superseded
        index.upsert([Document(key="new", doc_id="new", title="new",
                               body="badge laptop security badge laptop security")])
        top_up_vectors(index, model)
        index.upsert([Document(key=before[0], doc_id=before[0], title="old", body="x",
                               status="superseded")])
    with PgIndex(pg_database, "s") as index:
        after = [h.key for h in index.search_vector(query, model.name, limit=3)]
    assert after[0] == "new"
    assert before[0] not in after


# found by an adversarial review of the kept connections and marks; each failed before

def test_recording_a_mark_never_waits_for_a_writer(pg_database: str) -> None:
    model = HashingEmbedder()
    with PgIndex(pg_database, "s") as index:
        index.upsert([_doc("a"), _doc("b")])
        ensure_vectors(index, model)
        ensure_vectors(index, model)  # marked
        index.upsert([_doc("a")])  # same text, nothing pending; the mark is stale
    writer = PgIndex(pg_database, "s")
    try:
        with writer.transaction():
            writer.clear()  # a rebuild holds the mark's row for its whole transaction
            conn = psycopg.connect(pg_database, autocommit=True)
            conn.execute("SET lock_timeout = '5s'")
            with PgIndex(pg_database, "s", conn=conn) as reader:
                started = time.monotonic()
                assert top_up_vectors(reader, model) == 0
                assert time.monotonic() - started < 2
    finally:
        writer.close()


class _Proxy:
    """TCP in front of the test server's socket; :meth:`freeze` silences the connections
    open now (a network that stops delivering), later ones pass."""

    def __init__(self, unix_path: str) -> None:
        self.unix_path, self.frozen = unix_path, []
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self) -> None:
        for stop in self.frozen:
            stop.set()

    def _accept(self) -> None:
        while True:
            client, _ = self.server.accept()
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.unix_path)
            stop = threading.Event()
            self.frozen.append(stop)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b, stop), daemon=True).start()

    def _pipe(self, src, dst, stop) -> None:
        try:
            while data := src.recv(65536):
                if stop.is_set():
                    return  # swallowed: the peer never hears of it
                dst.sendall(data)
        except OSError:  # either side hung up (the client replaced the silent connection)
            return


def test_a_kept_connection_gone_silent_is_replaced(pg_database: str, keeping,
                                                   monkeypatch) -> None:
    monkeypatch.setattr(connections, "CHECK_TIMEOUT_S", 0.5)
    parts = urlsplit(pg_database)
    host = parse_qs(parts.query)["host"][0]
    proxy = _Proxy(os.path.join(host, ".s.PGSQL.5432"))
    url = f"postgresql://postgres@127.0.0.1:{proxy.port}{parts.path}"
    with PgIndex(url, "s") as index:
        index.upsert([_doc("a")])
        silent = _backend(index)
    proxy.freeze()
    started = time.monotonic()
    with PgIndex(url, "s") as index:  # before: waited for TCP's own timeout (minutes)
        assert _backend(index) != silent
        assert [h.key for h in index.search_bm25("vouchers", limit=5)] == ["a"]
    assert time.monotonic() - started < 5


def test_a_kept_connection_is_replaced_when_the_vector_type_is_made_again(
        pg_database: str) -> None:
    KEPT.keep(1)
    model = HashingEmbedder()
    try:
        with PgIndex(pg_database, "s") as index:
            index.upsert([_doc("a")])
            ensure_vectors(index, model)
        with psycopg.connect(pg_database, autocommit=True) as admin:
            admin.execute("DROP TABLE wiki_embeddings")
            admin.execute("DROP EXTENSION vector CASCADE")
        for _ in range(3):  # before: "cache lookup failed for type" on every call
            with PgIndex(pg_database, "s") as index:
                ensure_vectors(index, model)
                assert [h.key for h in index.search_vector(
                    model.encode(["a travel"])[0], model.name, limit=3)] == ["a"]
    finally:
        KEPT.keep(0)


def test_idle_connections_are_closed_oldest_first_under_light_load(
        pg_database: str, monkeypatch) -> None:
    monkeypatch.setattr(connections, "MAX_IDLE_S", 0.3)
    KEPT.keep(4)
    try:
        burst = [PgIndex(pg_database, "s") for _ in range(4)]
        for index in burst:
            index.close()
        for _ in range(6):  # one call at a time: the newest is taken again and again
            PgIndex(pg_database, "s").close()
            time.sleep(0.1)
        with psycopg.connect(pg_database, autocommit=True) as admin:
            others = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()").fetchone()[0]
        assert others <= 1  # the burst's other three idled past the limit and were closed
    finally:
        KEPT.keep(0)


def test_a_mark_is_not_held_once_another_space_dropped_shared_vectors(
        pg_database: str) -> None:
    wide, narrow = HashingEmbedder("m", 64), HashingEmbedder("m", 32)
    with PgIndex(pg_database, "A") as a, PgIndex(pg_database, "B") as b:
        a.upsert([_doc("x")])
        ensure_vectors(a, wide)
        ensure_vectors(a, wide)  # marked
        b.upsert([_doc("y")])  # the same model name with another dimension:
        ensure_vectors(b, narrow)  # drops A's vectors from the shared table
        assert a.vectors.pending_count("m") == 1
        assert top_up_vectors(a, wide) == 0
        assert a.vectors.pending_count("m") == 0


def test_the_kept_matrix_leaves_out_what_expired_at_each_search(pg_database: str) -> None:
    """A search passes the current second as ``valid_at``: the kept matrix keeps the rows
    of the filter without it and takes out, each search, the documents expired then
    (``valid_until`` past, or ``dated`` plus the type's lifetime), as the database does."""
    model = HashingEmbedder()
    with PgIndex(pg_database, "s") as index:
        _corpus(index, model)
        docs = []
        for i, (until, dated) in enumerate([("2020-01-01T00:00:00Z", ""),
                                           ("2999-01-01T00:00:00Z", ""),
                                           ("", "2024-01-15T00:00:00Z"),
                                           ("", "2024-05-15T00:00:00Z")]):
            docs.append(Document(key=f"e{i}", doc_id=f"e{i}", title="hotel taxi receipts",
                                 body="hotel taxi receipts hotel", valid_until=until,
                                 dated=dated, doc_type="meeting"))
        index.upsert(docs)
        top_up_vectors(index, model)
    query = model.encode(["hotel taxi receipts"])[0]
    moments = ["2024-03-01T00:00:00Z", "2024-06-01T00:00:00Z", "2031-01-01T00:00:00Z"]
    wanted = {}
    with PgIndex(pg_database, "s") as index:
        for moment in moments:
            filters = Filters(valid_at=moment, lifetimes=(("meeting", 60.0),))
            wanted[moment] = [h.key for h in index.search_vector(query, model.name, limit=12,
                                                                 filters=filters)]
    KEPT.keep(2)
    try:
        for moment in moments:
            filters = Filters(valid_at=moment, lifetimes=(("meeting", 60.0),))
            with PgIndex(pg_database, "s") as index:
                kept = [h.key for h in index.search_vector(query, model.name, limit=12,
                                                           filters=filters)]
                started = [h.key for h in index.start_vector(query, model.name, limit=12,
                                                             filters=filters)()]
            assert kept == started == wanted[moment], moment
    finally:
        KEPT.keep(0)
    assert "e0" not in wanted[moments[0]] and "e1" in wanted[moments[0]]
    assert "e2" in wanted[moments[0]] and "e2" not in wanted[moments[1]]
    assert "e3" in wanted[moments[1]] and "e3" not in wanted[moments[2]]
