"""Unit tests of evals.fusion_variants and evals.abstain (run with ``pytest evals``)."""

from __future__ import annotations

import pytest

from evals import abstain
from evals import fusion_variants as fv


def test_rrf_weights_and_windows():
    legs = {"bm25": [("a", 9.0), ("b", 5.0)], "vector": [("b", 0.9), ("c", 0.8)]}
    assert fv.rrf(legs, k=60) == ["b", "a", "c"]  # b: 1/62 + 1/61
    assert fv.rrf(legs, k=60, weights={"vector": 0}) == ["a", "b"]
    assert fv.rrf(legs, k=1, window={"bm25": 1, "vector": 2}) == ["a", "b", "c"]


def test_peakedness():
    assert fv.peakedness([1.0, 1.0]) == 0.0
    assert fv.peakedness([1.0, 1.0, 1.0]) == 0.0
    assert fv.peakedness([3.0, 0.0, 0.0]) == pytest.approx(2 ** 0.5)


def test_rrf_conf_scales_the_peaked_leg():
    flat = [("x", 0.50), ("y", 0.49), ("z", 0.48), ("w", 0.47)]
    peaked = [("y", 10.0), ("x", 1.0), ("z", 1.0), ("w", 1.0)]
    assert fv.rrf_conf({"vector": flat, "bm25": peaked}, k=60)[0] == "y"


def test_zsum_missing_document_gets_the_leg_minimum():
    legs = {"bm25": [("a", 3.0), ("b", 1.0)], "vector": [("b", 0.9), ("c", 0.1)]}
    assert fv.zsum(legs) == ["a", "b", "c"]  # a: 1 + -1, b: -1 + 1 (tie, by key), c: -2


def test_features_and_rules():
    class Hit:
        def __init__(self, key, score):
            self.key, self.score = key, score

    class Result:
        legs = {"bm25": [Hit("a", 5.0), Hit("b", 1.0)],
                "vector": [Hit("a", 0.6), Hit("c", 0.5)]}
        confidence, scores, extra = 0.7, [0.03], {}

    f = abstain.features(Result())
    assert f["same_top"] == 1.0 and f["agreement"] == pytest.approx(0.2)
    assert f["cos_margin"] == pytest.approx(0.1) and f["top_cos"] == 0.6
    rule = {"features": ["coverage", "top_cos"], "thresholds": [0.5, 0.3], "op": "or"}
    assert abstain.is_gap({"coverage": 0.9, "top_cos": 0.2}, rule)
    assert not abstain.is_gap({"coverage": 0.9, "top_cos": 0.2}, {**rule, "op": "and"})
    assert abstain.candidates([0.2, 0.4, 0.4]) == pytest.approx([0.3, 0.4 + 1e-9])


def test_best_rules_respects_false_gap_budget():
    zero = {f: 0.0 for f in abstain.FEATURES}
    answerable = [{**zero, "coverage": c} for c in (0.5, 0.6, 0.9)]
    unanswerable = [{**zero, "coverage": c} for c in (0.1, 0.2, 0.55)]
    best = abstain.best_rules(answerable, unanswerable, max_false=0)[0]
    assert best["gaps"] == 2 and best["false_gaps"] == 0
    assert abstain.describe(best) == "coverage < 0.350"
    best = abstain.best_rules(answerable, unanswerable, max_false=1)[0]
    assert best["gaps"] == 3 and best["false_gaps"] == 1
