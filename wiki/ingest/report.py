"""The values an ingest run reports and hands to a distiller (:mod:`wiki.ingest.pipeline`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from wiki.review.proposals import Proposal

Progress = Callable[[int, int, str], None]
"""Called as ``progress(done, total, path)`` after each source."""
Distiller = Callable[["SourceText", set[str], set[str]], "tuple | None"]
"""Called as ``distiller(source, taken paths, taken ids)`` for each new or changed source
(``wiki ingest --distill``, :class:`wiki.knowledge.distill.Distiller`); returns ``(changes, added,
updated, retracted)`` like the plain path, or ``None`` to compile the source without it."""


@dataclass
class Skipped:
    """A source that was not ingested and why (one line, names the file)."""

    path: str
    reason: str


@dataclass
class IngestReport:
    """What one ingest did, with counts of entries and sources."""

    sources: int = 0
    unchanged_sources: int = 0
    added: int = 0
    updated: int = 0
    retracted: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    proposal: Proposal | None = None
    proposal_created: bool = False
    renamed: dict[str, str] = field(default_factory=dict)
    """``new uri -> old uri`` of sources found renamed; their entries kept their ids."""
    conflicts: list[str] = field(default_factory=list)  # hand-edited entries left alone

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.retracted


@dataclass(frozen=True)
class SourceText:
    """A screened source for a distiller: ``uri``, ``fingerprint``, the name ``shown`` in
    messages, ``title``, markdown ``body`` (no frontmatter), the wiki ``category`` its
    entries go to, the git ``blob`` id of a ``git:`` source and the wiki commit the ingest
    read (``base``: place drafts against it, the proposal is built on it)."""

    uri: str
    fingerprint: str
    shown: str
    title: str
    body: str
    category: str
    blob: str = ""
    base: str = ""
