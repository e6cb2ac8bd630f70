"""Which paths one tree can hold together: never a file and a folder of the same name.

git stores a file ``a/b.md`` and a folder ``a/b.md/`` as two entries named ``b.md`` in the
tree of ``a``: ``git fsck`` reports ``duplicateEntries``, a remote with
``receive.fsckObjects`` refuses the push and a checkout writes only one of them. The
generated ``index.md`` of a folder and ``wiki.toml`` at the root are files too, so a folder
of either name clashes as soon as it is written. :func:`clashes` finds such pairs in a set
of paths; :func:`check_folder` refuses a folder a new entry cannot go to.
"""

from __future__ import annotations

from collections.abc import Iterable

from wiki.config import CONFIG_PATH
from wiki.errors import ConfigError, quoted
from wiki.store.indextree import INDEX_NAME

MAX_PATH_BYTES = 1024
"""The longest path a checkout on macOS can hold (``PATH_MAX``; Linux allows 4,096, a
Windows checkout without ``core.longpaths`` far less), before the folder it is cloned to.
Review refuses a longer new path (:mod:`wiki.review.filenames`); an index leaves an entry
at a longer path out as invalid (a key that long also passes no database's index: a
PostgreSQL btree entry holds at most 2,704 bytes)."""


def folders_of(paths: Iterable[str]) -> set[str]:
    """Every folder above a path of ``paths`` (``a/b/c.md`` -> ``a``, ``a/b``)."""
    found: set[str] = set()
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return found


def clashes(paths: Iterable[str]) -> list[str]:
    """The paths of ``paths`` that are also a folder of another path, sorted (empty: a
    valid tree). Compared exactly, as git compares names."""
    paths = set(paths)
    return sorted(paths & folders_of(paths))


def case_twins(new: Iterable[str], paths: Iterable[str]) -> list[tuple[str, str]]:
    """``(path, other)`` for each path of ``new`` that a case-insensitive file system (a
    checkout on macOS or Windows) would take for ``other``, a different spelling among
    ``paths`` of it or of a folder above it (``Ops/q.md`` writes into ``ops/``), sorted."""
    spellings: dict[str, set[str]] = {}
    for path in set(paths) | set(new):
        for prefix in (*folders_of([path]), path):
            spellings.setdefault(prefix.casefold(), set()).add(prefix)
    found = []
    for path in sorted(set(new)):
        for prefix in sorted(folders_of([path]), key=len) + [path]:
            others = sorted(spellings.get(prefix.casefold(), set()) - {prefix})
            if others:
                found.append((path, others[0]))
                break
    return found


def check_folder(folder: str, files: Iterable[str], *, shown: str) -> None:
    """Refuse ``folder`` (slugged, ``/``-separated; empty is the root) as the folder of a
    new entry in a tree holding ``files``, when it or a folder above it is a file there
    (compared case-insensitively, as a checkout on macOS or Windows would), is named
    ``index.md`` (every folder's generated listing) or is ``wiki.toml`` at the root.
    ``shown`` is the value as the caller gave it, named by the one-line
    :class:`ConfigError`."""
    if not folder:
        return
    parts = folder.split("/")
    taken = {p.casefold() for p in files}
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if parts[i - 1].casefold() == INDEX_NAME:
            why = f"{quoted(prefix)} is the name of a folder's generated listing"
        elif prefix.casefold() == CONFIG_PATH:
            why = f"{quoted(prefix)} is the wiki's settings file"
        elif prefix.casefold() in taken:
            why = f"{quoted(prefix)} is a file of the wiki"
        else:
            continue
        raise ConfigError(f"category {quoted(shown)}: {why}, so it cannot also be a folder "
                          "(git would refuse the tree); choose another category")
