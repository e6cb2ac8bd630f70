"""Shallow clones: where the history a walk needs stops (``git clone --depth N``).

A shallow clone holds commits whose parents were not fetched; git lists them in the
``shallow`` file of the common git dir (gitrepository-layout(5)) and ``git rev-list``
stops at them, but the commit objects still name their parents, so asking git about a
missing parent fails with "bad object". Every walk over the wiki's history asks
:func:`cut` before it looks past a commit, and raises :class:`ShallowHistoryError` (exit
1, with what it found so far) instead of reading the missing object.
"""

from __future__ import annotations

import git

from wiki.errors import NotFoundError
from wiki.store.gitrepo import common_dir

HINT = "run `git fetch --unshallow` (or `git fetch --deepen N`)"


class ShallowHistoryError(NotFoundError):
    """A walk over history reached the edge of a shallow clone: history before
    ``commit`` is missing. ``partial`` holds what the walk found before it (its shape is
    the walk's: landings for ``wiki log``, ``(entry id, revisions)`` for ``wiki
    history``; ``None`` when nothing useful was found)."""

    def __init__(self, commit: str, what: str = "history", partial=None, needed: str = ""):
        why = f" (needed for {needed})" if needed else ""
        super().__init__(f"this clone is shallow: {what} before commit {commit[:12]}{why} "
                         f"is missing; {HINT}")
        self.commit = commit
        self.partial = partial


def boundary(repo: git.Repo) -> frozenset[str]:
    """The commits of ``repo`` whose parents were not fetched (empty when the repository
    is complete). Read from the ``shallow`` file, which git keeps in the common git dir."""
    path = common_dir(repo) / "shallow"
    try:
        text = path.read_text(encoding="ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return frozenset()
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def is_cut(repo: git.Repo, commit: git.Commit, edge: frozenset[str] | None = None) -> bool:
    """Whether ``commit`` is at the edge of a shallow clone with parents that are not
    here (a root commit, such as the wiki's first, is never cut). ``edge``: the
    :func:`boundary` when the caller already read it."""
    edge = boundary(repo) if edge is None else edge
    return commit.hexsha in edge and bool(commit.parents)


def first_cut(repo: git.Repo, commits) -> str | None:
    """The first commit of ``commits`` (already walked) that :func:`is_cut`, or ``None``."""
    edge = boundary(repo)
    if not edge:
        return None
    return next((c.hexsha for c in commits if is_cut(repo, c, edge)), None)
