"""Unit tests of evals.metrics (run with ``pytest evals``)."""

from __future__ import annotations

import math

import pytest

from evals.metrics import (
    aggregate,
    dedupe_units,
    first_rank,
    gap_sweep,
    hit_at,
    missed_at,
    ndcg_at,
    non_gold_at,
    percentile,
    query_metrics,
    recall_at,
    reciprocal_rank,
)


def test_dedupe_units_keeps_first_position_and_skips_unmapped():
    units = {"a1": ["a"], "a2": ["a"], "b": ["b"], "ab": ["a", "c"]}
    assert dedupe_units(["a1", "x", "a2", "b", "ab"], units) == ["a", "b", "c"]


def test_recall_and_hit():
    ranked = ["x", "g1", "y", "g2"]
    gold = {"g1", "g2", "g3"}
    assert recall_at(ranked, gold, 1) == 0.0
    assert recall_at(ranked, gold, 3) == pytest.approx(1 / 3)
    assert recall_at(ranked, gold, 10) == pytest.approx(2 / 3)
    assert hit_at(ranked, gold, 1) == 0.0
    assert hit_at(ranked, gold, 2) == 1.0
    assert recall_at(ranked, set(), 10) == 0.0


def test_reciprocal_rank_respects_cutoff():
    assert reciprocal_rank(["x", "g"], {"g"}) == 0.5
    assert reciprocal_rank(["x"] * 10 + ["g"], {"g"}, 10) == 0.0
    assert first_rank(["x"] * 10 + ["g"], {"g"}) == 11
    assert first_rank(["x"], {"g"}) is None


def test_ndcg_binary():
    assert ndcg_at(["g"], {"g"}) == 1.0
    assert ndcg_at(["x", "g"], {"g"}) == pytest.approx(1 / math.log2(3))
    # two gold, one found at rank 1: DCG 1, ideal 1 + 1/log2(3)
    assert ndcg_at(["g1", "x"], {"g1", "g2"}) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # ideal is capped at k gold units
    gold = {f"g{i}" for i in range(20)}
    assert ndcg_at(sorted(gold)[:10], gold, 10) == pytest.approx(1.0)
    assert ndcg_at(["x"], set()) == 0.0


def test_missed_and_non_gold():
    ranked = ["g1", "x", "y"]
    assert missed_at(ranked, {"g1", "g2"}) == 1
    assert non_gold_at(ranked, {"g1", "g2"}) == 2


def test_percentile_interpolates():
    assert percentile([], 50) == 0.0
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95


def test_aggregate_means_and_latency():
    rows = [query_metrics(["g"], {"g"}), query_metrics(["x"], {"g"})]
    summary = aggregate(rows, [1.0, 3.0])
    assert summary["queries"] == 2
    assert summary["hit@3"] == 0.5
    assert summary["mrr@10"] == 0.5
    assert summary["p50_ms"] == 2.0


def test_gap_sweep_counts_strictly_below():
    sweep = gap_sweep([0.5, 0.9], [0.2, 0.5], [0.5])
    assert sweep == [{"threshold": 0.5, "gaps_unanswerable": 1, "false_gaps_answerable": 0}]
