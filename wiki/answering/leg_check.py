"""A retrieval leg the user named in ``--legs`` runs, or the search fails with one line.

The default legs (``[search] legs``) degrade: a vector leg without a model is skipped with
a note, so a user who never asked for vectors still gets BM25 results. A leg asked for by
name is different: skipping it silently answers another question than the one asked, so
:func:`require_vector` and :func:`require_llm` raise :class:`LegUnavailableError` (a
:class:`wiki.errors.ConfigError`, CLI exit 2) naming the setting that stops it
(docs/decisions.md, "Errors a user can cause").
"""

from __future__ import annotations

import re

from wiki.errors import ConfigError

_LIBRARY_PREFIX = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception):\s*")
"""A library's ``module.SomeError: `` prefix, dropped from a failed call's reason."""


class LegUnavailableError(ConfigError):
    """A leg named in ``--legs`` cannot run; ``leg`` names it, the message says why and
    which setting to change (CLI exit 2)."""

    def __init__(self, leg: str, message: str):
        super().__init__(message)
        self.leg = leg


def require_vector(reason: str | None) -> None:
    """Raise :class:`LegUnavailableError` when the vector leg, asked for by name, was
    skipped for ``reason`` (``None``: it ran)."""
    if reason is not None:
        raise LegUnavailableError("vector", f"--legs vector cannot run: {_one_line(reason)} "
                                  "(drop it from --legs to search without vectors)")


def require_llm(stage) -> None:
    """Raise :class:`LegUnavailableError` when a model call of the ``llm`` leg, asked for
    by name, failed (``stage``: the search's :class:`wiki.llm.leg.LLMStage`): an unknown
    provider, a wrong key, an unreachable server. A walk stopped by its ``[llm]`` budget,
    or by the ``[llm] timeout``, is not a failure (it keeps what it ranked, with a note)."""
    client = stage.client
    if client is None:
        return
    spent = client.usage.since(stage.start)
    if spent.errors <= spent.timeouts:  # none, or only timeouts: the model may answer next
        return  # time, so the other legs answer with a note (docs/cli.md, the faults table)
    failed = next((reason for reason in stage.stopped if reason.startswith("walk: ")), "")
    why = _one_line(failed.removeprefix("walk: ").removeprefix(f"{client.model}: "))
    raise LegUnavailableError(
        "llm", f"--legs llm cannot run: the model WIKI_MODEL={client.model!r} failed"
               + (f" ({why})" if why else "")
               + "; check WIKI_MODEL and the provider's key (docs/llm.md)")


def _one_line(text: str, limit: int = 160) -> str:
    """The first sentence of ``text``'s first line, without a library's exception-class
    prefix, at most ``limit`` characters."""
    line = (text.strip().splitlines() or [""])[0]
    line = _LIBRARY_PREFIX.sub("", line)
    sentence = re.split(r"(?<=[a-z0-9)'])\. ", line, maxsplit=1)[0].rstrip(".")
    return sentence if len(sentence) <= limit else sentence[:limit - 3] + "..."
