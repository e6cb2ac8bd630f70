"""What ingest compiled: a hash kept on the branch, so a later ingest can tell an entry
edited since (by a person or another writer) from its own output.

The hash lives in the entry's ``compiled:`` frontmatter field, so it travels with the
branch to every teammate (the derived SQLite can be deleted) and survives edits made with
any tool; the field is ignored by everything but ingest.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from wiki.store.entry import Entry

COMPILED_FIELD = "compiled"
HAND_EDITED = "hand-edited since compiled"
_UNHASHED = ("compiled", "updated", "created", "facts")
"""Fields outside the hash: its own, the dates, and ``facts:``, which the plain compile
never writes (a fact is added to the entry that states it by `wiki facts set`, and a
re-ingest keeps it), so adding or changing one is not an edit of what ingest compiled."""
_UNHASHED_SOURCE = ("fingerprint", "checked_at", "blob", "etag", "last_modified")


def compiled_hash(entry: Entry) -> str:
    """``sha256:`` + 16 hex digits over what ``entry`` says: its frontmatter without
    ``compiled``, ``created``/``updated``, ``facts`` and its sources' validators
    (fingerprint, checked_at, blob, etag, last_modified), and its body. Unchanged by a
    re-read of an unchanged source and by a fact set on the entry; changed by any edit of
    the text, title, summary, tags, status..."""
    meta = {k: v for k, v in entry.meta.items() if k not in _UNHASHED}
    if isinstance(meta.get("sources"), list):
        meta["sources"] = [{k: v for k, v in s.items() if k not in _UNHASHED_SOURCE}
                           if isinstance(s, dict) else s for s in meta["sources"]]
    text = json.dumps([meta, entry.body], sort_keys=True, default=str, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def hand_edited(entry: Entry) -> bool:
    """Whether ``entry`` changed since ingest compiled it (its ``compiled`` hash no longer
    matches). Entries without the field (compiled before it existed, or not by ingest)
    are not known to be edited: false."""
    recorded = entry.meta.get(COMPILED_FIELD)
    return isinstance(recorded, str) and recorded != compiled_hash(entry)


def stamped(entry: Entry) -> Entry:
    """``entry`` with its ``compiled`` hash set to what it now says."""
    return entry.updated_with(**{COMPILED_FIELD: compiled_hash(entry)})


@dataclass
class Guard:
    """One ingest's ``base`` commit, whether it may ``overwrite`` hand-edited entries, and
    the paths it left alone (``conflicts``)."""

    base: str
    overwrite: bool
    conflicts: list[str] = field(default_factory=list)

    def keeps(self, entry: Entry) -> bool:
        """Whether ``entry`` is left alone (hand-edited and not ``overwrite``); records it."""
        if self.overwrite or not hand_edited(entry):
            return False
        if entry.path not in self.conflicts:
            self.conflicts.append(entry.path)
        return True
