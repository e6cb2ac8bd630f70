"""tests/test_memory_scope.py again, every wiki's index in PostgreSQL (tests/pg_fixture.py)."""

from __future__ import annotations

import pytest
import test_memory_scope
from test_memory_scope import *  # noqa: F403 (the same tests, collected here again)


@pytest.fixture(autouse=True)
def _postgres(on_postgres) -> None:
    assert test_memory_scope  # the module whose tests these are
