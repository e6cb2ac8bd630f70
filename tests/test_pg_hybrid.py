"""The hybrid-search suite (tests/test_hybrid.py) again, every wiki's index in PostgreSQL
(the tests that open the SQLite file directly stay in that module)."""

from __future__ import annotations

import pytest
import test_hybrid
from test_hybrid import *  # noqa: F403 (the same tests, collected here again)

for _name in ("test_model_change_rebuilds_vectors_never_mixes",
              "test_robustness_i3_another_model_name_re_embeds_everything",
              "test_alias_leg_folds_case_accents_and_punctuation",
              "test_wrong_shape_from_a_model_is_refused",
              "test_bm25_prefetch_falls_back_when_filters_drop_the_best_matches",
              "test_rrf_matches_hand_computed_scores", "test_zscore_fusion_matches_hand_computed_scores",
              "test_rrf_ties_are_deterministic", "test_chunks_overlap_and_carry_the_title"):
    globals().pop(_name)  # SQLite files or pure functions: nothing backend-specific


@pytest.fixture(autouse=True)
def _postgres(on_postgres) -> None:
    assert test_hybrid  # the module whose tests these are
