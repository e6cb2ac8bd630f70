"""The ONNX copy built without PyTorch (indexes/embedding/onnx_build.py): the vectors of
sentence-transformers on every supported Python, refused when they drift, and what the
default embedder loads where torch is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from indexes.embedding import embedders, onnx_build, onnx_embedder
from indexes.embedding.embedders import EmbedderUnavailableError
from indexes.embedding.onnx_embedder import OnnxEmbedder

TEXTS = ["How do I rotate the signing keys?", "", "Le café est fermé le lundi.",
         "東京の天気は晴れです", "word " * 600, "a"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return onnx_build.build_onnx(onnx_embedder.model_dir(),
                                 tmp_path_factory.mktemp("built") / "minilm.onnx")


def test_built_copy_reproduces_the_reference_vectors(built) -> None:
    got = OnnxEmbedder(built).encode(onnx_embedder.PROBES)
    want = np.load(onnx_build.REFERENCE)
    assert want.shape == (len(onnx_embedder.PROBES), 384)
    assert float(np.abs(got - want).max()) < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_built_copy_equals_sentence_transformers_where_torch_exists(built) -> None:
    """On 3.11 (torch installed) the torch-free copy is compared with the PyTorch model on
    texts outside the probes; on 3.13 with the stored reference, above."""
    vectors = OnnxEmbedder(built).encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384)
    if importlib.util.find_spec("torch") is not None:
        want = embedders.SentenceTransformerEmbedder().encode(TEXTS)
        assert float(np.abs(vectors - want).max()) < onnx_embedder.TOLERANCE
    # a related pair is nearer than an unrelated one, whichever runtime made the copy
    a, b, c = OnnxEmbedder(built).encode(["file a travel voucher", "reimbursement for a "
                                          "trip", "the garage takes the blue badge"])
    assert float(a @ b) > float(a @ c)


def test_a_copy_off_the_reference_is_refused_and_nothing_is_left(tmp_path) -> None:
    wrong = tmp_path / "wrong.npy"
    reference = np.load(onnx_build.REFERENCE)
    np.save(wrong, np.roll(reference, 1, axis=0))  # right vectors, wrong probes
    target = tmp_path / "copy" / "minilm.onnx"
    with pytest.raises(EmbedderUnavailableError, match="differs from the reference"):
        onnx_build.build_onnx(onnx_embedder.model_dir(), target, reference=wrong)
    assert list(target.parent.iterdir()) == []


def test_a_missing_weights_file_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "config.json").write_text('{"hidden_size": 384}')
    with pytest.raises(EmbedderUnavailableError, match="cannot build the ONNX copy"):
        onnx_build.build_onnx(tmp_path, tmp_path / "out.onnx")
