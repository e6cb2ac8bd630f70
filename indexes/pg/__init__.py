"""The PostgreSQL index backend: the same interface as :class:`indexes.sqlite.engine.SearchIndex`
(:class:`indexes.backend.IndexBackend`) over psycopg 3, full text in weighted ``tsvector``
columns, vectors in pgvector with an HNSW index; many wikis (spaces) share one database."""
