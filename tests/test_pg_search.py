"""The search suite (tests/test_search.py) again, every wiki's index in PostgreSQL."""

from __future__ import annotations

import pytest
import test_search
from test_search import *  # noqa: F403 (the same tests, collected here again)

del test_corrupt_database_is_rebuilt  # noqa: F821 (a damaged SQLite file: SQLite only)


@pytest.fixture(autouse=True)
def _postgres(on_postgres) -> None:
    assert test_search  # the module whose tests these are
