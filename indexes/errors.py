"""Typed errors of the ``indexes`` package (one base class, one subclass per kind)."""


class IndexesError(Exception):
    """Base class of every error raised by ``indexes``."""


class EmptyQueryError(IndexesError):
    """The query holds no searchable token (empty, whitespace or punctuation only)."""


class IndexSchemaError(IndexesError):
    """The derived database was written by a newer version of the schema."""


class IndexBusyError(IndexesError):
    """Another process held the derived database's write lock for the whole busy timeout."""


class IndexUnavailableError(IndexesError):
    """The configured index database cannot be reached or used (a PostgreSQL URL that
    does not connect, a server without the pgvector extension)."""


class IndexTextError(IndexesError):
    """Text the index database cannot hold or search (PostgreSQL: a NUL character)."""
