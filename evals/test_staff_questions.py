"""The staff-written handbook question set (evals/questions/handbook-staff.jsonl) and the
AUROC used to report it. Fast: no index is built; the quote check clones the bundle
(about a second) when the shared data folder is present."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from evals.datasets import data_dir
from evals.metrics import auroc
from evals.staff_questions import (
    PATH,
    SPLITS,
    STYLES,
    assign_splits,
    problems,
    questions,
    records,
    verify,
)


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return records()


def test_file_parses_with_the_dev_fields(rows):
    for line in PATH.read_text(encoding="utf-8").splitlines():
        if line.strip():
            json.loads(line)
    for r in rows:
        assert {"id", "question", "gold", "answer", "support", "style", "notes",
                "split", "batch"} <= set(r), r["id"]
        assert r["style"] in STYLES and r["split"] in SPLITS
        for s in r["support"]:
            assert set(s) == {"page", "quote"} and s["page"] in r["gold"]


def test_at_least_120_questions_with_unique_ids(rows):
    assert len(rows) >= 120
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids))
    styles = Counter(r["style"] for r in rows)
    assert styles["unanswerable"] >= 40 and sum(styles.values()) - styles["unanswerable"] >= 100


def test_both_halves_hold_every_style(rows):
    counts = Counter((r["style"], r["split"]) for r in rows)
    for style in STYLES:
        assert counts[(style, "tune")] > 0 and counts[(style, "test")] > 0, style
        batches = len({r.get("batch", 1) for r in rows})
        assert abs(counts[(style, "tune")] - counts[(style, "test")]) <= batches, style


def test_split_is_the_recorded_seeded_split(rows):
    """The stored split is what the seeded rule gives: nobody re-split by hand."""
    assert assign_splits(rows) == {r["id"]: r["split"] for r in rows}
    assert assign_splits(list(reversed(rows))) == assign_splits(rows)  # order-free


def test_loader_halves_partition_the_set(rows):
    tune_a, tune_u = questions("tune")
    test_a, test_u = questions("test")
    assert len(tune_a) + len(tune_u) + len(test_a) + len(test_u) == len(rows)
    assert not {q.id for q in tune_a + tune_u} & {q.id for q in test_a + test_u}
    assert all(q.gold for q in tune_a + test_a) and not any(q.gold for q in tune_u + test_u)
    with pytest.raises(ValueError, match="unknown split"):
        records("dev")


def test_problems_names_a_quote_that_is_not_verbatim(tmp_path):
    page = tmp_path / "pages" / "a.md"
    page.parent.mkdir()
    page.write_text("You can carry over 240 hours.\n", encoding="utf-8")
    good = {"id": "x1", "question": "q", "gold": ["pages/a.md"], "answer": "a",
            "support": [{"page": "pages/a.md", "quote": "carry over 240 hours"}],
            "style": "amount", "notes": "", "split": "tune"}
    bad = {**good, "id": "x2",
           "support": [{"page": "pages/a.md", "quote": "carry over 80 hours"}]}
    assert problems([good], tmp_path) == []
    assert problems([good, bad], tmp_path) == [
        "x2: quote not verbatim in pages/a.md: 'carry over 80 hours'"]
    assert problems([good, good], tmp_path) == ["x1: duplicate id"]


def test_every_quote_is_verbatim_at_the_checkpoint():
    try:
        data = data_dir()
    except FileNotFoundError:
        pytest.skip("the shared data folder (WIKI_DATA) is not on this machine")
    assert verify(data) == []


def test_auroc_rank_formula():
    assert auroc([3, 4], [1, 2]) == 1.0
    assert auroc([1, 2], [3, 4]) == 0.0
    assert auroc([1, 1], [1, 1]) == 0.5           # ties count one half
    assert auroc([0.9, 0.4, 0.6], [0.5, 0.1]) == pytest.approx(5 / 6)
    with pytest.raises(ValueError):
        auroc([], [1.0])


def test_split_noise_is_zero_for_equal_questions_and_grows_with_their_spread() -> None:
    from evals.staff_eval import split_noise

    def half(recalls: list[float], gaps: list[bool]) -> list[dict]:
        return ([{"answerable": True, "recall": r, "gap": False, "score": r} for r in recalls]
                + [{"answerable": False, "recall": 0.0, "gap": g, "score": 0.1} for g in gaps])

    same = {"tune": half([0.5] * 10, [True] * 4), "test": half([0.5] * 10, [True] * 4)}
    assert split_noise(same, "support_recall") == 0.0
    assert split_noise(same, "gaps") == 0.0
    mixed = {"tune": half([0.0, 1.0] * 5, [True, False] * 2),
             "test": half([1.0, 0.0] * 5, [False, True] * 2)}
    spread = split_noise(mixed, "support_recall")
    assert 0.2 <= spread <= 0.6  # ten 0/1 questions a half: 95th percentile |d| = 0.4
    assert split_noise(mixed, "support_recall") == spread  # seeded: the table cannot drift
    assert split_noise(mixed, "gaps") == 0.5  # 4 of 8 gaps: all four in one half is 2/70
