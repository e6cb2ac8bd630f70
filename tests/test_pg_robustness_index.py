"""tests/test_robustness_index.py again, every wiki's index in PostgreSQL (tests/pg_fixture.py)."""

from __future__ import annotations

import pytest
import test_robustness_index
from test_robustness_index import *  # noqa: F403 (the same tests, collected here again)


@pytest.fixture(autouse=True)
def _postgres(on_postgres) -> None:
    assert test_robustness_index  # the module whose tests these are
