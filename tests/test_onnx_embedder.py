"""The ONNX copy of all-MiniLM-L6-v2: exported from the installed weights, the same vectors
as sentence-transformers, refused when broken, chosen by ``WIKI_EMBED_RUNTIME``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

# PyTorch exists here for Python 3.11 only (3.12+ gets the CUDA build alone): on 3.13 the
# torch-free ONNX copy is what tests/test_onnx_build.py checks, against the same vectors
pytest.importorskip("torch", reason="no CPU build of PyTorch for this Python")

from indexes.embedding import embedders, onnx_embedder  # noqa: E402
from indexes.embedding.embedders import EmbedderUnavailableError, SentenceTransformerEmbedder  # noqa: E402
from indexes.embedding.onnx_embedder import OnnxEmbedder, export_onnx  # noqa: E402
from wiki.answering.embed_settings import resolve_spec  # noqa: E402

TEXTS = ["How do I rotate the signing keys?", "", "Le café est fermé le lundi.",
         "東京の天気は晴れです", "word " * 600, "a"]


@pytest.fixture(scope="module")
def torch_model() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder()


@pytest.fixture(scope="module")
def exported(torch_model, tmp_path_factory) -> Path:
    return export_onnx(torch_model.model, tmp_path_factory.mktemp("onnx") / "minilm.onnx")


@pytest.fixture()
def cache_home(tmp_path, monkeypatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    embedders._LOADED.pop(embedders.DEFAULT_MODEL, None)
    yield tmp_path / "cache"
    embedders._LOADED.pop(embedders.DEFAULT_MODEL, None)


def test_onnx_vectors_equal_sentence_transformers(torch_model, exported) -> None:
    onnx = OnnxEmbedder(exported)
    got, want = onnx.encode(TEXTS), torch_model.encode(TEXTS)
    assert got.shape == want.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert float(np.abs(got - want).max()) < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # one at a time (no padding) gives the same rows as the padded batch
    assert float(np.abs(onnx.encode([TEXTS[4]])[0] - got[4]).max()) < 1e-5
    assert onnx.encode([]).shape == (0, 384)


def test_a_broken_copy_is_refused(tmp_path) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailableError, match="not a loadable ONNX model"):
        OnnxEmbedder(broken)


def test_auto_runtime_replaces_a_broken_cached_copy(cache_home, exported, monkeypatch) -> None:
    path = onnx_embedder.onnx_copy_path()
    assert path.is_relative_to(cache_home / "wiki" / "models")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"truncated")
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "onnx")
    with pytest.raises(EmbedderUnavailableError, match="not a loadable"):
        embedders.load_default(resolve_spec())
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "auto")
    model = embedders.load_default(resolve_spec())  # re-exports over the broken file
    assert isinstance(model, OnnxEmbedder)
    assert path.read_bytes()[:16] == exported.read_bytes()[:16]


def test_runtime_choice(cache_home, monkeypatch) -> None:
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "torch")
    assert isinstance(embedders.load_default(resolve_spec()), SentenceTransformerEmbedder)
    assert not onnx_embedder.onnx_copy_path().exists()
    monkeypatch.setenv("WIKI_EMBED_RUNTIME", "tensorflow")
    with pytest.raises(EmbedderUnavailableError, match="WIKI_EMBED_RUNTIME must be one of"):
        embedders.load_default(resolve_spec())
