"""Reading one entry for a person or an agent: the ``wiki show`` and MCP ``get`` use case.

:func:`get_entry` reads the wiki head once and finds the entry (by id or path); the
:class:`EntryView` it returns says which commit was read and, on demand, what a reader
wants next to the entry: its relations both ways, the cited files changed since it was
written (marks set by the post-commit hook) and the open proposals that touch it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wiki.errors import WikiError
from wiki.store.lookup import find_entry, raw_file

if TYPE_CHECKING:
    from wiki.knowledge.relations import Link
    from wiki.store.entry import Entry
    from wiki.store.snapshot import Snapshot
    from wiki.store.workspace import Wiki


@dataclass(frozen=True)
class EntryView:
    """One entry as read at ``commit`` (the wiki head when :func:`get_entry` ran).
    ``entry`` is ``None`` only for a file asked for ``as_stored`` that is not a readable
    entry (``wiki.toml``, an ``index.md``, a malformed entry); ``raw`` holds the file's
    bytes when it was asked for ``as_stored`` and the target names a file."""

    wiki: Wiki
    snapshot: Snapshot
    entry: Entry | None
    raw: bytes | None = None

    @property
    def commit(self) -> str:
        """The wiki commit read (pass it as ``--base`` to propose an edit of this copy)."""
        return self.snapshot.commit

    def relations(self) -> tuple[list[Link], list[Link]]:
        """``(outgoing, incoming)`` relations of the entry among the entries of the
        commit read (:func:`wiki.knowledge.relations.links`); empty without an entry."""
        from wiki.knowledge.relations import links

        if self.entry is None:
            return [], []
        return links(self.snapshot.entries()[0], self.entry)

    def changed_sources(self) -> list[str]:
        """The uris of the entry's cited files changed since it was written (marks in the
        derived index, synced to the head first)."""
        from wiki.lint.marks import revalidation_marks

        if self.entry is None:
            return []
        changed = revalidation_marks(self.wiki, [self.entry.path]).get(self.entry.path, [])
        return [m["uri"] for m in changed]

    def open_proposals(self) -> list[str]:
        """The names of the open proposals that change the entry's file."""
        from wiki.review.proposals import list_proposals

        if self.entry is None:
            return []
        return [p.name for p in list_proposals(self.wiki) if self.entry.path in p.paths]


def get_entry(wiki: Wiki, target: str, *, as_stored: bool = False) -> EntryView:
    """The entry whose id or path (``.md`` optional) is ``target``, read from the wiki head.
    With ``as_stored``, any file on the branch is accepted: ``raw`` holds its bytes and
    ``entry`` is ``None`` when it is not a readable entry. Raises :class:`NotFoundError`
    when nothing matches (or an id is ambiguous), ``EntryError`` for a malformed entry
    (not ``as_stored``), ``NotInitializedError`` without a wiki branch."""
    snapshot = wiki.snapshot()  # one read: what is returned and the commit reported
    raw = raw_file(wiki, target, snapshot) if as_stored else None
    if raw is None:
        return EntryView(wiki, snapshot, find_entry(wiki, target, snapshot))
    try:
        entry = find_entry(wiki, target, snapshot)
    except WikiError:  # not an entry (index.md, wiki.toml) or a malformed one
        entry = None
    return EntryView(wiki, snapshot, entry, raw)
