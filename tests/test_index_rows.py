"""The search index's typed reads (indexes/sqlite/rows.py), its file checks (indexes/sqlite/dbfile.py),
SQLite's error meanings (indexes/sqlite/faults.py) and the LLM cache table (indexes/sqlite/llm_cache.py),
on real SQLite files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from indexes.documents import Document
from indexes.sqlite.dbfile import borrow_embeddings, copy_readable, quick_check, schema_names
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.faults import DatabaseError, OperationalError, is_damage, sqlite_storage_cause
from indexes.sqlite.llm_cache import ResponseTable
from indexes.sqlite.rows import Attributes, Card


def _docs() -> list[Document]:
    return [
        Document("a.md", "id-a", "Alpha", summary="first", body="alpha body",
                 aliases=("A1",), tags=("x", "y"), doc_type="fact", dated="2024-01-02",
                 extra={"importance": 0.9, "relations": {"depends_on": ["id-b"]}}),
        Document("b.md", "id-b", "Beta", body="beta body", status="superseded",
                 category="pages/tools", extra={"sources": [{"uri": "git:README.md"}]}),
        Document("c.md", "id-b", "Gamma", body="gamma body", category="pages/travel"),
    ]


def _index(path: Path | str = ":memory:") -> SearchIndex:
    index = SearchIndex(path)
    with index.transaction():
        index.upsert(_docs())
    return index


def test_typed_reads_of_given_keys() -> None:
    with _index() as index:
        assert [(h.key, h.title, h.status, h.score) for h in index.docs.hits(
            ["c.md", "a.md", "nope.md"])] == [("a.md", "Alpha", "active", 0.0),
                                               ("c.md", "Gamma", "active", 0.0)]
        assert index.docs.titles(["b.md", "zz"]) == {"b.md": "Beta"}
        assert index.docs.cards(["a.md"]) == {"a.md": Card("Alpha", "first", "x y", "A1",
                                                           "alpha body")}
        found = index.docs.attributes(["a.md"])["a.md"]
        assert isinstance(found, Attributes)
        assert (found.doc_type, found.dated, found.extra["importance"]) == \
            ("fact", "2024-01-02", 0.9)
        assert index.docs.hits([]) == [] and index.docs.titles([]) == {}


def test_whole_table_reads() -> None:
    with _index() as index:
        assert index.docs.categories() == {"a.md": "", "b.md": "pages/tools",
                                           "c.md": "pages/travel"}
        assert index.docs.status_counts() == {"active": 2, "superseded": 1}
        assert index.docs.duplicate_doc_ids() == ["id-b"]
        assert index.get("a.md")["extra"]["importance"] == 0.9
        assert index.get("missing.md") is None


def test_marks_expansion_and_delete_through_the_index() -> None:
    with _index() as index:
        with index.transaction():
            assert index.mark_sources(["git:README.md", "git:other"], "abc", "now") == ["b.md"]
        assert index.marks() == {"b.md": [{"uri": "git:README.md", "commit": "abc",
                                           "marked_at": "now"}]}
        assert index.marks(["a.md"]) == {}
        assert index.expand({"a.md": 1.0}, ["depends_on"]) == {
            "b.md": (0.5, 1, "a.md"), "c.md": (0.5, 1, "a.md")}
        with index.transaction():
            index.delete(["b.md", "c.md"])
        assert index.marks() == {} and index.docs.status_counts() == {"active": 1}


def test_file_checks_and_a_readable_copy(tmp_path: Path) -> None:
    live = tmp_path / "live.sqlite"
    with _index(live) as index:
        assert quick_check(index) == "ok"
        assert {"docs", "docs_fts", "revalidate", "docs_ai"} <= schema_names(index)
        index.conn.execute("INSERT INTO embeddings VALUES (?, 'm', 1, x'00000000')",
                           [index.conn.execute("SELECT text_hash FROM chunks").fetchone()[0]])
    copy_readable(live, tmp_path / "copy.sqlite")
    with SearchIndex(tmp_path / "copy.sqlite") as copy:
        assert copy.docs.titles(["a.md"]) == {"a.md": "Alpha"}
    with _index(tmp_path / "snapshot.sqlite") as snapshot:
        borrow_embeddings(snapshot, live)
        assert snapshot.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
        borrow_embeddings(snapshot, tmp_path / "no-such-dir" / "x.sqlite")  # only a saving
    copy_readable(tmp_path / "absent.sqlite", tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()


def test_fault_meanings(tmp_path: Path) -> None:
    assert DatabaseError is sqlite3.DatabaseError and OperationalError is sqlite3.OperationalError
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    try:
        sqlite3.connect(junk).execute("PRAGMA user_version")
    except DatabaseError as exc:
        assert is_damage(exc) and sqlite_storage_cause(exc) is None
    else:
        raise AssertionError("SQLite read a junk file")
    try:
        sqlite3.connect(tmp_path / "missing" / "x.sqlite")
    except OperationalError as exc:
        assert sqlite_storage_cause(exc) == "unable to open database file"
        assert not is_damage(exc)
    assert sqlite_storage_cause(OSError("x")) is None and not is_damage(ValueError("x"))


def test_the_llm_cache_table_replaces_a_file_that_is_not_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "llm-cache.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"not a database at all" * 100)
    table = ResponseTable.open_replacing(path)
    table.put("k", "fake/model", '{"a": 1}')
    assert (table.get("k"), table.get("other"), table.count()) == ('{"a": 1}', None, 1)
    table.close()
    again = ResponseTable.open_replacing(path)
    assert again.get("k") == '{"a": 1}'
    again.clear()
    assert again.count() == 0
    again.close()
