"""Which index backend a wiki uses: the user's setting, read at the edge.

* ``WIKI_INDEX_URL`` (environment), else git config ``wiki.indexUrl``: a
  ``postgresql://`` URL puts this wiki's index in that database; unset or empty keeps the
  SQLite file in the git dir (the default).
* git config ``wiki.indexSpace``: the name of this wiki's rows in a shared database;
  default ``<absolute git common dir>:<wiki branch>``, so every repository and branch
  is its own space. Two clones that should share one index set the same name.
"""

from __future__ import annotations

import os

from indexes.backend import redacted


def _git_setting(wiki, name: str) -> str | None:
    return wiki.setting(f"wiki.{name}")


def index_url(wiki) -> str | None:
    """The configured index database URL of ``wiki``, or ``None`` for SQLite."""
    value = os.environ.get("WIKI_INDEX_URL", "").strip()
    return value or _git_setting(wiki, "indexUrl")


def index_space(wiki) -> str:
    """This wiki's space in a shared index database (see the module)."""
    return _git_setting(wiki, "indexSpace") or f"{wiki.state_dir.parent.resolve()}:{wiki.branch}"


def index_exists(wiki) -> bool:
    """Whether ``wiki`` has derived search state to read: a configured index database
    (which holds the wiki's space once anything synced it), or the SQLite file."""
    return index_url(wiki) is not None or wiki.database_path().exists()


def index_location(wiki) -> str:
    """Where ``wiki``'s index lives, for people: the SQLite path, or the database URL
    (password hidden) and the space."""
    url = index_url(wiki)
    return str(wiki.database_path()) if url is None else f"{redacted(url)} [{index_space(wiki)}]"
