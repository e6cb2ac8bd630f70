"""The search database's schema: numbered, append-only migrations tracked in
``PRAGMA user_version`` (applied by :class:`indexes.sqlite.engine.SearchIndex` at open)."""

from __future__ import annotations

import sqlite3

from indexes.retrieval.passages import TOKENIZER
from indexes.sqlite.fts_triggers import REBUILD_FTS
from indexes.sqlite.postings import SCHEMA as POSTINGS_SCHEMA
from indexes.sqlite.vectors import NONCE_MIGRATION, SENTENCES_TABLE

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
    # 2: names for the alias/title leg; chunks and their embeddings for the vector leg
    """
    CREATE TABLE names (key TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL);
    CREATE INDEX names_name ON names(name);
    CREATE INDEX names_key ON names(key);
    CREATE TABLE chunks (
        key TEXT NOT NULL, chunk INTEGER NOT NULL, text_hash TEXT NOT NULL, text TEXT NOT NULL,
        PRIMARY KEY (key, chunk)
    );
    CREATE INDEX chunks_hash ON chunks(text_hash);
    CREATE TABLE embeddings (
        text_hash TEXT NOT NULL, model TEXT NOT NULL, dim INTEGER NOT NULL,
        vector BLOB NOT NULL, PRIMARY KEY (text_hash, model)
    );
    DELETE FROM docs;
    DELETE FROM meta;
    """,
    # 3: documents whose sources changed since they were written (set by the git hook)
    """
    CREATE TABLE revalidate (
        key TEXT NOT NULL, uri TEXT NOT NULL, commit_sha TEXT NOT NULL, marked_at TEXT NOT NULL,
        PRIMARY KEY (key, uri)
    );
    """,
    # 4: scope and validity of each document (filters), re-indexed from the branch
    """
    ALTER TABLE docs ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    ALTER TABLE docs ADD COLUMN valid_until TEXT NOT NULL DEFAULT '';
    ALTER TABLE docs ADD COLUMN dated TEXT NOT NULL DEFAULT '';
    CREATE INDEX docs_scope ON docs(scope);
    UPDATE docs SET content_hash = '';
    DELETE FROM meta;
    """,
    REBUILD_FTS,  # 5: code-like names (C++, C#, F#, .NET) indexed with a spelled-out token
    REBUILD_FTS,  # 6: the same again for C--, A*, D* (code_tokens learnt them)
    SENTENCES_TABLE,  # 7: each document's sentences, embedded for the answer picker
    NONCE_MIGRATION,  # 8: a stamp for vectors written before nonces (embedding server)
    # 9: every column a filter reads, in one covering index: the vector leg's row filter
    # (and the excluded keys) read it instead of the rows and their bodies (100,000
    # entries: 77 ms -> 5 ms for the default filter)
    "CREATE INDEX IF NOT EXISTS docs_filter "
    "ON docs(scope, status, category, doc_type, dated, valid_until);",
    POSTINGS_SCHEMA,  # 10: FTS5's postings as arrays, for the BM25 leg of a large index
)


def statements(script: str) -> list[str]:
    """Split a migration script into statements (``sqlite3.complete_statement`` aware)."""
    found, current = [], ""
    for line in script.strip().splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            found.append(current.strip())
            current = ""
    if current.strip():
        found.append(current.strip())
    return found
