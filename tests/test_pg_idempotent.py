"""tests/test_idempotent.py again, every wiki's index in PostgreSQL (tests/pg_fixture.py)."""

from __future__ import annotations

import pytest
import test_idempotent
from test_idempotent import *  # noqa: F403 (the same tests, collected here again)


@pytest.fixture(autouse=True)
def _postgres(on_postgres) -> None:
    assert test_idempotent  # the module whose tests these are
