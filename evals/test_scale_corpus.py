"""The synthetic scale corpus: distinct entries, scopes and teams spread, vectors that are
deterministic, unit length and near their abstract's."""

from __future__ import annotations

import numpy as np

from evals.scale_corpus import SCOPES, scale_corpus

ABSTRACTS = [{"id": str(i), "title": f"Title {i}",
              "text": f"First claim {i}. Second finding {i}. Third result {i}. Fourth {i}."}
             for i in range(3)]


def _corpus(n: int):
    base = np.eye(3, 8, dtype=np.float32)
    return scale_corpus(ABSTRACTS, n, base)


def test_every_entry_is_distinct_and_spread_over_scopes() -> None:
    corpus = _corpus(60)
    keys = [d.key for d in corpus.documents]
    bodies = [d.body for d in corpus.documents]
    assert len(set(keys)) == 60 and len(set(bodies)) == 60
    assert {d.scope for d in corpus.documents} == {f"repo-{i}" for i in range(SCOPES)}
    assert corpus.base_of_key["scale/1-4.md"] == 1


def test_vectors_are_unit_deterministic_and_near_their_abstract() -> None:
    corpus = _corpus(6)
    pairs = [("scale/0-0.md", "ab" * 32), ("scale/2-1.md", "cd" * 32)]
    first, again = corpus.vectors_for(pairs), corpus.vectors_for(pairs)
    assert np.array_equal(first, again)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert first[0].argmax() == 0 and first[1].argmax() == 2
