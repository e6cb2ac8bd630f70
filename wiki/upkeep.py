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
    updated, removed, invalid), how many distinct texts were ``embedded`` and a note on the
    ``vectors`` (model and count, or why there are none). The texts are entry chunks (the
    vector leg) and answer sentences (the answer picker): ``chunks`` and ``sentences`` split
    ``embedded`` between them, or are ``None`` when the split is not known (vectors of
    another model or damaged ones were dropped and embedded again in the same run)."""

    sync: SyncReport
    embedded: int
    vectors: str
    chunks: int | None = None
    sentences: int | None = None

    def embedded_text(self) -> str:
        """``"347 chunks and 1605 answer sentences embedded"`` (or, split unknown,
        ``"1952 texts embedded (chunks and answer sentences)"``)."""
        if self.chunks is None or self.sentences is None:
            return f"{self.embedded} texts embedded (chunks and answer sentences)"
        return (f"{self.chunks} chunk{'s' if self.chunks != 1 else ''} and {self.sentences} "
                f"answer sentence{'s' if self.sentences != 1 else ''} embedded")


def update_index(wiki: Wiki, *, rebuild: bool = False,
                 progress: Progress | None = None) -> Indexed:
    """Bring the derived index up to the wiki branch (``rebuild``: from scratch), then
    embed the entries that have no vector yet (``progress(done, total)`` as it goes).
    Raises ``NotInitializedError`` without a wiki branch."""
    from wiki.answering.embedding import model_name, refresh_vectors
    from wiki.store.derived import open_synced
    from wiki.store.derived import rebuild as run_rebuild

    if rebuild:
        result = run_rebuild(wiki)
        index = open_synced(wiki, write=True).index
    else:
        synced = open_synced(wiki, write=True)
        index, result = synced.index, synced.report
    try:
        name = model_name()
        pending = index.vectors.pending_split(name) if name else (0, 0)
    finally:
        index.close()
    embedded, note = refresh_vectors(wiki, progress=progress)
    if sum(pending) != embedded:  # vectors dropped and embedded again, or none could be
        return Indexed(result, embedded, note)
    return Indexed(result, embedded, note, *pending)
