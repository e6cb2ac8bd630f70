"""The one place that imports litellm (lazily: it costs seconds) and registers providers.

``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before the import so litellm reads its bundled
price list instead of fetching one. Custom providers (the offline ``local`` one, fakes in
tests) go through litellm's own registry, ``litellm.custom_provider_map``, so every model
name, hosted or not, takes the same path through :func:`litellm.completion`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

_lock = threading.Lock()
_factories: dict[str, Callable[[], object]] = {}
_registered: set[str] = set()


def litellm():
    """The imported ``litellm`` module (imported once, without network access at import)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    import litellm as module

    module.telemetry = False
    module.suppress_debug_info = True
    return module


def register_provider(name: str, factory: Callable[[], object]) -> None:
    """Make ``name/<model>`` callable through litellm: ``factory()`` returns a
    ``litellm.CustomLLM`` instance, built (and litellm imported) only when a model of that
    provider is first used. Registering a name again replaces its factory."""
    with _lock:
        _factories[name] = factory
        _registered.discard(name)


def provider_of(model: str) -> str:
    """The provider part of a litellm model name (``"local"`` for ``local/x``)."""
    return model.split("/", 1)[0] if "/" in model else ""


def prepare(model: str):
    """litellm, with the custom provider of ``model`` (if it has one) registered in
    ``litellm.custom_provider_map``. Returns the module."""
    module = litellm()
    name = provider_of(model)
    with _lock:
        if name in _factories and name not in _registered:
            handler = _factories[name]()
            module.custom_provider_map = [
                item for item in module.custom_provider_map if item["provider"] != name
            ] + [{"provider": name, "custom_handler": handler}]
            module.utils.custom_llm_setup()
            _registered.add(name)
    return module


def is_custom(model: str) -> bool:
    """True when ``model`` is served by a provider registered here (not a hosted API)."""
    return provider_of(model) in _factories


def _local_factory():
    from wiki.llm.local import LocalProvider

    return LocalProvider.create()


register_provider("local", _local_factory)
