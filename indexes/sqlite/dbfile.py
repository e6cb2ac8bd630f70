"""The search database as a file: its soundness check, the names its schema holds, a copy
of what is readable of it, and embeddings borrowed from another copy. Used by
:mod:`wiki.store.derived_db` (opening whatever state the disk is in) and
:func:`wiki.store.derived.snapshot_index`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from indexes.sqlite.engine import SearchIndex


def quick_check(index: SearchIndex) -> str:
    """SQLite's ``PRAGMA quick_check(1)``: ``"ok"``, else the first problem found.
    Raises ``sqlite3.DatabaseError`` when the file is not a readable database."""
    return index.conn.execute("PRAGMA quick_check(1)").fetchone()[0]


def schema_names(index: SearchIndex) -> frozenset[str]:
    """The tables, indexes and triggers in ``index`` (SQLite's own ``sqlite_*`` left out)."""
    return frozenset(row[0] for row in index.conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'index', 'trigger') "
        "AND name NOT LIKE 'sqlite_%'"))


def copy_readable(source: Path, target: Path) -> None:
    """Copy the database at ``source`` into ``target`` when it can be read (read-only,
    else as an immutable file) and passes :func:`quick_check`; leaves ``target`` absent
    when it cannot."""
    if not source.exists():
        return
    for query in ("mode=ro", "immutable=1"):
        try:
            src = sqlite3.connect(f"{source.resolve().as_uri()}?{query}", uri=True)
            try:
                if src.execute("PRAGMA quick_check(1)").fetchone()[0] != "ok":
                    return
                dst = sqlite3.connect(target)
                try:
                    src.backup(dst)
                finally:
                    dst.close()
            finally:
                src.close()
            return
        except sqlite3.DatabaseError:
            target.unlink(missing_ok=True)


def borrow_embeddings(index: SearchIndex, live: Path) -> None:
    """Copy into ``index`` the embeddings the database at ``live`` holds for ``index``'s
    chunks and answer sentences (keyed by text hash and model), so they are not computed
    again. Only a saving: an unreadable ``live`` (read-only git dir, damaged) copies
    nothing, silently. Call outside a transaction (SQLite cannot attach a database inside
    one). The copied vectors give the index a new
    :meth:`~indexes.sqlite.vectors.VectorStore.stamp`."""
    try:
        index.conn.execute("ATTACH DATABASE ? AS live", (str(live),))
    except sqlite3.DatabaseError:
        return
    try:
        with index.transaction():  # the vectors and their new stamp in one write
            if index.conn.execute(
                    "INSERT OR IGNORE INTO embeddings SELECT e.* FROM live.embeddings e "
                    "WHERE e.text_hash IN (SELECT text_hash FROM chunks UNION "
                    "SELECT text_hash FROM sentences)").rowcount:
                index.vectors.changed()
    except sqlite3.DatabaseError:
        pass
    finally:
        index.conn.execute("DETACH DATABASE live")
