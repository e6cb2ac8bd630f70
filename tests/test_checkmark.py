"""The check mark of the derived database (indexes/sqlite/checkmark.py): an unchanged file is
not checked again by every read, and any change (by this program, by hand, by a disk)
brings the checks back."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from conftest import BOB, acting_as, write

from indexes.sqlite import checkmark


def _age(*paths: Path, seconds: int = 10) -> None:
    """Make files look last modified ``seconds`` ago (quiet, as between two searches)."""
    for path in paths:
        info = path.stat()
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns - seconds * 1_000_000_000))


def _db(repo: Path) -> Path:
    return repo / ".git" / "wiki" / "wiki.sqlite"


def _land(cli, repo: Path) -> Path:
    write(repo / "docs" / "travel.md", "# Travel vouchers\n\nFile a travel voucher in "
          "Concur within five days of returning.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    assert cli("search", "tock").exit_code == 0  # indexed and embedded
    return _db(repo)


def test_a_fact_is_recorded_only_for_a_quiet_unchanged_file(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    db.write_bytes(b"x" * 100)
    before = checkmark.stamp(db)
    assert before is not None
    assert not checkmark.record(db, checkmark.SOUND, before)  # just written: not quiet
    assert checkmark.facts(db, before) == frozenset()
    _age(db)
    aged = checkmark.stamp(db)
    assert aged != before  # the modification time is part of the stamp
    assert checkmark.record(db, checkmark.SOUND, aged)
    assert checkmark.record(db, "vectors m:3", aged)
    assert checkmark.facts(db, aged) == {checkmark.SOUND, "vectors m:3"}
    assert not checkmark.record(db, "other", before)  # the file changed since `before`


def test_any_change_of_the_file_or_its_wal_forgets_the_facts(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite"
    db.write_bytes(b"x" * 100)
    _age(db)
    assert checkmark.record(db, checkmark.SOUND, checkmark.stamp(db))
    wal = Path(str(db) + "-wal")
    wal.write_bytes(b"frame")
    assert checkmark.facts(db, checkmark.stamp(db)) == frozenset()
    wal.unlink()
    assert checkmark.facts(db, checkmark.stamp(db)) == {checkmark.SOUND}
    with open(db, "r+b") as handle:  # same size, new bytes
        handle.write(b"y")
    assert checkmark.facts(db, checkmark.stamp(db)) == frozenset()


def test_no_file_no_mark_and_a_bad_mark_is_no_mark(tmp_path: Path) -> None:
    assert checkmark.stamp(tmp_path / "absent.sqlite") is None
    assert checkmark.stamp(Path(":memory:")) is None
    assert checkmark.facts(tmp_path / "absent.sqlite", None) == frozenset()
    assert not checkmark.record(tmp_path / "absent.sqlite", checkmark.SOUND, None)
    db = tmp_path / "x.sqlite"
    db.write_bytes(b"x")
    for text in ("not json", "[]", '{"stamp": 1}', ""):
        checkmark.mark_path(db).write_text(text, encoding="utf-8")
        assert checkmark.facts(db, checkmark.stamp(db)) == frozenset()


def test_searches_record_the_checks_and_skip_them_while_nothing_changes(
        cli, repo: Path, vectors_on) -> None:
    db = _land(cli, repo)
    _age(db)
    assert cli("search", "tock").exit_code == 0
    facts = checkmark.facts(db, checkmark.stamp(db))
    assert facts == {checkmark.SOUND, checkmark.vectors_fact("fake-hash", vectors_on.dim)}
    # A page no search reads, damaged with the file's stamp kept: the check is skipped,
    # so it is not seen (what a changed stamp or a lost mark brings back, below).
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'revalidate'"
                            ).fetchone()[0]
    info = db.stat()
    with open(db, "r+b") as handle:
        handle.seek((page - 1) * 4096)
        handle.write(bytes([0xFF, 0x13, 0x37, 0x00]) * 256)
    os.utime(db, ns=(info.st_atime_ns, info.st_mtime_ns))
    quiet = cli("search", "tock")
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    checkmark.mark_path(db).unlink()
    found = cli("search", "tock")
    assert found.exit_code == 0, found.output
    assert "the search index was damaged" in found.stderr
    assert list(db.parent.glob("wiki.sqlite.corrupt-*"))


def test_a_damaged_vector_after_the_mark_is_still_found(cli, repo: Path, vectors_on) -> None:
    db = _land(cli, repo)
    _age(db)
    assert cli("search", "tock").exit_code == 0
    assert checkmark.vectors_fact("fake-hash", vectors_on.dim) in checkmark.facts(
        db, checkmark.stamp(db))
    with sqlite3.connect(db) as conn:  # a truncated vector: the file changes
        conn.execute("UPDATE embeddings SET vector = x'0000' WHERE rowid = "
                     "(SELECT min(rowid) FROM embeddings)")
    result = cli("search", "tock")
    assert result.exit_code == 0, result.output
    assert "stored vector of the search index was damaged; embedded again" in result.stderr
    again = cli("search", "tock")
    assert again.exit_code == 0 and "warning" not in again.stderr
    assert again.stdout == result.stdout
