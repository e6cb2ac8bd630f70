"""The vector leg over many chunks (sign bits choose the chunks scored): every score it
returns is the exact cosine of that document's best chunk, filters hold, and planted near
neighbours are found."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from indexes.retrieval.sign_bits import SIGN_BITS, SignBits, candidate_rows, pack_signs
from indexes.sqlite.vectors import Matrix, RowFilter, nearest

DIM = 32


@pytest.fixture(scope="module")
def big() -> tuple[Matrix, np.ndarray, set[str]]:
    """A matrix of SIGN_BITS.from_rows + 5,000 chunks (one or two per document) with 12
    documents whose chunk lies close to ``query``."""
    rng = np.random.default_rng(11)
    rows = SIGN_BITS.from_rows + 5_000
    vectors = rng.normal(size=(rows, DIM)).astype(np.float32)
    query = rng.normal(size=DIM).astype(np.float32)
    query /= np.linalg.norm(query)
    sizes = rng.integers(1, 3, size=rows)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    starts = starts[starts < rows]
    starts = np.append(starts, rows)
    keys = [f"k{i:06d}" for i in range(len(starts) - 1)]
    planted = rng.choice(len(keys), size=12, replace=False)
    for doc in planted:
        vectors[starts[doc]] = query + rng.normal(scale=0.08, size=DIM)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = Matrix(keys, starts.astype(np.int64), vectors, "v1",
                    np.arange(1, len(keys) + 1, dtype=np.int64))
    return matrix, query, {keys[d] for d in planted}


def exact_best(matrix: Matrix, query: np.ndarray) -> dict[str, float]:
    best = np.maximum.reduceat(matrix.vectors @ query, matrix.starts[:-1])
    return dict(zip(matrix.keys, best.tolist(), strict=True))


def test_scores_are_exact_and_planted_neighbours_come_first(big) -> None:
    matrix, query, planted = big
    found = nearest(matrix, query, rows=None, limit=20)
    exact = exact_best(matrix, query)
    assert len(found) == 20
    assert {k for k, _ in found[:12]} == planted
    for key, score in found:
        assert score == pytest.approx(exact[key], abs=1e-6)
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_a_filter_is_applied_before_the_candidates_are_chosen(big) -> None:
    matrix, query, planted = big
    kept = sorted(planted)[:3]
    few = [int(matrix.rowids[matrix.keys.index(k)]) for k in kept]
    others = list(range(1, 400))  # plus some random documents
    rows = RowFilter(array("q", few + others), keep=True)
    found = nearest(matrix, query, rows=rows, limit=10)
    allowed = {matrix.keys[r - 1] for r in few + others}
    assert {k for k, _ in found} <= allowed
    assert [k for k, _ in found[:3]] == sorted(kept, key=lambda k: -exact_best(
        matrix, query)[k])
    assert len(found) == 10  # fewer allowed chunks than SCORED_MIN: all of them scored
    left_out = RowFilter(array("q", few), keep=False)
    found = nearest(matrix, query, rows=left_out, limit=12)
    assert not {k for k, _ in found} & set(kept)
    assert set(planted) - set(kept) <= {k for k, _ in found}


def test_pack_signs_and_candidates() -> None:
    vectors = np.array([[1.0, -1.0, 2.0], [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0]],
                       dtype=np.float32)
    signs = pack_signs(vectors)
    assert signs.shape == (1, 3) and signs.dtype == np.uint64
    query = np.array([1.0, -0.5, 0.5], dtype=np.float32)
    assert candidate_rows(signs, query, 1).tolist() == [0]
    assert candidate_rows(signs, query, 2).tolist() == [0, 2]
    assert candidate_rows(signs, query, 1, np.array([False, True, True])).tolist() == [2]
    assert candidate_rows(signs, query, 5, np.array([False, False, False])).tolist() == []
    assert SIGN_BITS.scored(100) == 100
    assert SIGN_BITS.scored(1_000_000) == 100_000
    assert not SIGN_BITS.applies(SIGN_BITS.from_rows - 1)


def test_the_exact_path_and_the_sign_bit_path_agree_on_near_neighbours(big) -> None:
    matrix, query, planted = big
    exact = nearest(matrix, query, rows=None, limit=12, sign_bits=SignBits(from_rows=10**9))
    bits = nearest(matrix, query, rows=None, limit=12, sign_bits=SignBits(share=0.01,
                                                                          least=0))
    assert {k for k, _ in exact} == planted
    assert bits == exact
