"""The SQLite engine: :class:`indexes.sqlite.engine.SearchIndex`, one database file per
clone (FTS5/BM25, the trigram path, the vector sidecar), its schema and migrations, the
file itself (quick_check, readable copies), revalidation marks, and SQLite's error classes."""
