"""What the SQLite engine keeps between searches (``index.memo``) never outlives a write,
and the vector leg ranked on a worker thread (``start_vector``) equals the one ranked in
line (``search_vector``)."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from indexes.documents import Document
from indexes.errors import IndexesError
from indexes.retrieval.coverage import coverage
from indexes.retrieval.filters import Filters
from indexes.sqlite.engine import SearchIndex


def doc(key: str, body: str, scope: str = "") -> Document:
    return Document(key=key, doc_id=key, title=key, body=body, scope=scope)


def test_a_write_by_another_connection_is_seen_by_the_next_search(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    with SearchIndex(path) as reader, SearchIndex(path) as writer:
        writer.upsert([doc(f"d{i}", "alpha beta gamma" if i < 3 else "beta gamma")
                       for i in range(8)])
        before = [h.key for h in reader.search_bm25("alpha beta", limit=20)]
        assert before and set(before) == {f"d{i}" for i in range(8)}
        assert reader.count(Filters(scope="team")) == 0
        assert coverage(reader, "alpha delta", "d0") == pytest.approx(
            coverage(reader, "alpha delta", "d0"))
        gap_before = coverage(reader, "alpha delta", "d0")

        writer.upsert([doc("new", "alpha delta delta", scope="team")])

        assert "new" in [h.key for h in reader.search_bm25("alpha beta", limit=20)]
        assert reader.count(Filters(scope="team")) == 1
        assert coverage(reader, "alpha delta", "d0") != gap_before  # df of delta moved
        assert [h.key for h in reader.search_bm25("delta", limit=5,
                                                   filters=Filters(scope="team"))] == ["new"]


def test_a_write_on_the_same_connection_is_seen_too(tmp_path: Path) -> None:
    with SearchIndex(tmp_path / "index.sqlite") as index:
        index.upsert([doc("a", "alpha beta"), doc("b", "beta")])
        assert index.count() == 2
        assert [h.key for h in index.search_bm25("alpha", limit=5)] == ["a"]
        index.delete(["a"])
        assert index.count() == 1
        assert index.search_bm25("alpha", limit=5) == []


def _indexed_with_vectors(path: Path) -> SearchIndex:
    index = SearchIndex(path)
    index.upsert([doc(f"d{i}", f"word{i} shared text", scope="s" if i % 3 == 0 else "")
                  for i in range(30)])
    index.vectors.prepare_model("m", 8)
    pending = index.vectors.pending("m")
    vectors = np.random.default_rng(7).normal(size=(len(pending), 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.vectors.save("m", [h for h, _ in pending], vectors)
    return index


@pytest.mark.parametrize("filters", [None, Filters(scope="s")])
def test_the_vector_leg_on_a_worker_equals_the_leg_in_line(tmp_path: Path, filters) -> None:
    with _indexed_with_vectors(tmp_path / "index.sqlite") as index:
        query = np.random.default_rng(3).normal(size=8).astype(np.float32)
        query /= np.linalg.norm(query)
        first = index.start_vector(query, "m", limit=7, filters=filters)()  # no matrix yet
        inline = index.search_vector(query, "m", limit=7, filters=filters)
        pending: Future = Future()
        pending.set_result(query)
        worker = index.start_vector(pending, "m", limit=7, filters=filters)()  # matrix read
        expect = [(h.key, h.score) for h in inline]
        assert len(expect) == 7
        assert [(h.key, h.score) for h in first] == expect
        assert [(h.key, h.score) for h in worker] == expect
        if filters:
            assert {h.key for h in worker} <= {f"d{i}" for i in range(0, 30, 3)}


def test_a_failed_query_vector_is_raised_by_the_call_that_waits(tmp_path: Path) -> None:
    with _indexed_with_vectors(tmp_path / "index.sqlite") as index:
        failed: Future = Future()
        failed.set_exception(IndexesError("no model"))
        hits = index.start_vector(failed, "m", limit=3)
        with pytest.raises(IndexesError, match="no model"):
            hits()


def test_nothing_read_inside_a_rolled_back_write_is_kept(tmp_path: Path) -> None:
    """A rollback moves neither counter the memo watches, so what a transaction reads is
    never kept (it saw rows that then vanished)."""
    with SearchIndex(tmp_path / "index.sqlite") as index:
        index.upsert([doc("a", "alpha beta"), doc("b", "beta")])
        with pytest.raises(RuntimeError), index.transaction():
            index.upsert([doc("c", "alpha gamma", scope="team")])
            assert index.count() == 3
            assert index.count(Filters(scope="team")) == 1
            assert len(index.search_bm25("alpha", limit=5)) == 2
            raise RuntimeError("abandon the write")
        assert index.count() == 2
        assert index.count(Filters(scope="team")) == 0
        assert [h.key for h in index.search_bm25("alpha gamma", limit=5)] == ["a"]


def test_a_limit_of_zero_ranks_nothing(tmp_path: Path) -> None:
    with SearchIndex(tmp_path / "index.sqlite") as index:
        index.upsert([doc("a", "alpha beta"), doc("b", "beta gamma")])
        assert index.search_bm25("alpha beta gamma", limit=0) == []


def test_the_matrix_is_shared_by_later_opens_of_the_file_until_it_changes(
        tmp_path: Path) -> None:
    """A server opens the index anew for each call: the matrix read by one open is the
    next open's (same object), until a write (by any connection) renews the stamp; a file
    replaced at the same path never gets the old file's matrix."""
    import shutil

    path = tmp_path / "index.sqlite"
    _indexed_with_vectors(path).close()
    with SearchIndex(path) as first:
        kept = first.vectors.matrix("m", 8)
    with SearchIndex(path) as second:
        assert second.vectors.current("m") is kept
        assert second.vectors.matrix("m", 8) is kept
        second.upsert([doc("late", "late words")])
        late = np.ones((1, 8), dtype=np.float32) / np.sqrt(8)
        second.vectors.save("m", [h for h, _ in second.vectors.pending("m")], late)
    with SearchIndex(path) as third:
        assert third.vectors.current("m") is None
        renewed = third.vectors.matrix("m", 8)
        assert renewed is not kept and "late" in renewed.keys
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    path.unlink()
    copy.rename(path)  # another file at the same path, same stamp
    with SearchIndex(path) as replaced:
        assert replaced.vectors.current("m") is None
        assert replaced.vectors.matrix("m", 8) is not renewed


def test_a_matrix_read_inside_a_rolled_back_write_is_never_shared(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    _indexed_with_vectors(path).close()
    with SearchIndex(path) as index, index.transaction():
        index.upsert([doc("never", "rolled back")])
        index.vectors.save("m", [h for h, _ in index.vectors.pending("m")],
                           np.ones((1, 8), dtype=np.float32) / np.sqrt(8))
        inside = index.vectors.matrix("m", 8)
        assert "never" in inside.keys
        index.conn.execute("ROLLBACK")
        index.conn.execute("BEGIN")
    with SearchIndex(path) as other:
        assert "never" not in other.vectors.matrix("m", 8).keys
