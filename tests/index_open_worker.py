"""The child process of tests/test_index_open_race.py: a module of its own, so that each of
the test's processes imports only the search index, not pytest and the test module."""

from __future__ import annotations

from indexes.sqlite.engine import SearchIndex


def open_and_count(path: str, barrier, results) -> None:
    """Wait for the others at ``barrier``, open the index at ``path`` and put
    ``("ok", count)`` on ``results``, or the exception's type name and text."""
    barrier.wait()
    try:
        with SearchIndex(path) as index:
            results.put(("ok", index.count()))
    except Exception as exc:  # reported to the parent, which asserts
        results.put((type(exc).__name__, str(exc)))
