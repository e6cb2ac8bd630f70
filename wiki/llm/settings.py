"""Which model, with which limits: the per-user choice over the team's default.

The model name comes from, in order: ``WIKI_MODEL`` in the environment, ``git config
wiki.model``, ``[llm] model`` in the branch's ``wiki.toml``. ``none`` (or an empty value)
at any level means no model, and everything works without one (BM25 + vectors, extractive
answers). Limits and the walk's sizes come from ``[llm]`` in ``wiki.toml``.
"""

from __future__ import annotations

import os

from wiki.config import LLMConfig
from wiki.llm.cache import FILE_NAME, ResponseCache
from wiki.llm.client import LLMClient
from wiki.llm.errors import ModelNotConfiguredError
from wiki.llm.usage import Limits, command_deadline
from wiki.store.gitrepo import config_value

OFF = ("", "none", "off")
HINT = ("set WIKI_MODEL (e.g. WIKI_MODEL=local/qwen2.5-coder-1.5b after `make setup-llm`, "
        "or any litellm model name) or [llm] model in wiki.toml")


def model_name(wiki, config: LLMConfig | None = None) -> str | None:
    """The configured model for ``wiki`` (a :class:`wiki.store.workspace.Wiki`), or ``None``.
    ``config`` is the ``[llm]`` section when the caller has it (else read from the head)."""
    value = os.environ.get("WIKI_MODEL")
    if value is None:
        value = _git_config(wiki)
    if value is None:
        value = (config or _branch_config(wiki)).model
    value = value.strip()
    return None if value.lower() in OFF else value


def open_client(wiki, config: LLMConfig | None = None, *,
                model: str | None = None) -> LLMClient | None:
    """A client for the configured (or given) model with the response cache in the
    wiki's derived state, or ``None`` when no model is configured. Every client opened
    within one :func:`wiki.llm.usage.command_scope` shares one deadline of ``[llm]
    timeout`` seconds."""
    config = config or _branch_config(wiki)
    name = model or model_name(wiki, config)
    if name is None:
        return None
    return LLMClient(name, cache=ResponseCache(wiki.state_dir / FILE_NAME),
                     timeout=config.timeout, limits=limits_of(config),
                     deadline=command_deadline(config.timeout))


def require_client(wiki, config: LLMConfig | None = None) -> LLMClient:
    """Like :func:`open_client`; raises :class:`ModelNotConfiguredError` without a model."""
    client = open_client(wiki, config)
    if client is None:
        raise ModelNotConfiguredError(f"no LLM is configured: {HINT}")
    return client


def limits_of(config: LLMConfig) -> Limits:
    """The per-question caps of ``[llm]``."""
    return Limits(calls=config.max_calls, tokens=config.max_tokens,
                  seconds=config.max_seconds)


def _git_config(wiki) -> str | None:
    try:
        value = config_value(wiki.repo, "wiki", "model", None)
    except Exception:  # an unreadable config is git's to report, not ours
        return None
    return None if value is None else str(value)


def _branch_config(wiki) -> LLMConfig:
    return wiki.config().llm if wiki.head() is not None else LLMConfig()
