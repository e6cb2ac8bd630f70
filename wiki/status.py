"""The state of a wiki at a glance: branch head, indexed commit, counts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from wiki.answering.embed_settings import current_spec
from wiki.review.proposals import list_proposals
from wiki.store.derived import COMMIT_KEY, INVALID_KEY, open_derived, sync
from wiki.store.derived_db import RECOVERED
from wiki.store.index_url import index_exists, index_location
from wiki.store.workspace import Wiki


@dataclass
class WikiStatus:
    """``healthy`` when the derived index is at the branch head, no entry is invalid and
    no id is used by two entries."""

    branch: str
    head: str
    indexed_commit: str | None
    entries: int
    by_status: dict[str, int] = field(default_factory=dict)
    invalid_entries: int = 0
    duplicate_ids: list[str] = field(default_factory=list)
    open_proposals: int = 0
    embedding_model: str | None = None
    vectors_on: bool = True
    chunks: int = 0
    embedded_chunks: int = 0
    sentences: int = 0
    embedded_sentences: int = 0
    database: str = ""

    @property
    def healthy(self) -> bool:
        return self.indexed_commit == self.head and self.invalid_entries == 0 and \
            not self.duplicate_ids

    def _vectors(self) -> str:
        if not self.vectors_on:
            return "off (WIKI_EMBED_MODEL=none): search and ask use the alias and BM25 legs"
        pending = self.chunks - self.embedded_chunks
        return (f"{self.embedded_chunks}/{self.chunks} chunks embedded "
                f"({self.embedding_model or 'no model yet'})"
                + (f", {pending} pending: run `wiki index`" if pending > 0 else "")
                + f"; {self.embedded_sentences}/{self.sentences} answer sentences "
                "(embedded when an answer reads them)")

    def rows(self) -> list[tuple[str, str]]:
        """``(label, value)`` pairs for display."""
        index_state = "up to date" if self.indexed_commit == self.head else (
            f"behind ({(self.indexed_commit or 'never built')[:12]}); run `wiki index`")
        statuses = ", ".join(f"{n} {s}" for s, n in sorted(self.by_status.items())) or "-"
        return [("branch", self.branch), ("head", self.head[:12]), ("index", index_state),
                ("entries", f"{self.entries} ({statuses})"),
                ("invalid entries", str(self.invalid_entries)),
                ("duplicate ids", ", ".join(self.duplicate_ids) or "none"),
                ("open proposals", str(self.open_proposals)),
                ("vectors", self._vectors()),
                ("database", self.database)]


def wiki_status(wiki: Wiki) -> WikiStatus:
    """Read the state without changing anything (the index is not synced, unless it was
    found damaged: then it is set aside and rebuilt, :mod:`wiki.store.derived_db`).
    Raises ``NotInitializedError`` when there is no wiki branch."""
    head = wiki.require_head()
    snapshot = wiki.snapshot(head)
    info = WikiStatus(wiki.branch, head, None, len(snapshot.entry_paths()),
                      open_proposals=len(list_proposals(wiki)),
                      database=index_location(wiki))
    if index_exists(wiki):
        opened = open_derived(wiki)
        if opened.state == RECOVERED:  # damaged and set aside: rebuilt, as the notice says
            sync(wiki, opened.index)
        with opened.index as index:
            info.indexed_commit = index.get_meta(COMMIT_KEY)
            info.invalid_entries = len(json.loads(index.get_meta(INVALID_KEY) or "{}"))
            info.by_status = index.docs.status_counts()
            # the vectors of the model this user searches with (an index keeps other
            # models' too); none counted with vectors off
            model = current_spec().model
            info.vectors_on = model is not None
            if model:
                info.embedding_model = model
                info.chunks, info.embedded_chunks = index.vectors.counts(model)
                info.sentences, info.embedded_sentences = index.vectors.sentence_counts(model)
            else:
                info.chunks = index.vectors.counts("")[0]
                info.sentences = index.vectors.sentence_counts("")[0]
            info.duplicate_ids = index.docs.duplicate_doc_ids()
    return info
