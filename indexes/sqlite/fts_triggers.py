"""The FTS5 triggers of the search database and the SQL function they call.

The unicode61 table indexes each column as :func:`fts_text` gives it (code-like names
spelled out, :func:`indexes.retrieval.text.code_tokens`), so a query word, spelled the same way
before it is quoted, is the exact token run the index holds. The function is
deterministic: FTS5's external-content ``delete`` must see the values it indexed.
"""

from __future__ import annotations

from indexes.retrieval.passages import TOKENIZER
from indexes.retrieval.text import code_tokens


def fts_text(text: str | None) -> str | None:
    """The SQL function ``wiki_fts``: a column value as the unicode61 table indexes it."""
    return code_tokens(text) if isinstance(text, str) else text


FTS_TRIGGERS = """
    CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN
        INSERT INTO docs_fts(rowid, title, aliases, tags, summary, body)
        VALUES (new.rowid, wiki_fts(new.title), wiki_fts(new.aliases), wiki_fts(new.tags),
                wiki_fts(new.summary), wiki_fts(new.body));
        INSERT INTO docs_tri(rowid, title, aliases, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.summary, new.body);
    END;
    CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, title, aliases, tags, summary, body)
        VALUES ('delete', old.rowid, wiki_fts(old.title), wiki_fts(old.aliases),
                wiki_fts(old.tags), wiki_fts(old.summary), wiki_fts(old.body));
        INSERT INTO docs_tri(docs_tri, rowid, title, aliases, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.summary, old.body);
    END;
    CREATE TRIGGER docs_au AFTER UPDATE ON docs BEGIN
        INSERT INTO docs_fts(docs_fts, rowid, title, aliases, tags, summary, body)
        VALUES ('delete', old.rowid, wiki_fts(old.title), wiki_fts(old.aliases),
                wiki_fts(old.tags), wiki_fts(old.summary), wiki_fts(old.body));
        INSERT INTO docs_tri(docs_tri, rowid, title, aliases, summary, body)
        VALUES ('delete', old.rowid, old.title, old.aliases, old.summary, old.body);
        INSERT INTO docs_fts(rowid, title, aliases, tags, summary, body)
        VALUES (new.rowid, wiki_fts(new.title), wiki_fts(new.aliases), wiki_fts(new.tags),
                wiki_fts(new.summary), wiki_fts(new.body));
        INSERT INTO docs_tri(rowid, title, aliases, summary, body)
        VALUES (new.rowid, new.title, new.aliases, new.summary, new.body);
    END;
"""
"""The FTS triggers since migration 5: the unicode61 table gets each column through
``wiki_fts`` (:func:`fts_text`, registered on every connection by
:class:`indexes.sqlite.engine.SearchIndex`), the trigram table the stored text itself."""

REBUILD_FTS = """
    DROP TRIGGER docs_ai;
    DROP TRIGGER docs_ad;
    DROP TRIGGER docs_au;
    DROP TABLE docs_fts;
    CREATE VIRTUAL TABLE docs_fts USING fts5(
        title, aliases, tags, summary, body,
        content='docs', content_rowid='rowid', tokenize="{tokenizer}"
    );
    INSERT INTO docs_fts(rowid, title, aliases, tags, summary, body)
    SELECT rowid, wiki_fts(title), wiki_fts(aliases), wiki_fts(tags), wiki_fts(summary),
        wiki_fts(body) FROM docs;
    """.replace("{tokenizer}", TOKENIZER) + FTS_TRIGGERS + """
    UPDATE docs SET content_hash = '';
    DELETE FROM meta;
"""
"""Schema migration 5 of :mod:`indexes.sqlite.engine`: the unicode61 table rebuilt through
``wiki_fts`` with the triggers above; content hashes cleared so the next sync re-indexes
every entry (the alias leg's names are re-folded by :func:`indexes.retrieval.names.fold_name`)."""
