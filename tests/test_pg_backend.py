"""The PostgreSQL backend itself: selection, spaces that never leak, concurrent syncers,
incremental sync, and a clear error for a database that cannot be reached."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import ALICE, BOB, entry_text, git

from indexes.backend import IndexBackend, open_backend
from indexes.documents import Document
from indexes.errors import IndexUnavailableError
from indexes.pg.engine import PgIndex
from indexes.sqlite.engine import SearchIndex
from wiki.answering.search import search_for
from wiki.review.proposals import approve, propose
from wiki.store.derived import open_index, open_synced
from wiki.store.workspace import Wiki


def _seed(wiki: Wiki, entries: dict[str, str]) -> None:
    proposal = propose(wiki, {p: t.encode() for p, t in entries.items()}, base=None,
                          kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


def _wiki(tmp_path: Path, name: str, entries: dict[str, str]) -> Wiki:
    path = tmp_path / name
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# x\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    wiki = Wiki(path)
    wiki.init()
    _seed(wiki, entries)
    return wiki


def test_both_backends_are_the_protocol(tmp_path, pg_database) -> None:
    with SearchIndex(tmp_path / "x.sqlite") as lite, PgIndex(pg_database, "s") as pg:
        assert isinstance(lite, IndexBackend) and isinstance(pg, IndexBackend)


def test_the_url_selects_postgres_and_no_sqlite_file_is_made(wiki: Wiki,
                                                             on_postgres) -> None:
    _seed(wiki, {"a/x.md": entry_text("x1", "Travel voucher", "File the voucher.")})
    index = open_index(wiki)
    try:
        assert isinstance(index, PgIndex)
        assert index.space == f"{wiki.state_dir.parent.resolve()}:{wiki.branch}"
    finally:
        index.close()
    assert [h.key for h in search_for(wiki, "voucher").hits] == ["a/x.md"]
    assert not wiki.database_path().exists()


def test_git_config_selects_postgres_and_names_the_space(wiki: Wiki, pg_database) -> None:
    git(wiki.repo.working_tree_dir, "config", "wiki.indexUrl", pg_database)
    git(wiki.repo.working_tree_dir, "config", "wiki.indexSpace", "team-handbook")
    _seed(wiki, {"a/x.md": entry_text("x1", "Travel voucher", "File the voucher.")})
    index = open_synced(wiki).index
    try:
        assert isinstance(index, PgIndex) and index.space == "team-handbook"
        assert index.count() == 1
    finally:
        index.close()


def test_zero_leaks_across_spaces(tmp_path, on_postgres) -> None:
    """Two repositories in one database: every leg of each sees only its own entries."""
    one = _wiki(tmp_path, "one", {"a/x.md": entry_text("x1", "Travel voucher",
                                                       "Per diem and voucher rules.",
                                                       aliases="[per diem]")})
    two = _wiki(tmp_path, "two", {"b/y.md": entry_text("y1", "Voucher secrets",
                                                       "Per diem secret voucher text.",
                                                       aliases="[per diem]")})
    for query in ("voucher", "per diem", "secret", "vouch", "travel"):
        assert {h.key for h in search_for(one, query).hits} <= {"a/x.md"}
        assert {h.key for h in search_for(two, query).hits} <= {"b/y.md"}
    assert [h.key for h in search_for(one, "secret").hits] == []
    with open_index(one) as index:
        assert index.count() == 1 and index.docs.titles(["b/y.md"]) == {}
        assert index.search_names("per diem", filters=None)[0].key == "a/x.md"
        assert index.keys_for_doc_id("y1") == []


def test_branches_of_one_repository_are_separate_spaces(wiki: Wiki, pg_database,
                                                        monkeypatch) -> None:
    monkeypatch.setenv("WIKI_INDEX_URL", pg_database)
    _seed(wiki, {"a/x.md": entry_text("x1", "Main voucher", "The main branch.")})
    other = Wiki(wiki.repo.working_tree_dir, branch="kb")
    other.init()
    _seed(other, {"b/y.md": entry_text("y1", "Other voucher", "The kb branch.")})
    assert [h.key for h in search_for(wiki, "voucher").hits] == ["a/x.md"]
    assert [h.key for h in search_for(other, "voucher").hits] == ["b/y.md"]


def test_sync_is_incremental(wiki: Wiki, on_postgres) -> None:
    _seed(wiki, {f"a/e{i}.md": entry_text(f"e{i}", f"Entry {i}", f"Body {i}.") for i in range(5)})
    synced = open_synced(wiki)
    index, report = synced.index, synced.report  # approve already brought it to the head
    count = index.count()
    index.close()
    assert (report.added, report.updated, report.removed, count) == (0, 0, 0, 5)
    proposal = propose(wiki, {"a/e1.md": entry_text("e1", "Entry one", "Changed body.").encode()},
                          base=wiki.require_head(), kind="edit", subject="edit", author=ALICE).proposal
    # landed by plain git (a fast-forward): approve would itself sync the index
    wiki.store.update_ref(wiki.ref, proposal.tip, wiki.require_head(), "plain-git landing")
    synced = open_synced(wiki)
    index, report = synced.index, synced.report
    try:
        assert (report.added, report.updated, report.removed) == (0, 1, 0)
        assert index.count() == 5
    finally:
        index.close()


def test_concurrent_syncers_neither_duplicate_nor_lose_rows(pg_database) -> None:
    """Eight threads, each its own connection, write the same space at once."""
    documents = [Document(f"k{i}", f"d{i}", f"Title {i}", body=f"body {i}") for i in range(40)]
    errors: list[BaseException] = []

    def write(offset: int) -> None:
        try:
            with PgIndex(pg_database, "shared") as index, index.transaction():
                if index.get_meta("done") is None:
                    index.upsert(documents[offset:] + documents[:offset])
                    index.set_meta("done", str(offset))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i * 5,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with PgIndex(pg_database, "shared") as index:
        assert index.count() == 40
        assert sorted(index.content_hashes()) == sorted(d.key for d in documents)
        assert index.vectors.counts("none")[0] == 40  # one chunk each, none doubled


def test_concurrent_wiki_syncs_agree(tmp_path, on_postgres) -> None:
    wiki = _wiki(tmp_path, "w", {f"a/e{i}.md": entry_text(f"e{i}", f"Entry {i}", "Body.")
                                 for i in range(12)})
    found: list[int] = []

    def sync() -> None:
        index = open_synced(Wiki(wiki.repo.working_tree_dir)).index
        try:
            found.append(index.count())
        finally:
            index.close()

    threads = [threading.Thread(target=sync) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [12] * 6


def test_an_unreachable_database_is_a_clear_error(cli, wiki: Wiki, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_INDEX_URL", "postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(IndexUnavailableError, match="cannot reach the index database"):
        open_index(wiki)
    result = cli("search", "voucher")
    assert result.exit_code == 2, result.output
    assert "cannot reach the index database" in result.output


def test_another_engine_is_refused() -> None:
    with pytest.raises(IndexUnavailableError, match="only postgresql://"):
        open_backend("mysql://x/y", "s")


def test_a_connection_lost_mid_command_is_a_typed_error(pg_database) -> None:
    import psycopg

    from indexes.backend import as_index_error

    index = PgIndex(pg_database, "s")
    try:
        pid = index.conn.info.backend_pid
        with psycopg.connect(pg_database, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError) as caught:
            index.count()
        mapped = as_index_error(caught.value)
        assert isinstance(mapped, IndexUnavailableError)
        assert str(mapped).startswith("the index database failed: ")
        assert as_index_error(ValueError("x")) is None
    finally:
        index.close()


def test_a_password_in_the_url_is_never_shown(wiki: Wiki, monkeypatch) -> None:
    from indexes.backend import redacted
    from wiki.store.index_url import index_location

    assert redacted("postgresql://wiki:s3cret@db:5432/wiki") == "postgresql://wiki:***@db:5432/wiki"
    assert redacted("postgresql://wiki@db/wiki") == "postgresql://wiki@db/wiki"
    monkeypatch.setenv("WIKI_INDEX_URL", "postgresql://wiki:s3cret@127.0.0.1:1/wiki")
    assert "s3cret" not in index_location(wiki)
    with pytest.raises(IndexUnavailableError) as caught:
        open_index(wiki)
    assert "s3cret" not in str(caught.value)


def test_as_of_searches_the_past_on_postgres_and_leaves_nothing(wiki: Wiki, on_postgres,
                                                                 tmp_path, monkeypatch) -> None:
    """``--as-of`` on a PostgreSQL wiki builds the past in a space of its own in the same
    database (no SQLite file, not even a temporary one) and clears that space after."""
    import datetime as dt
    import tempfile

    import psycopg

    def raw(month: int) -> str:
        return f"{int(dt.datetime(2026, month, 1, 12, tzinfo=dt.UTC).timestamp())} +0000"

    monkeypatch.setenv("GIT_COMMITTER_DATE", raw(1))
    _seed(wiki, {"a/old.md": entry_text("old", "Per diem rate", "The rate is $59.")})
    monkeypatch.setenv("GIT_COMMITTER_DATE", raw(3))
    _seed(wiki, {"a/new.md": entry_text("new", "Per diem rate 2026", "The rate is $68.")})
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "absent"))  # no temporary file
    then = search_for(wiki, "per diem rate", as_of=dt.datetime(2026, 2, 1, tzinfo=dt.UTC))
    assert [h.key for h in then.hits] == ["a/old.md"]
    assert not wiki.database_path().exists()
    with psycopg.connect(on_postgres) as conn:
        spaces = {r[0] for r in conn.execute("SELECT DISTINCT space FROM wiki_docs")}
        spaces |= {r[0] for r in conn.execute("SELECT DISTINCT space FROM wiki_meta")}
    assert not any("@" in space for space in spaces), spaces
