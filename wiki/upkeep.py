"""Setting a wiki up and keeping its derived index current: the ``wiki init`` and
``wiki index`` use cases, one call each.

:func:`init_wiki` creates the wiki branch and its (empty) derived index, so the first
``wiki status`` reads current; :func:`update_index` brings the index (full text, then the
vectors of entries that have none) up to the branch head, or rebuilds it from scratch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from indexes.sqlite.vectors import Progress
    from wiki.store.derived import SyncReport
    from wiki.store.workspace import Wiki


def init_wiki(wiki: Wiki) -> str:
    """Create the wiki branch (``wiki.toml`` and a root ``index.md``, one commit by the
    current git identity) and build its derived index; return the new commit's sha.
    Raises ``AlreadyInitializedError`` when the branch exists, ``IdentityError`` when git
    cannot tell who is acting."""
    from wiki.store.derived import open_synced

    commit = wiki.init()
    index = open_synced(wiki).index
    index.close()
    return commit


@dataclass(frozen=True)
class Indexed:
    """What :func:`update_index` did: the full-text ``sync`` (commit, entries added,
    updated, removed, invalid), how many distinct chunk texts were ``embedded`` (the vector
    leg's; answer sentences are embedded when an answer reads them, not here) and a note
    on the ``vectors`` (model and count, or why there are none)."""

    sync: SyncReport
    embedded: int
    vectors: str

    def embedded_text(self) -> str:
        """``"347 chunks embedded"``."""
        return f"{self.embedded} chunk{'s' if self.embedded != 1 else ''} embedded"


def update_index(wiki: Wiki, *, rebuild: bool = False,
                 progress: Progress | None = None) -> Indexed:
    """Bring the derived index up to the wiki branch (``rebuild``: from scratch), then
    embed the chunks that have no vector yet (``progress(done, total)`` as it goes; the
    shortest texts first) and start the shared embedding server in the background, so the
    next search finds the model loaded. Raises ``NotInitializedError`` without a wiki
    branch, :class:`wiki.errors.StorageError` when the disk refuses the index."""
    from wiki.answering.embedding import refresh_vectors
    from wiki.store.derived import open_synced
    from wiki.store.derived import rebuild as run_rebuild

    if rebuild:
        result = run_rebuild(wiki)
    else:
        synced = open_synced(wiki, write=True)
        try:  # an index that grew past the size or was upgraded gets its BM25 postings
            synced.index.settle()
        finally:
            synced.index.close()
        result = synced.report
    embedded, note = refresh_vectors(wiki, progress=progress)
    return Indexed(result, embedded, note)


def index_landed(wiki: Wiki, *, progress: Progress | None = None) -> Indexed | str | None:
    """After a change landed (approve, sync): :func:`update_index`, so the entries it
    brought are searchable by meaning at once rather than left for a later ``wiki
    index``. ``None`` for a wiki with no index yet (left alone, as
    :func:`wiki.store.derived.refresh` leaves it). Never fails the change that already
    landed: a fault is returned as one line (what happened and that ``wiki index`` will
    finish the job)."""
    from indexes.backend import as_index_error
    from indexes.errors import IndexesError
    from indexes.sqlite.faults import DatabaseError
    from wiki.errors import WikiError
    from wiki.store.index_url import index_exists

    if not index_exists(wiki):
        return None
    try:
        return update_index(wiki, progress=progress)
    except Exception as exc:  # the change landed: a fault here is a note, not a failure
        if not isinstance(exc, (WikiError, IndexesError, DatabaseError, OSError)) and \
                as_index_error(exc) is None:
            raise
        return f"the new entries' vectors were not embedded ({exc}); run `wiki index`"
