"""The derived search database: one SQLite file with FTS5/BM25 and a trigram path.

Schema changes are numbered, append-only migrations tracked in ``PRAGMA user_version``.
Writers take ``BEGIN IMMEDIATE`` and every connection waits up to ``busy_timeout`` for a
lock, in WAL mode, so concurrent readers and writers never see "database is locked"
(ROBUSTNESS W4).
"""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from indexes.confidence import idf, weighted_coverage
from indexes.documents import Document, Hit
from indexes.errors import IndexSchemaError
from indexes.fusion import rrf
from indexes.passages import TOKENIZER
from indexes.query import match_expression, query_words, quote, substring_terms
from indexes.text import no_space_runs

BUSY_TIMEOUT_MS = 30_000

COLUMNS = ("title", "aliases", "tags", "summary", "body")
DEFAULT_WEIGHTS = (8.0, 6.0, 3.0, 3.0, 1.0)
"""BM25 column weights for (title, aliases, tags, summary, body); tuned on the handbook
dev questions (docs/decisions.md)."""

MIGRATIONS: tuple[str, ...] = (
    # 1: documents, FTS5 (unicode61) and trigram indexes kept in step by triggers
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE docs (
        rowid INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        doc_id TEXT NOT NULL,
        title TEXT NOT NULL,
        aliases TEXT NOT NULL,
        tags TEXT NOT NULL,
        summary TEXT NOT NULL,
        body TEXT NOT NULL,
        status TEXT NOT NULL,
        category TEXT NOT NULL,
        doc_type TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        extra TEXT NOT NULL
    );
    CREATE INDEX docs_doc_id ON docs(doc_id);
    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, aliases, tags, summary, body,
        content='docs', content_rowid='rowid', tokenize="{tokenizer}"
    );
    CREATE VIRTUAL TABLE docs_tri USING fts5(
        title, aliases, summary, body,
        content='docs', content_rowid='rowid', tokenize='trigram'
    );
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts(rowid, title, aliases, tags, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.tags, new.summary, new.body);
        INSERT INTO docs_tri(rowid, title, aliases, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.summary, new.body);
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, title, aliases, tags, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.tags, old.summary, old.body);
        INSERT INTO docs_tri(docs_tri, rowid, title, aliases, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.summary, old.body);
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, title, aliases, tags, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.tags, old.summary, old.body);
        INSERT INTO docs_tri(docs_tri, rowid, title, aliases, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.summary, old.body);
        INSERT INTO docs_fts(rowid, title, aliases, tags, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.tags, new.summary, new.body);
        INSERT INTO docs_tri(rowid, title, aliases, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.summary, new.body);
    END;
    """.replace("{tokenizer}", TOKENIZER),
)


@dataclass(frozen=True)
class Filters:
    """Restrictions applied inside every leg, before ranking and fusion.

    ``statuses``: allowed entry statuses (``None`` = all); ``category``: a folder prefix
    (``"travel"`` keeps ``travel`` and ``travel/...``); ``tags``: every tag must be present.
    """

    statuses: tuple[str, ...] | None = ("active",)
    category: str | None = None
    tags: tuple[str, ...] = ()

    def sql(self) -> tuple[str, list]:
        """A SQL condition over table alias ``d`` and its parameters."""
        clauses: list[str] = []
        params: list = []
        if self.statuses is not None:
            clauses.append(f"d.status IN ({','.join('?' * len(self.statuses))})")
            params.extend(self.statuses)
        if self.category:
            prefix = self.category.strip("/")
            clauses.append("(d.category = ? OR substr(d.category, 1, ?) = ?)")
            params.extend([prefix, len(prefix) + 1, prefix + "/"])
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(d.extra, '$.tags') WHERE value = ?)")
            params.append(tag)
        return (" AND ".join(clauses) or "1"), params


class SearchIndex:
    """A derived search database at ``path`` (created and migrated on open).

    Use as a context manager or call :meth:`close`. Raises :class:`IndexSchemaError` when
    the file was written by a newer schema than this code knows.
    """

    def __init__(self, path: Path | str, *, weights: tuple[float, ...] = DEFAULT_WEIGHTS):
        self.path = Path(path)
        self.weights = weights
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        self.db = sqlite_utils.Database(conn)
        self.conn = conn
        self._migrate()

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> SearchIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _migrate(self) -> None:
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise IndexSchemaError(
                f"{self.path}: schema version {version} is newer than this wiki "
                f"({len(MIGRATIONS)}); upgrade wiki or run `wiki index --rebuild`"
            )
        if version == len(MIGRATIONS):
            return
        with self.transaction():
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            for number in range(version, len(MIGRATIONS)):
                for statement in _statements(MIGRATIONS[number]):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number + 1}")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (``BEGIN IMMEDIATE``): waits for other writers, then holds
        the write lock until the block ends; rolls back on error."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- metadata ----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        """The stored value for ``key`` or ``None``."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (call inside :meth:`transaction` when batching)."""
        self.db["meta"].upsert({"key": key, "value": value}, pk="key")

    # -- documents ---------------------------------------------------------------------
    def content_hashes(self) -> dict[str, str]:
        """``key -> content_hash`` of every stored document."""
        return dict(self.conn.execute("SELECT key, content_hash FROM docs"))

    def count(self, filters: Filters | None = None) -> int:
        """Number of documents (matching ``filters`` when given)."""
        where, params = (filters or Filters(statuses=None)).sql()
        return self.conn.execute(f"SELECT count(*) FROM docs d WHERE {where}", params).fetchone()[0]

    def upsert(self, documents: Iterable[Document]) -> int:
        """Insert or replace documents by ``key``; returns how many were written."""
        rows = [_row(doc) for doc in documents]
        if rows:
            self.db["docs"].upsert_all(rows, pk="key")
        return len(rows)

    def delete(self, keys: Iterable[str]) -> int:
        """Delete documents by ``key``; returns how many were asked for."""
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            self.conn.execute(
                f"DELETE FROM docs WHERE key IN ({','.join('?' * len(chunk))})", chunk)
        return len(keys)

    def clear(self) -> None:
        """Delete every document and metadata value."""
        self.conn.execute("DELETE FROM docs")
        self.conn.execute("DELETE FROM meta")

    def get(self, key: str) -> dict | None:
        """The stored row of one document as a dict (``extra`` decoded), or ``None``."""
        row = self.db.execute("SELECT * FROM docs WHERE key = ?", [key]).fetchone()
        if row is None:
            return None
        record = dict(zip([c[0] for c in self.db.execute(
            "SELECT * FROM docs LIMIT 0").description], row, strict=True))
        record["extra"] = json.loads(record["extra"])
        return record

    def extras(self, keys: Iterable[str]) -> dict[str, dict]:
        """``key -> extra`` (the decoded JSON attributes) for the given keys, one query."""
        keys = list(keys)
        if not keys:
            return {}
        rows = self.conn.execute(
            f"SELECT key, extra FROM docs WHERE key IN ({','.join('?' * len(keys))})", keys)
        return {key: json.loads(extra) for key, extra in rows}

    def keys_for_doc_id(self, doc_id: str) -> list[str]:
        """Keys of the documents whose ``doc_id`` is ``doc_id`` (normally one)."""
        return [r[0] for r in self.conn.execute(
            "SELECT key FROM docs WHERE doc_id = ? ORDER BY key", (doc_id,))]

    # -- search ------------------------------------------------------------------------
    def search_bm25(self, query: str, *, limit: int = 10,
                    filters: Filters | None = None) -> list[Hit]:
        """BM25 over the weighted columns; raises ``EmptyQueryError`` for an empty query."""
        where, params = (filters or Filters()).sql()
        weights = ", ".join(str(float(w)) for w in self.weights)
        sql = (
            "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, "
            f"bm25(docs_fts, {weights}) AS s FROM docs_fts JOIN docs d "
            f"ON d.rowid = docs_fts.rowid WHERE docs_fts MATCH ? AND {where} "
            "ORDER BY s LIMIT ?"
        )
        rows = self.conn.execute(sql, [match_expression(query), *params, limit]).fetchall()
        return _hits(rows, negate=True)

    def search_trigram(self, query: str, *, limit: int = 10, filters: Filters | None = None,
                       include_latin: bool = False) -> list[Hit]:
        """Substring search: trigram FTS5 for terms of 3+ characters, a scan for shorter
        terms (CJK words are often 1-2 characters). Empty list when no term qualifies."""
        terms = substring_terms(query, include_latin=include_latin)
        if not terms:
            return []
        where, params = (filters or Filters()).sql()
        long_terms = [t for t in terms if len(t) >= 3]
        short_terms = [t for t in terms if len(t) < 3]
        hits: list[Hit] = []
        if long_terms:
            sql = (
                "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, "
                "bm25(docs_tri) AS s FROM docs_tri JOIN docs d ON d.rowid = docs_tri.rowid "
                f"WHERE docs_tri MATCH ? AND {where} ORDER BY s LIMIT ?"
            )
            expression = " OR ".join(quote(t) for t in long_terms)
            hits = _hits(self.conn.execute(sql, [expression, *params, limit]).fetchall(),
                         negate=True)
        if short_terms and len(hits) < limit:
            found = {h.key for h in hits}
            condition = " OR ".join("instr(d.title || ' ' || d.body, ?) > 0"
                                    for _ in short_terms)
            sql = (
                "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status, 0.0 "
                f"FROM docs d WHERE ({condition}) AND {where} ORDER BY d.key LIMIT ?"
            )
            rows = self.conn.execute(sql, [*short_terms, *params, limit]).fetchall()
            hits.extend(h for h in _hits(rows, negate=False) if h.key not in found)
        for rank, hit in enumerate(hits[:limit], start=1):
            hit.rank = rank
        return hits[:limit]

    def search(self, query: str, *, limit: int = 10,
               filters: Filters | None = None) -> list[Hit]:
        """The lexical leg: BM25, plus the trigram path for space-less scripts (and for
        substrings when BM25 finds nothing), fused by RRF when both return hits."""
        bm25 = self.search_bm25(query, limit=limit, filters=filters)
        for hit in bm25:
            hit.legs["bm25"] = (hit.rank, hit.score)
        cjk = bool(no_space_runs(query))
        if not cjk and bm25:
            return bm25
        trigram = self.search_trigram(query, limit=limit, filters=filters,
                                      include_latin=not bm25)
        if not trigram:
            return bm25
        if not bm25:
            for hit in trigram:
                hit.legs["trigram"] = (hit.rank, hit.score)
            return trigram
        return rrf({"bm25": bm25, "trigram": trigram}, limit=limit)

    # -- confidence --------------------------------------------------------------------
    def word_matches(self, word: str, key: str | None = None) -> tuple[int, bool]:
        """``(document frequency, found in document key)`` of one query word, matched by
        FTS5 itself (same tokenizer and stemming as the index; trigram table or a scan
        for space-less scripts)."""
        runs = no_space_runs(word)
        if runs:
            condition = " AND ".join("instr(d.title || ' ' || d.aliases || ' ' || d.summary "
                                     "|| ' ' || d.body, ?) > 0" for _ in runs)
            base, params = f"SELECT d.key FROM docs d WHERE {condition}", list(runs)
        else:
            base = ("SELECT d.key FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid "
                    "WHERE docs_fts MATCH ?")
            params = [quote(word)]
        df = self.conn.execute(f"SELECT count(*) FROM ({base})", params).fetchone()[0]
        found = key is not None and self.conn.execute(
            f"SELECT 1 FROM ({base}) WHERE key = ?", [*params, key]).fetchone() is not None
        return df, found

    def coverage(self, query: str, key: str) -> float:
        """IDF-weighted share of the query's words found in document ``key`` (0-1); see
        :mod:`indexes.confidence`."""
        n_docs = self.count(Filters(statuses=None))
        return weighted_coverage([self.word_matches(w, key) for w in query_words(query)],
                                 n_docs)

    def word_weights(self, query: str) -> dict[str, float]:
        """``query word -> BM25 idf`` over the whole index."""
        n_docs = self.count(Filters(statuses=None))
        return {w: idf(self.word_matches(w)[0], n_docs) for w in query_words(query)}


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (``sqlite3.complete_statement`` aware)."""
    statements, current = [], ""
    for line in script.strip().splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _row(doc: Document) -> dict:
    extra = dict(doc.extra)
    extra["tags"] = list(doc.tags)
    extra["aliases"] = list(doc.aliases)
    return {
        "key": doc.key,
        "doc_id": doc.doc_id,
        "title": _nfkc(doc.title),
        "aliases": _nfkc("\n".join(doc.aliases)),
        "tags": _nfkc(" ".join(doc.tags)),
        "summary": _nfkc(doc.summary),
        "body": _nfkc(doc.body),
        "status": doc.status,
        "category": doc.category,
        "doc_type": doc.doc_type,
        "content_hash": doc.content_hash,
        "extra": json.dumps(extra, ensure_ascii=False, sort_keys=True),
    }


def _hits(rows: list[tuple], *, negate: bool) -> list[Hit]:
    hits = []
    for rank, (key, doc_id, title, summary, category, status, score) in enumerate(rows, 1):
        hits.append(Hit(key, doc_id, title, summary, category, status,
                        -score if negate else score, rank))
    return hits
