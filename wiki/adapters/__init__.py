"""Source adapters (docs/architecture.md, "Sources and fingerprints"): ``git:``,
``file://`` and ``http(s)://`` behind a registry keyed by URI scheme
(:mod:`wiki.adapters.registry`).

Importing this package registers the built-in adapters.
"""

from __future__ import annotations

from wiki.adapters import file_source, git_source, http_source  # noqa: F401  (registers)
from wiki.adapters.policy import SourcePolicy
from wiki.adapters.registry import (
    ADAPTERS,
    VALIDATORS,
    Adapter,
    Check,
    Recorded,
    SourceEnv,
    Sources,
    register,
    scheme_of,
)

__all__ = ["ADAPTERS", "VALIDATORS", "Adapter", "Check", "Recorded", "SourceEnv",
           "SourcePolicy", "Sources", "register", "scheme_of", "sources_for"]


def sources_for(wiki, config=None) -> Sources:
    """The adapters of one run over the repository of ``wiki`` (a
    :class:`wiki.store.workspace.Wiki`), with ``config`` (default: ``wiki.toml`` at its head)
    and the reader's source policy (:meth:`SourcePolicy.load`: environment and git config,
    never the branch). Raises ``ConfigError`` for a malformed policy setting."""
    return Sources(SourceEnv(wiki.repo, wiki.root, config or wiki.config(),
                             SourcePolicy.load(wiki.repo)))
