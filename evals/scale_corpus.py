"""A synthetic corpus of any size (100,000 entries for the scale table), built from SciFact.

Each entry is one of SciFact's 5,183 abstracts, varied by its copy number ``c``: its
sentences rotated by ``c`` places, one sentence dropped, a team line and a version in the
title added, and a scope (``repo-<c mod 10>``) and category (``team-<c mod 50>``) set, so
no two entries share their text and every posting list grows as in a real, repetitive
corpus. This measures cost at size, not quality: the copies answer the same questions.

Vectors: embedding 100,000 entries with MiniLM takes hours on two cores, so an entry's
chunk vectors are its abstract's vector (the mean of the abstract's own chunk vectors
from the cached SciFact index, unit length) plus Gaussian noise (sigma
:data:`NOISE_SIGMA` per dimension, cosine to the base about 0.93), unit length again.
The HNSW graph and the brute-force scan see 100,000 distinct vectors in clusters of
about 20, which is what near-duplicate entries look like.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from indexes.documents import Document

NOISE_SIGMA = 0.02
SCOPES = 10
TEAMS = 50
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ScaleCorpus:
    """``documents`` (``n`` varied abstracts) and, for each document key, the position of
    its base abstract in ``base_vectors`` (``(5183, dim)``)."""

    documents: list[Document]
    base_of_key: dict[str, int]
    base_vectors: np.ndarray

    def vectors_for(self, chunks: list[tuple[str, str]]) -> np.ndarray:
        """``(len(chunks), dim)`` float32 unit vectors for ``(document key, chunk text
        hash)`` pairs: the document's base vector plus noise drawn from a generator seeded
        by the text hash (the same text, the same vector)."""
        dim = self.base_vectors.shape[1]
        out = np.empty((len(chunks), dim), dtype=np.float32)
        for row, (key, digest) in enumerate(chunks):
            rng = np.random.default_rng(int(digest[:16], 16))
            out[row] = self.base_vectors[self.base_of_key[key]] + rng.normal(
                0.0, NOISE_SIGMA, dim)
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


def varied(abstract: dict, copy: int) -> Document:
    """Copy number ``copy`` of one SciFact abstract (``{"id", "title", "text"}``)."""
    sentences = [s for s in _SENTENCE_END.split(abstract["text"].strip()) if s]
    if len(sentences) > 2:
        shift = copy % len(sentences)
        sentences = sentences[shift:] + sentences[:shift]
        del sentences[copy % len(sentences)]
    team = f"team-{copy % TEAMS}"
    body = " ".join(sentences) + f"\nFiled by {team}, revision {copy}."
    key = f"scale/{abstract['id']}-{copy}.md"
    return Document(key=key, doc_id=f"{abstract['id']}-{copy}",
                    title=f"{abstract['title']} (revision {copy})", body=body,
                    category=team, scope=f"repo-{copy % SCOPES}",
                    content_hash=hashlib.sha256(body.encode()).hexdigest())


def documents(corpus: list[dict], n: int) -> Iterator[tuple[int, Document]]:
    """``(base position, document)`` for ``n`` entries: abstract ``i % len(corpus)``,
    copy ``i // len(corpus)``."""
    for i in range(n):
        base = i % len(corpus)
        yield base, varied(corpus[base], i // len(corpus))


def base_vectors(index, model: str, dim: int, ids: list[str]) -> np.ndarray:
    """``(len(ids), dim)`` unit vectors: the mean of each abstract's chunk vectors in the
    cached SciFact ``index`` (:func:`evals.datasets.scifact_index`, embedded). Raises
    ``KeyError`` naming an abstract with no vectors (the cache was not embedded)."""
    matrix = index.vectors.matrix(model, dim)
    at = matrix.positions
    rows = []
    for doc_id in ids:
        position = at[doc_id]
        rows.append(matrix.vectors[matrix.starts[position]:matrix.starts[position + 1]]
                    .mean(axis=0))
    vectors = np.asarray(rows, dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def scale_corpus(corpus: list[dict], n: int, vectors: np.ndarray) -> ScaleCorpus:
    """The ``n``-entry corpus over ``corpus`` with ``vectors`` its base vectors (one row
    per abstract, in ``corpus`` order)."""
    docs, base_of_key = [], {}
    for base, doc in documents(corpus, n):
        docs.append(doc)
        base_of_key[doc.key] = base
    return ScaleCorpus(docs, base_of_key, vectors)
