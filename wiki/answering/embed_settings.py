"""The user's embedding settings, read once into an :class:`EmbedderSpec`.

The one place that reads them (per-user settings come from the environment, docs/cli.md):

* ``WIKI_EMBED_MODEL``: the embedding model, default ``all-MiniLM-L6-v2-q8`` (int8
  weights quantized here from the float weights; the float ``all-MiniLM-L6-v2`` when
  ``WIKI_EMBED_RUNTIME=torch``, which has no int8 form; ``all-MiniLM-L6-v2-int8`` where
  the float weights are not installed: :func:`indexes.embedding.embed_spec.installed_default`);
  ``none`` or ``off`` turns the vector leg off;
* ``WIKI_EMBED_RUNTIME``: ``auto`` (default) / ``onnx`` / ``torch``, for the default model;
* ``WIKI_EMBED_SERVER``: ``auto`` (default: this install's warm server) / ``off``
  (the model loads in each process).

An application resolves the spec at its edge (:func:`resolve_spec`, once per command) and
scopes it over the work with :func:`using`; library code asks :func:`current_spec`. Outside
any :func:`using` (a library caller, a test, an eval) :func:`current_spec` resolves it from
the environment at that moment. The MCP server scopes a spec with ``server="off"`` instead
of writing ``os.environ``. A scope is a context variable: it follows the code into asyncio
tasks and ``copy_context`` threads, and ends with its ``with`` block.

Imports only the stdlib, :mod:`wiki.errors` and :mod:`indexes.embedding.embed_spec`: the CLI builds
a spec at start-up for free.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar

from indexes.embedding.embed_spec import (
    DEFAULT_MODEL,
    DISABLED,
    QUANTIZED_MODEL,
    RUNTIMES,
    SERVER_MODES,
    EmbedderSpec,
    installed_default,
)
from wiki.errors import ConfigError

__all__ = ["EmbedderSpec", "current_spec", "resolve_spec", "using", "validate"]
_SCOPED: ContextVar[EmbedderSpec | None] = ContextVar("wiki_embedder_spec", default=None)


def _setting(environ: Mapping[str, str], name: str, default: str) -> str:
    return environ.get(name, default).strip().lower() or default


def resolve_spec(environ: Mapping[str, str] | None = None, *,
                 notify: Callable[[str], None] | None = None) -> EmbedderSpec:
    """The spec that ``environ`` (default ``os.environ``) asks for, with ``notify`` as its
    voice for slow one-time steps. With ``WIKI_EMBED_RUNTIME=torch`` and no
    ``WIKI_EMBED_MODEL``, the default is the float model (the int8 one has no PyTorch
    form). Values are trimmed and, for the runtime and server mode, lower-cased; they are
    not checked here, so a spec always resolves (``wiki doctor``
    reports a bad one as a check); a search checks it with :func:`validate`."""
    environ = os.environ if environ is None else environ
    runtime = _setting(environ, "WIKI_EMBED_RUNTIME", "auto")
    default = installed_default()
    if runtime == "torch" and default == QUANTIZED_MODEL:
        default = DEFAULT_MODEL  # the int8 copy runs on ONNX Runtime only
    model = environ.get("WIKI_EMBED_MODEL", default).strip()
    return EmbedderSpec(model=None if model.lower() in DISABLED else model,
                        runtime=runtime,
                        server=_setting(environ, "WIKI_EMBED_SERVER", "auto"),
                        notify=notify)


def validate(spec: EmbedderSpec) -> EmbedderSpec:
    """``spec``, or ``ConfigError`` naming the variable, its value and the allowed values
    when its runtime is not one of :data:`RUNTIMES` (``WIKI_EMBED_RUNTIME``) or its server
    mode not one of :data:`SERVER_MODES` (``WIKI_EMBED_SERVER``). Every search calls it,
    whatever legs it runs: a typo in a setting is an error, not a reason to search
    without vectors. The model name is not checked: whether it loads is the vector leg's
    business (a default leg that cannot run is a note, one named in ``--legs`` an error)."""
    for name, value, allowed in (("WIKI_EMBED_RUNTIME", spec.runtime, RUNTIMES),
                                 ("WIKI_EMBED_SERVER", spec.server, SERVER_MODES)):
        if value not in allowed:
            raise ConfigError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return spec


def current_spec() -> EmbedderSpec:
    """The spec scoped by the innermost :func:`using`, else :func:`resolve_spec` now."""
    return _SCOPED.get() or resolve_spec()


@contextlib.contextmanager
def using(spec: EmbedderSpec) -> Iterator[EmbedderSpec]:
    """Make ``spec`` the :func:`current_spec` inside the ``with`` block (nestable)."""
    token = _SCOPED.set(spec)
    try:
        yield spec
    finally:
        _SCOPED.reset(token)
