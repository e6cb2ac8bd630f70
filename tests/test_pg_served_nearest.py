"""A one-shot process on PostgreSQL lets the embedding server that encoded its query rank
the vector leg over the space's matrix the server keeps (``nearest_space``,
:mod:`indexes.embedding.embed_nearest_pg`), with the answer the database gives; whenever
the server cannot answer for the space as the client sees it (no matrix read yet, another
stamp, another database, a request out of protocol) the database ranks. Real model, real
server process, real PostgreSQL. Each test fails on the code before: the database ranked
every one-shot leg (an exact scan under a scope: ~120 ms at 100,000 entries)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest
from served_vectors import MODEL

from indexes.documents import Document
from indexes.embedding import embedders
from indexes.embedding.embed_nearest_pg import (
    APPLICATION_NAME,
    filters_from_request,
    filters_request,
)
from indexes.embedding.embed_server import RemoteEmbedder
from indexes.pg.engine import PgIndex
from indexes.pg.vectors import connection_address
from indexes.retrieval.filters import Filters
from wiki.answering.embedding import ensure_vectors, top_up_vectors

pytestmark = pytest.mark.skipif(embedders.load_default.probe() is not None,
                                reason="the real embedding model is not installed")

TEXTS = ["Book flights and hotels for work trips; file the travel voucher.",
         "Salaries are paid every second Friday by direct deposit.",
         "Request a laptop from IT; it ships within a week.",
         "Rotate your signing keys every ninety days.",
         "Annual leave accrues at four hours per pay period.",
         "Taxi and rental car receipts go with the travel voucher.",
         "Per diem covers meals and incidental expenses on a trip.",
         "The security team reviews badge access every quarter."]
FILTERS = [Filters(), Filters(scope="team-a"), Filters(statuses=None),
           Filters(valid_at="2024-06-01T00:00:00Z", lifetimes=(("meeting", 60.0),)),
           Filters(category="travel", tags=("money",))]


class Recording(psycopg.Connection):
    """A psycopg connection that notes the SQL it runs (to tell which side ranked)."""

    statements: list[str]

    def execute(self, query, params=None, **kwargs):  # noqa: ANN001, ANN201 (psycopg's)
        self.statements.append(query.as_string(self) if hasattr(query, "as_string")
                               else str(query))
        return super().execute(query, params, **kwargs)


def _recording(url: str) -> Recording:
    conn = Recording.connect(url, autocommit=True)
    conn.statements = []
    return conn


def _corpus(index: PgIndex, remote: RemoteEmbedder) -> None:
    docs = []
    for i, text in enumerate(TEXTS * 3):
        docs.append(Document(
            key=f"d{i:02d}", doc_id=f"d{i:02d}", title=f"entry {i}", body=text,
            scope="team-a" if i % 3 == 0 else "", category="travel" if i % 2 else "people",
            tags=("money",) if i % 4 < 2 else (),
            status="superseded" if i % 10 == 9 else "active",
            doc_type="meeting" if i % 5 == 4 else "", dated="2024-01-15T00:00:00Z"
            if i % 5 == 4 else "", valid_until="2024-05-01T00:00:00Z" if i == 7 else ""))
    index.upsert(docs)
    ensure_vectors(index, remote)


def _served(remote: RemoteEmbedder, index: PgIndex, query, filters: Filters | None,
            limit: int = 8) -> list[tuple[str, float]]:
    """The server's answer for the space as ``index`` sees it, once the server has read
    the matrix (its first answer is ``None``: it reads in the background)."""
    stamp, address = index.vectors.stamp(), connection_address(index.conn)
    deadline = time.monotonic() + 60
    while (found := remote.nearest_space(query, address, index.space, stamp, MODEL,
                                         limit=limit, filters=filters)) is None:
        assert time.monotonic() < deadline, "the server never read the space's matrix"
        time.sleep(0.05)
    return found


@pytest.mark.parametrize("filters", FILTERS)
def test_the_server_ranks_a_space_as_the_database_does(pg_database: str, remote, filters,
                                                       ) -> None:
    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("how do I claim a taxi on a work trip")
        database = index.search_vector(query, MODEL, limit=8, filters=filters,
                                       ask_server=False)
        served = _served(remote, index, query, filters)
    assert [k for k, _ in served] == [h.key for h in database] and database
    assert [s for _, s in served] == pytest.approx([h.score for h in database], abs=1e-5)
    # the index's own leg, direct and started beside the lexical legs, now asks the
    # server: the same hits, and no distance computed in the database
    conn = _recording(pg_database)
    with PgIndex(pg_database, "s", conn=conn) as index:
        direct = index.search_vector(query, MODEL, limit=8, filters=filters)
        started = index.start_vector(query, MODEL, limit=8, filters=filters)()
    assert [(h.key, round(h.score, 5)) for h in direct] == \
        [(h.key, round(h.score, 5)) for h in started] == \
        [(h.key, round(h.score, 5)) for h in database]
    assert not [s for s in conn.statements if "<=>" in s], conn.statements


def test_a_space_changed_since_the_server_read_it_is_never_answered_from_the_old_matrix(
        pg_database: str, remote) -> None:
    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("reimbursement for a museum ticket")
        old_stamp = index.vectors.stamp()
        _served(remote, index, query, None)
        index.upsert([Document(key="new", doc_id="new", title="Museum tickets",
                               body="A museum ticket bought for work is reimbursed.")])
        top_up_vectors(index, remote)
        assert index.vectors.stamp() != old_stamp
        # the client's own stamp is the new one: the server has no matrix for it yet
        assert remote.nearest_space(query, connection_address(index.conn), "s",
                                    index.vectors.stamp(), MODEL, limit=3,
                                    filters=None) is None
        # asked with the old stamp, the server reads the new one and refuses
        assert remote.nearest_space(query, connection_address(index.conn), "s", old_stamp,
                                    MODEL, limit=3, filters=None) is None
        first = index.search_vector(query, MODEL, limit=3)  # the database, meanwhile
        assert first[0].key == "new"
        assert _served(remote, index, query, None, limit=3)[0][0] == "new"


def test_another_database_with_the_same_space_is_never_answered_for(
        pg_url: str, pg_database: str, remote) -> None:
    name = "other_" + pg_database.split("?")[0].rsplit("/", 1)[1]
    other = pg_url.replace("/postgres?", f"/{name}?", 1)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        with PgIndex(pg_database, "s") as first, PgIndex(other, "s") as second:
            _corpus(first, remote)
            _corpus(second, remote)
            query = remote.encode_query("signing keys")
            _served(remote, first, query, None)
            # the first database's stamp sent with the second's address: never answered
            assert remote.nearest_space(query, connection_address(second.conn), "s",
                                        first.vectors.stamp(), MODEL, limit=3,
                                        filters=None) is None
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_the_server_connects_where_the_client_did_whatever_its_own_environment(
        pg_database: str, monkeypatch) -> None:
    """libpq reads ``PGDATABASE`` and friends from the environment; the address sent to
    the server names the database the client reached, not one the server's environment
    would pick."""
    name = pg_database.split("?")[0].rsplit("/", 1)[1]
    monkeypatch.setenv("PGDATABASE", name)
    without = pg_database.replace(f"/{name}?", "/?", 1)
    with psycopg.connect(without, autocommit=True) as conn:
        address = connection_address(conn)
    monkeypatch.setenv("PGDATABASE", "postgres")
    with psycopg.connect(address, autocommit=True) as conn:
        assert conn.execute("SELECT current_database()").fetchone()[0] == name


@pytest.mark.parametrize("filters", FILTERS + [None])
def test_filters_travel_as_they_were_given(filters) -> None:
    assert filters_from_request(json.loads(json.dumps(filters_request(filters)))) == filters


@pytest.mark.parametrize("field", [
    [], {"scope": 3}, {"tags": "money"}, {"statuses": [1]}, {"valid_at": "yesterday"},
    {"lifetimes": [["meeting"]]}, {"lifetimes": [["meeting", "60"]]},
    {"lifetimes": [["meeting", float("nan")]]}, {"where": "TRUE"}])
def test_a_malformed_filters_field_is_refused(field) -> None:
    with pytest.raises(ValueError, match="filters"):
        filters_from_request(field)


@pytest.mark.parametrize("change", [
    {"conninfo": ""}, {"conninfo": "host=/nowhere/at/all dbname=x"}, {"space": 3},
    {"stamp": ""}, {"limit": 0}, {"filters": {"where": "TRUE"}}, {"model": "another"}])
def test_a_request_the_server_cannot_answer_is_ranked_in_the_database(
        pg_database: str, remote, change: dict) -> None:
    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("annual leave")
        request = {"op": "nearest_space", "model": MODEL,
                   "conninfo": connection_address(index.conn), "space": "s",
                   "stamp": index.vectors.stamp(), "filters": None, **change}
        request = {**request, "limit": request.get("limit", 3), "vector": _base64(query)}
        with socket.socket(socket.AF_UNIX) as sock:  # the protocol, as any client sends it
            sock.connect(str(remote.socket_path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            reply = json.loads(sock.makefile("rb").readline())
        assert reply.get("ok") is False and reply.get("error"), reply
        # and the leg itself still answers, from the database
        assert index.search_vector(query, MODEL, limit=3)[0].key in {"d04", "d12", "d20"}


def _base64(query) -> str:
    import base64

    return base64.b64encode(query.data).decode("ascii")


def test_a_query_encoded_in_process_never_asks_a_server(pg_database: str, remote,
                                                        tmp_path: Path) -> None:
    """An array has no server: the leg ranks in the database without reading a stamp."""
    import numpy as np

    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        vector = np.asarray(remote.encode_query("payroll friday"))
    conn = _recording(pg_database)
    with PgIndex(pg_database, "s", conn=conn) as index:
        hits = index.start_vector(vector, MODEL, limit=3, filters=None)()
    assert hits[0].key in {"d01", "d09", "d17"}
    assert [s for s in conn.statements if "<=>" in s]
    stamp = "SELECT key, value FROM wiki_meta WHERE space = %s AND key IN (%s, %s)"
    assert stamp not in conn.statements, conn.statements


def test_a_wiki_search_command_on_postgres_is_ranked_by_the_server(
        repo: Path, cli, served_runtime: Path, on_postgres: str) -> None:
    """The whole command, as a user runs it: its first search has the server read the
    space's matrix (the server's own connection says so), the next is ranked there, and
    the hits are those of a command that ranks in the database."""
    from served_vectors import TOPICS, landed_with_server

    env = landed_with_server(cli, repo, {f"{name}.md": f"# {name.title()}\n\n{text}\n"
                                         for name, text in TOPICS.items()}, served_runtime)
    argv = [sys.executable, "-m", "wiki_cli", "search", "--json", "travel voucher"]
    first = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                           timeout=300)  # embeds the entries and starts the server
    assert first.returncode == 0, first.stderr[-2000:]
    deadline = time.monotonic() + 60
    with psycopg.connect(on_postgres, autocommit=True) as conn:
        while not conn.execute("SELECT count(*) FROM pg_stat_activity WHERE "
                               "application_name = %s AND datname = current_database()",
                               (APPLICATION_NAME,)).fetchone()[0]:
            assert time.monotonic() < deadline, "the server never connected"
            time.sleep(0.1)
    _same_with_the_server_off(argv, repo, env)


def _same_with_the_server_off(argv: list[str], repo: Path, env: dict) -> None:
    """``argv`` (a ``wiki search --json``) run with the server and without it: both exit
    0 with the same hits (scores to 4 places), the vector leg among the legs."""
    served = subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True,
                            timeout=300)
    assert served.returncode == 0, served.stderr[-2000:]
    here = subprocess.run(argv, cwd=repo, capture_output=True, text=True,
                          env={**env, "WIKI_EMBED_SERVER": "off"}, timeout=300)
    assert here.returncode == 0, here.stderr[-2000:]
    ranked = [(h["path"], round(h["score"], 4)) for h in json.loads(served.stdout)["hits"]]
    assert ranked and ranked == [(h["path"], round(h["score"], 4))
                                 for h in json.loads(here.stdout)["hits"]]
    assert "vector" in json.loads(served.stdout)["legs"]


def test_whatever_answers_on_the_socket_never_shows_what_the_filters_leave_out(
        pg_database: str, remote) -> None:
    """A reply out of protocol is ranked in the database; a well-formed one naming a
    superseded entry or one outside the scope is checked against the filters again."""
    import shutil
    import tempfile

    from test_server_nearest import HostileServer

    from indexes.embedding.query_vector import QueryVector

    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("signing keys")
        expected = [h.key for h in index.search_vector(query, MODEL, limit=3,
                                                       ask_server=False)]
        short = Path(tempfile.mkdtemp(prefix="hp-", dir="/tmp"))
        try:
            for number, reply in enumerate((
                    b'{"ok": true, "hits": [["d01", 0.99], ["x", 1.5]]}\n', b"garbage\n",
                    b'{"ok": false, "error": "\\u001b[31mred"}\n')):
                where = short / f"h{number}.sock"
                HostileServer(where, reply)
                hostile = QueryVector(query.data, query.dim, searcher=RemoteEmbedder(
                    MODEL, socket_path=where, start=False, request_timeout=5))
                assert [h.key for h in index.search_vector(hostile, MODEL, limit=3)] == \
                    expected
            where = short / "excl.sock"  # d09 is superseded, d01 outside team-a
            HostileServer(where, b'{"ok": true, "hits": [["d09", 0.9], ["d01", 0.8]]}\n')
            squatter = QueryVector(query.data, query.dim, searcher=RemoteEmbedder(
                MODEL, socket_path=where, start=False, request_timeout=5))
            assert [h.key for h in index.search_vector(squatter, MODEL, limit=3)] == ["d01"]
            assert index.search_vector(squatter, MODEL, limit=3,
                                       filters=Filters(scope="team-a")) == []
            assert [h.key for h in index.start_vector(squatter, MODEL, limit=3,
                                                      filters=None)()] == ["d01"]
        finally:
            shutil.rmtree(short, ignore_errors=True)


# found by an adversarial review of nearest_space (helper-36); each failed before its fix

def _ask(remote, index: PgIndex, query, filters: Filters | None = None, limit: int = 8):
    return remote.nearest_space(query, connection_address(index.conn), index.space,
                                index.vectors.stamp(), MODEL, limit=limit, filters=filters)


def _keys(hits) -> list[tuple[str, float]]:
    return [(h.key, round(h.score, 5)) for h in hits]


def _server_connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name "
                            "= %s AND datname = current_database()",
                            (APPLICATION_NAME,)).fetchone()[0]


def test_documents_changed_without_a_vector_write_are_served_as_the_database_ranks(
        pg_database: str, remote) -> None:
    """A status, scope or expiry change and a delete move no vector stamp: the server's
    filter is kept per ``wiki_stats.version`` and follows them."""
    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("travel voucher for taxi receipts")
        _served(remote, index, query, None)

        def same(filters: Filters | None = None, limit: int = 8) -> None:
            assert _keys(index.search_vector(query, MODEL, limit=limit, filters=filters)) \
                == _keys(index.search_vector(query, MODEL, limit=limit, filters=filters,
                                             ask_server=False))

        same()
        top = index.search_vector(query, MODEL, limit=1, ask_server=False)[0].key
        index.conn.execute("UPDATE wiki_docs SET status = 'superseded' WHERE space = 's' "
                           "AND key = %s", (top,))
        same()
        assert top not in [h.key for h in index.search_vector(query, MODEL, limit=8)]
        index.conn.execute("UPDATE wiki_docs SET scope = 'zz' WHERE space = 's' AND "
                           "key = 'd00'")
        same(Filters(scope="team-a"))
        index.conn.execute("UPDATE wiki_docs SET valid_until = '2020-01-01T00:00:00Z' "
                           "WHERE space = 's' AND key = 'd05'")
        same(Filters(valid_at="2024-06-01T00:00:00Z"))
        for limit in (1, 3, 30, 100):
            same(limit=limit)


def test_an_embedding_another_space_saves_reaches_the_served_ranking(
        pg_database: str, remote) -> None:
    """Embeddings are shared by a database's spaces, and another space saving one moves
    only its own stamp: a matrix read while a chunk waited for its vector is never kept,
    so the server cannot go on ranking without that chunk."""
    docs = [Document(key=f"d{i}", doc_id=f"d{i}", title=f"t{i}", body=text)
            for i, text in enumerate(TEXTS)]
    with PgIndex(pg_database, "a") as a, PgIndex(pg_database, "b") as b:
        b.upsert(docs[:4])
        ensure_vectors(b, remote)
        b.upsert(docs[4:])  # four more, their vectors pending
        query = remote.encode_query("taxi receipts and per diem on a trip")
        assert _ask(remote, b, query) is None  # the server reads b's matrix (4 entries)
        time.sleep(2)
        a.upsert(docs)
        ensure_vectors(a, remote)  # a embeds all eight texts, b's four among them
        ensure_vectors(b, remote)  # nothing pending for b: no write, b's stamp unmoved
        database = b.search_vector(query, MODEL, limit=8, ask_server=False)
        assert len(database) == 8
        assert [k for k, _ in _served(remote, b, query, None)] == [h.key for h in database]


def test_a_busy_writer_does_not_pile_up_reads_of_one_space(pg_database: str, remote) -> None:
    """One read per space at a time, whatever stamps the server is asked about."""
    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("annual leave")
        blocker = psycopg.connect(pg_database, autocommit=True)
        try:
            blocker.execute("BEGIN")
            blocker.execute("LOCK TABLE wiki_embeddings IN ACCESS EXCLUSIVE MODE")
            for i in range(12):  # a write moves the stamp, a search asks after each
                index.vectors.replace_chunks(f"d{i:02d}", [TEXTS[i % 8] + f" ({i})"])
                assert _ask(remote, index, query) is None
            time.sleep(1)
            piled = _server_connections(pg_database)
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
    assert piled <= 3, f"{piled} server connections for one space"


@pytest.mark.parametrize("encoded, secret", [
    ("ab%26cd%20SECRETTAIL", "ab&cd SECRETTAIL"),  # quoted in key=value: a space
    ("ab%26cdSECRETTAIL", "ab&cdSECRETTAIL")])  # unquoted: the '&' is part of the value
def test_the_password_never_reaches_an_error_reply_or_the_server_log(
        pg_database: str, remote, encoded: str, secret: str) -> None:
    """libpq's ``key=value`` form quotes a password only when it holds a space, and an
    unquoted value runs to the next space, ``&`` included; masking stopped at the first
    ``&`` or space either way, so an error that names the index named the rest of it (a
    URL's separator is not libpq's). Found by both reviews."""
    from indexes.pg.schema import VERSION

    url = pg_database.replace("postgres:@", f"postgres:{encoded}@", 1)
    with PgIndex(url, "s") as index:
        assert index.conn.info.password == secret
        _corpus(index, remote)
        query = remote.encode_query("annual leave")
        request = {"op": "nearest_space", "model": MODEL,
                   "conninfo": connection_address(index.conn), "space": "s",
                   "stamp": index.vectors.stamp(), "filters": None, "limit": 3,
                   "vector": _base64(query)}
        index.conn.execute("UPDATE wiki_schema SET version = %s", (VERSION + 1,))
        try:
            with socket.socket(socket.AF_UNIX) as sock:  # the server's first open refuses
                sock.connect(str(remote.socket_path))
                sock.sendall(json.dumps(request).encode() + b"\n")
                reply = json.loads(sock.makefile("rb").readline())
        finally:
            index.conn.execute("UPDATE wiki_schema SET version = %s", (VERSION,))
    assert reply.get("ok") is False and "schema version" in reply["error"], reply
    log = remote.socket_path.with_name(remote.socket_path.stem + ".log").read_text()
    for said in (reply["error"], log):
        assert "SECRETTAIL" not in said, said[-500:]

def test_a_write_under_way_does_not_hold_up_a_served_search(pg_database: str,
                                                            remote) -> None:
    """The server opens a database as a reader: no schema statement of its first open
    waits for another process's open write transaction."""
    import threading

    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
        query = remote.encode_query("annual leave")
        database = _keys(index.search_vector(query, MODEL, limit=8, ask_server=False))
        with psycopg.connect(pg_database) as writer:  # a sync's transaction, under way
            writer.execute("UPDATE wiki_docs SET title = title || '!' WHERE space = 's'")
            found: list = []
            asking = threading.Thread(target=lambda: found.append(_served(
                remote, index, query, None)))
            asking.start()
            asking.join(20)
            waited = asking.is_alive()
            writer.rollback()
        asking.join(60)
    assert not waited, "the served search waited for a writer"
    assert [(k, round(s, 5)) for k, s in found[0]] == database


def test_spaces_searched_in_turn_are_each_answered_by_the_server(pg_database: str,
                                                                 remote) -> None:
    """Three spaces (branches, wikis) searched in turn stay kept: the least recently used
    matrix goes first, and a used one is not evicted."""
    indexes = [PgIndex(pg_database, name) for name in ("a", "b", "c")]
    try:
        for index in indexes:
            _corpus(index, remote)
        query = remote.encode_query("annual leave")
        for index in indexes:
            _served(remote, index, query, None)
        assert all(_ask(remote, index, query) is not None
                   for _ in range(2) for index in indexes)
    finally:
        for index in indexes:
            index.close()


def test_an_as_of_snapshot_space_is_never_kept(wiki, repo: Path, on_postgres: str) -> None:
    """``--as-of`` searches a throwaway space: neither the embedding server nor a
    long-running process keeps its matrix (it would push out the live space's)."""
    from conftest import ingest_and_land, write

    from indexes.pg.connections import KEPT
    from wiki.store.derived import snapshot_index

    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    KEPT.keep(2)
    try:
        with snapshot_index(wiki, wiki.repo.commit(wiki.branch).hexsha) as index:
            assert "@" in index.space and index.vectors.kept is None
            assert index.vectors.server_ranking(MODEL, limit=3, filters=None) is None
    finally:
        KEPT.keep(0)


def test_idle_connections_to_a_database_no_longer_used_are_closed(
        pg_database: str, pg_url: str, monkeypatch) -> None:
    """An idle connection past ``MAX_IDLE_S`` is closed on the next take or give back of
    any database, and by ``sweep``; before, only of its own database."""
    from indexes.pg import connections
    from indexes.pg.connections import KEPT
    from indexes.pg.engine import connect

    monkeypatch.setattr(connections, "MAX_IDLE_S", 0.2)
    KEPT.keep(2)
    try:
        first = KEPT.take(pg_database, connect)
        KEPT.give_back(pg_database, first)
        time.sleep(0.3)
        other = KEPT.take(pg_url, connect)
        assert first.closed
        KEPT.give_back(pg_url, other)
        time.sleep(0.3)
        KEPT.sweep()
        assert other.closed
    finally:
        KEPT.keep(0)


# found by a second adversarial review (helper-37); each failed before its fix

def test_scrubbed_masks_a_password_that_libpq_form_escapes_without_quotes(
        pg_database: str) -> None:
    """A password with ``'`` or ``\\`` but no space travels backslash-escaped and
    unquoted (``password=it\\'sSECRET``); ``_unquoted`` undoes escapes only inside
    quotes, so ``scrubbed`` looks for ``it\\'sSECRET`` and a message naming the password
    as libpq read it (``it'sSECRET``) keeps it."""
    from indexes.backend import scrubbed

    url = pg_database.replace("postgres:@", "postgres:it%27sSECRET@", 1)
    with PgIndex(url, "s") as index:
        conninfo = connection_address(index.conn)
        password = index.conn.info.password
    assert password == "it'sSECRET"
    said = scrubbed(f'could not use "{password}"', conninfo)
    assert "SECRET" not in said, said


def test_reads_stuck_on_one_database_do_not_starve_another(pg_url: str, pg_database: str,
                                                           remote) -> None:
    """``READERS`` (2) reads at once, and a read has no statement or lock timeout: two
    reads waiting on a lock in one database (an ``ACCESS EXCLUSIVE`` lock held by an
    idle-in-transaction session, a ``VACUUM FULL``, a silent network) hold both slots for
    as long as it lasts, and no other database's space is ever read meanwhile: its
    commands rank in the database (the slow path) without bound."""
    other = "other_" + pg_database.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {other} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {other}")
    other_url = pg_url.replace("/postgres?", f"/{other}?", 1)
    blocker = psycopg.connect(pg_database, autocommit=True)
    try:
        a, b = PgIndex(pg_database, "a"), PgIndex(pg_database, "b")
        try:
            _corpus(a, remote)
            _corpus(b, remote)
            query = remote.encode_query("annual leave")
            blocker.execute("BEGIN")
            blocker.execute("LOCK TABLE wiki_chunks IN ACCESS EXCLUSIVE MODE")
            assert _ask(remote, a, query) is None  # a read of a starts, waits on the lock
            assert _ask(remote, b, query) is None  # and one of b
            time.sleep(1)
            with PgIndex(other_url, "s") as elsewhere:
                _corpus(elsewhere, remote)
                deadline, found = time.monotonic() + 20, None
                while found is None and time.monotonic() < deadline:
                    found = _ask(remote, elsewhere, query)
                    time.sleep(0.2)
        finally:
            blocker.execute("ROLLBACK")
            a.close()
            b.close()
    finally:
        blocker.close()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {other} WITH (FORCE)")
    assert found is not None, "another database's space was never read in 20 s"


def test_an_as_of_search_on_postgres_answers_as_without_the_server(
        repo: Path, cli, served_runtime: Path, on_postgres: str) -> None:
    """``wiki search --as-of`` on PostgreSQL with the server on: the throwaway space is
    ranked in the database, with the same hits as with the server off."""
    from served_vectors import TOPICS, landed_with_server

    env = landed_with_server(cli, repo, {f"{name}.md": f"# {name.title()}\n\n{text}\n"
                                         for name, text in TOPICS.items()}, served_runtime)
    argv = [sys.executable, "-m", "wiki_cli", "search", "--json", "--as-of",
            "2999-01-01", "travel voucher"]
    _same_with_the_server_off(argv, repo, env)
    with psycopg.connect(on_postgres, autocommit=True) as conn:
        assert not conn.execute("SELECT count(*) FROM wiki_meta WHERE space LIKE '%@%'"
                                ).fetchone()[0]


def test_an_open_with_a_statement_timeout_is_cancelled_and_hands_back_a_plain_connection(
        pg_database: str, remote) -> None:
    """The server's matrix reads open with ``statement_timeout_s``: one held up by a lock
    is cancelled, and the connection it hands back to be kept has no timeout left."""
    from indexes.pg.connections import KEPT

    with PgIndex(pg_database, "s") as index:
        _corpus(index, remote)
    KEPT.keep(1)
    blocker = psycopg.connect(pg_database, autocommit=True)
    try:
        blocker.execute("BEGIN")
        blocker.execute("LOCK TABLE wiki_chunks IN ACCESS EXCLUSIVE MODE")
        with PgIndex(pg_database, "s", reader=True, statement_timeout_s=1) as index:
            started = time.monotonic()
            with pytest.raises(psycopg.errors.QueryCanceled):
                index.vectors.matrix(MODEL, 384)
            assert time.monotonic() - started < 10
        blocker.execute("ROLLBACK")
        with PgIndex(pg_database, "s") as index:  # the kept connection, reused
            assert index.conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
            assert index.conn.execute("SHOW application_name").fetchone()[0] == "wiki"
    finally:
        blocker.close()
        KEPT.keep(0)
