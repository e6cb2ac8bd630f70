"""The PostgreSQL schema of the shared index: every table carries ``space`` (one wiki:
repository + branch), and every statement of :mod:`indexes.pg.engine` filters by it.

The schema is created idempotently (``IF NOT EXISTS``) under an advisory lock, and its
version is kept in ``wiki_schema``; a newer version than this code knows is refused.
Embeddings are shared by all spaces (keyed by the text's hash and the model, like the
SQLite cache): a space reaches them only through its own chunks and sentences.
"""

from __future__ import annotations

from indexes.pg.postings import DDL as POSTINGS_DDL
from indexes.pg.postings import TABLES as POSTINGS_TABLES

VERSION = 4
LOCK_SCHEMA = 0x77696B69  # advisory lock key held while creating the schema ("wiki")

DDL = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE IF NOT EXISTS wiki_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS wiki_meta (
    space TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (space, key));
CREATE TABLE IF NOT EXISTS wiki_docs (
    space TEXT NOT NULL, key TEXT NOT NULL, doc_id TEXT NOT NULL, title TEXT NOT NULL,
    aliases TEXT NOT NULL, tags TEXT NOT NULL, summary TEXT NOT NULL, body TEXT NOT NULL,
    status TEXT NOT NULL, category TEXT NOT NULL, doc_type TEXT NOT NULL,
    content_hash TEXT NOT NULL, scope TEXT NOT NULL, valid_until TEXT NOT NULL,
    dated TEXT NOT NULL, extra JSONB NOT NULL, tag_list TEXT[] NOT NULL,
    fts TSVECTOR NOT NULL, doc_len INTEGER NOT NULL,
    PRIMARY KEY (space, key));
CREATE INDEX IF NOT EXISTS wiki_docs_fts ON wiki_docs USING gin (fts);
CREATE INDEX IF NOT EXISTS wiki_docs_doc_id ON wiki_docs (space, doc_id);
CREATE INDEX IF NOT EXISTS wiki_docs_filter ON wiki_docs (space, key)
    INCLUDE (status, scope, category, doc_type, dated, valid_until);
CREATE TABLE IF NOT EXISTS wiki_names (
    space TEXT NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    PRIMARY KEY (space, key, name, kind));
CREATE INDEX IF NOT EXISTS wiki_names_name ON wiki_names (space, name);
CREATE TABLE IF NOT EXISTS wiki_chunks (
    space TEXT NOT NULL, key TEXT NOT NULL, chunk INTEGER NOT NULL, text_hash TEXT NOT NULL,
    text TEXT NOT NULL, PRIMARY KEY (space, key, chunk));
CREATE INDEX IF NOT EXISTS wiki_chunks_hash ON wiki_chunks (text_hash);
CREATE TABLE IF NOT EXISTS wiki_sentences (
    space TEXT NOT NULL, key TEXT NOT NULL, n INTEGER NOT NULL, text_hash TEXT NOT NULL,
    text TEXT NOT NULL, PRIMARY KEY (space, key, n));
CREATE INDEX IF NOT EXISTS wiki_sentences_hash ON wiki_sentences (text_hash);
CREATE TABLE IF NOT EXISTS wiki_embeddings (
    text_hash TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
    vector VECTOR NOT NULL, PRIMARY KEY (text_hash, model));
CREATE TABLE IF NOT EXISTS wiki_terms (
    space TEXT NOT NULL, key TEXT NOT NULL, lexeme TEXT NOT NULL,
    fa REAL NOT NULL, fb REAL NOT NULL, fc REAL NOT NULL, fd REAL NOT NULL,
    doc_len INTEGER NOT NULL,
    PRIMARY KEY (space, lexeme, key) INCLUDE (fa, fb, fc, fd, doc_len));
CREATE TABLE IF NOT EXISTS wiki_stats (
    space TEXT PRIMARY KEY, docs BIGINT NOT NULL, total_len BIGINT NOT NULL,
    version BIGINT NOT NULL);
CREATE TABLE IF NOT EXISTS wiki_revalidate (
    space TEXT NOT NULL, key TEXT NOT NULL, uri TEXT NOT NULL, commit_sha TEXT NOT NULL,
    marked_at TEXT NOT NULL, PRIMARY KEY (space, key, uri));
""" + POSTINGS_DDL
"""Tables of schema :data:`VERSION`; statements separated by ``;`` at line ends. Schema 4
added the packed postings (:mod:`indexes.pg.postings`): a space's writes note stale keys
there, so code of schema 3, which would not, is refused."""

SPACE_TABLES = ("wiki_docs", "wiki_meta", "wiki_names", "wiki_chunks", "wiki_sentences",
                "wiki_terms", "wiki_revalidate", *POSTINGS_TABLES)
"""Every table holding one space's rows (``clear`` empties them for the space)."""


_POSTINGS_OF = """
INSERT INTO wiki_terms(space, key, lexeme, fa, fb, fc, fd, doc_len)
SELECT d.space, d.key, u.lexeme, count(*) FILTER (WHERE wt = 'A'),
       count(*) FILTER (WHERE wt = 'B'), count(*) FILTER (WHERE wt = 'C'),
       count(*) FILTER (WHERE wt = 'D'), d.doc_len
FROM wiki_docs d, unnest(d.fts) u, unnest(u.weights) wt
{where} GROUP BY d.space, d.key, u.lexeme, d.doc_len {conflict}
"""

POSTINGS = _POSTINGS_OF.format(where="WHERE d.space = %s AND d.key = ANY(%s)", conflict="")
"""The postings of documents ``key = ANY(%s)`` of one space: for each (document, lexeme)
its occurrences per weight class (title A, aliases B, tags and summary C, body D) and the
document's length, so BM25 reads only the query's lexemes' rows (an inverted index, as
FTS5 keeps one) instead of every matching document's whole tsvector."""

BACKFILL = _POSTINGS_OF.format(where="", conflict="ON CONFLICT DO NOTHING")
"""The postings of every document (a schema 1 database, which had none)."""


STATS_TRIGGERS = [
    "CREATE OR REPLACE FUNCTION wiki_stats_add() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN INSERT INTO wiki_stats AS s (space, docs, total_len, version) SELECT space, "
    "count(*), coalesce(sum(doc_len), 0), 1 FROM new_rows GROUP BY space ON CONFLICT "
    "(space) DO UPDATE SET docs = s.docs + excluded.docs, total_len = s.total_len + "
    "excluded.total_len, version = s.version + 1; RETURN NULL; END $$",
    "CREATE OR REPLACE FUNCTION wiki_stats_remove() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN INSERT INTO wiki_stats AS s (space, docs, total_len, version) SELECT space, "
    "-count(*), -coalesce(sum(doc_len), 0), 1 FROM old_rows GROUP BY space ON CONFLICT "
    "(space) DO UPDATE SET docs = s.docs + excluded.docs, total_len = s.total_len + "
    "excluded.total_len, version = s.version + 1; RETURN NULL; END $$",
    "CREATE OR REPLACE TRIGGER wiki_stats_insert AFTER INSERT ON wiki_docs REFERENCING "
    "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION wiki_stats_add()",
    "CREATE OR REPLACE TRIGGER wiki_stats_delete AFTER DELETE ON wiki_docs REFERENCING "
    "OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION wiki_stats_remove()",
    "CREATE OR REPLACE TRIGGER wiki_stats_update_old AFTER UPDATE ON wiki_docs REFERENCING "
    "OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION wiki_stats_remove()",
    "CREATE OR REPLACE TRIGGER wiki_stats_update_new AFTER UPDATE ON wiki_docs REFERENCING "
    "NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION wiki_stats_add()",
]
"""Schema 3: ``wiki_stats`` keeps each space's document count and total length (what
BM25's idf and length normalisation need) and a write counter, in the transaction of every
statement that writes ``wiki_docs`` (statement-level triggers over the transition tables,
so a batch costs one update of the row), whoever writes: no query aggregates them."""

POSTINGS_COVERED = [
    "ALTER TABLE wiki_terms DROP CONSTRAINT wiki_terms_pkey",
    "ALTER TABLE wiki_terms ADD CONSTRAINT wiki_terms_pkey PRIMARY KEY (space, lexeme, key) "
    "INCLUDE (fa, fb, fc, fd, doc_len)",
]
"""Schema 3 on a schema 2 database: the postings' primary key carries the columns BM25
reads, so a lexeme's postings are read from the index alone (an index-only scan) rather
than from heap rows scattered over the table; ``wiki_docs_filter`` (in :data:`DDL`) does
the same for the filter columns of documents looked up by key."""

STATS_FILL = (
    "INSERT INTO wiki_stats AS s (space, docs, total_len, version) SELECT space, count(*), "
    "coalesce(sum(doc_len), 0), 1 FROM wiki_docs GROUP BY space ON CONFLICT (space) DO "
    "UPDATE SET docs = excluded.docs, total_len = excluded.total_len, "
    "version = s.version + 1")
"""Counts a schema 2 database's spaces once, when its triggers are made."""


def statements() -> list[str]:
    """:data:`DDL` as single statements."""
    return [s.strip() for s in DDL.split(";\n") if s.strip()]
