"""Finding one entry by its id or its path on the wiki branch."""

from __future__ import annotations

from wiki.derived import open_synced
from wiki.entry import Entry
from wiki.errors import NotFoundError
from wiki.workspace import Wiki


def find_entry(wiki: Wiki, target: str) -> Entry:
    """The entry whose path (with or without ``.md``) or id is ``target``.

    Raises :class:`NotFoundError` when none matches or when an id is ambiguous, and
    ``EntryError`` when the file exists but is malformed.
    """
    snapshot = wiki.snapshot()
    for path in (target, target + ".md", target.strip("/")):
        if path in snapshot.files and path.endswith(".md"):
            return snapshot.entry(path)
    index, _ = open_synced(wiki)
    try:
        keys = index.keys_for_doc_id(target)
    finally:
        index.close()
    if not keys:
        raise NotFoundError(f"no entry with id or path {target!r} on branch '{wiki.branch}'")
    if len(keys) > 1:
        raise NotFoundError(f"id {target!r} is used by {len(keys)} entries: {', '.join(keys)}")
    return snapshot.entry(keys[0])
