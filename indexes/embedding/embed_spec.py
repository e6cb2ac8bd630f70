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

from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT_MODEL = "all-MiniLM-L6-v2"
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
