"""Sign bits: which chunk vectors are worth an exact cosine, at 1/32 of the bytes.

Exact cosine reads every stored float32 (151,449 chunks x 384 x 4 bytes = 232 MB at
100,000 entries: ~20 ms on one core of this machine, the memory-bandwidth floor). Keeping
one bit per dimension, its sign, makes the same matrix 7 MB; the Hamming distance between
the query's signs and a chunk's estimates their angle (Charikar, "Similarity estimation
techniques from rounding algorithms", STOC 2002: for random hyperplanes the chance that a
bit differs is angle / pi; the coordinate axes of a trained embedding stand in for random
hyperplanes). The chunks nearest by Hamming distance are then scored by exact cosine, so
a result's score is always exact and only a chunk the bits ranked too low can be missed:
"binary quantization with rescoring" (Yamada et al., "Efficient Passage Retrieval with
Hashing for Open-domain Question Answering", ACL 2021; the sentence-transformers
"Embedding Quantization" guide, 2024). ``numpy.bitwise_count`` counts the bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SignBits:
    """When the vector leg uses sign bits and how many chunks it then scores exactly."""

    from_rows: int = 50_000
    """Below this many chunk vectors every cosine is computed (exact cosine then costs
    less than ~7 ms here); from it on, sign bits choose the chunks scored."""
    share: float = 0.1
    """The share of the (allowed) chunks scored exactly, by Hamming distance. Chosen on
    SciFact's train queries for recall of the exact top 50 (docs/decisions.md, "Hybrid
    search at 100,000 entries"; evals/results/sign-bits.md)."""
    least: int = 2_000
    """The fewest chunks scored exactly, whatever the share."""

    def applies(self, rows: int) -> bool:
        """Whether a matrix of ``rows`` chunk vectors is ranked through sign bits."""
        return rows >= self.from_rows

    def scored(self, allowed: int) -> int:
        """How many of ``allowed`` chunks are scored exactly: :attr:`share` of them, at
        least :attr:`least`, at most all."""
        return min(allowed, max(self.least, int(self.share * allowed)))


SIGN_BITS = SignBits()
"""The product's setting."""


def pack_signs(vectors: np.ndarray) -> np.ndarray:
    """``(words, n)`` uint64, one row per 64 dimensions (column-major, so each word of
    every vector is one contiguous run): bit ``j`` of vector ``i`` set when
    ``vectors[i, j] > 0``, zero bits padding the last word. ``vectors``: ``(n, dim)``
    float."""
    packed = np.packbits(np.asarray(vectors) > 0, axis=-1)
    pad = (-packed.shape[-1]) % 8
    if pad:
        packed = np.concatenate(
            [packed, np.zeros(packed.shape[:-1] + (pad,), dtype=np.uint8)], axis=-1)
    return np.ascontiguousarray(np.ascontiguousarray(packed).view(np.uint64).T)


def candidate_rows(signs: np.ndarray, query: np.ndarray, count: int,
                   allowed: np.ndarray | None = None) -> np.ndarray:
    """Ascending indexes of the vectors of ``signs`` (:func:`pack_signs`) at least as near
    to ``query`` (a ``(dim,)`` float vector) by Hamming distance as the ``count``-th
    nearest: ``count`` of them, or a few more when several tie at that distance (all are
    kept, so the choice never depends on order). Only vectors where ``allowed`` (a bool
    per vector, or ``None`` for all) is set."""
    query_signs = pack_signs(query[None, :])[:, 0]
    distance = np.bitwise_count(signs[0] ^ query_signs[0]).astype(np.int32)
    for word, bits in zip(signs[1:], query_signs[1:], strict=True):
        distance += np.bitwise_count(word ^ bits)
    far = signs.shape[0] * 64 + 1  # beyond any distance
    if allowed is not None:
        distance[~allowed] = far
        count = min(count, int(allowed.sum()))
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    within = np.cumsum(np.bincount(distance, minlength=far + 1))
    threshold = int(np.searchsorted(within, count))  # the count-th nearest's distance
    return np.flatnonzero(distance <= threshold)
