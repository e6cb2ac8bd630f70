"""The key of a change: what makes two proposals the same proposal (docs/architecture.md,
"Proposals and review").

A retried ``wiki propose`` (or MCP ``propose``) and two ``wiki ingest`` runs at once
compute the same change with fresh time stamps and, for new entries, freshly generated
ids. :func:`change_key` names the change without them, so :func:`wiki.review.proposals.propose`
returns the open proposal that already makes it instead of a second one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from wiki.errors import EntryError
from wiki.store import indextree
from wiki.store.entry import Entry
from wiki.store.snapshot import Snapshot

_VOLATILE = ("created", "updated")


def change_key(snapshot: Snapshot, changes: Mapping[str, bytes | None]) -> str:
    """16 hex digits naming the change ``changes`` makes to ``snapshot``: per path (index.md
    files left out) the blob before and the content after, where an entry's ``created``,
    ``updated`` and sources' ``checked_at`` are ignored and the ids of entries new at this
    path are replaced by placeholders (a retry generates new ones). Equal keys: the same
    change, whoever made it and whenever."""
    paths = sorted(p for p in changes if p.rpartition("/")[2] != indextree.INDEX_NAME)
    after: dict[str, object] = {}
    fresh: list[str] = []
    for path in paths:
        data = changes[path]
        if data is None or not indextree.is_entry_path(path):
            after[path] = None if data is None else hashlib.sha256(data).hexdigest()
            continue
        try:
            entry = Entry.parse(path, data)
        except EntryError:
            after[path] = hashlib.sha256(data).hexdigest()
            continue
        meta = {k: v for k, v in entry.meta.items() if k not in _VOLATILE}
        if isinstance(meta.get("sources"), list):
            meta["sources"] = [{k: v for k, v in s.items() if k != "checked_at"}
                               if isinstance(s, dict) else s for s in meta["sources"]]
        if path not in snapshot.files and entry.id:
            fresh.append(str(entry.id))
        after[path] = [meta, entry.body]
    text = json.dumps([[p, snapshot.files[p].sha if p in snapshot.files else "-", after[p]]
                       for p in paths], sort_keys=True, default=str, ensure_ascii=False)
    for number, entry_id in enumerate(fresh):
        text = text.replace(json.dumps(entry_id), f'"<new id {number}>"')
    return hashlib.sha256(text.encode()).hexdigest()[:16]
