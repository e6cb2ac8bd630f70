"""Errors of the LLM layer, all under :class:`wiki.errors.WikiError` so the CLI's one
handler maps them: configuration problems exit 2, failed calls exit 1."""

from __future__ import annotations

from wiki.errors import ConfigError, WikiError


class LLMError(WikiError):
    """Base class of every error raised by :mod:`wiki.llm`."""


class ModelNotConfiguredError(ConfigError):
    """Something needs a model and none is configured (``WIKI_MODEL``, ``git config
    wiki.model`` or ``[llm] model`` in ``wiki.toml``)."""


class ModelFileError(ConfigError):
    """The local model file cannot be assembled or fails its sha256 check, or the local
    extra (llama-cpp-python, the model parts) is not installed."""


class LLMCallError(LLMError):
    """The provider failed (network, authentication, bad request, bad output)."""


class LLMTimeoutError(LLMCallError):
    """A call ran past its timeout."""


class BudgetExceededError(LLMError):
    """A call was refused because the question's budget (calls, tokens or seconds) is
    spent. Nothing was sent."""
