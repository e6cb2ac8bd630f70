"""Finding one entry by its id or its path on the wiki branch."""

from __future__ import annotations

import unicodedata

from wiki.errors import NotFoundError
from wiki.store.derived import open_synced
from wiki.store.entry import Entry
from wiki.store.indextree import INDEX_NAME
from wiki.store.snapshot import Snapshot
from wiki.store.workspace import Wiki


def _candidates(target: str) -> list[str]:
    target = unicodedata.normalize("NFC", target).strip("/")
    return [target, target + ".md"]


def raw_file(wiki: Wiki, target: str, snapshot: Snapshot | None = None) -> bytes | None:
    """The bytes of the file at path ``target`` (``.md`` optional, NFC) in ``snapshot``
    (default: the wiki head), or ``None`` when no such file exists."""
    snapshot = snapshot or wiki.snapshot()
    for path in _candidates(target):
        if path in snapshot.files:
            return snapshot.read(path)
    return None


def find_entry(wiki: Wiki, target: str, snapshot: Snapshot | None = None) -> Entry:
    """The entry whose path (with or without ``.md``) or id is ``target``, as it is in
    ``snapshot`` (default: the wiki head).

    Raises :class:`NotFoundError` when none matches or when an id is ambiguous, and
    ``EntryError`` when the file exists but is malformed.
    """
    snapshot = snapshot or wiki.snapshot()
    for path in _candidates(target):
        if path.rsplit("/", 1)[-1] == INDEX_NAME and path in snapshot.files:
            raise NotFoundError(_not_an_entry(wiki, path))
        if path in snapshot.files and path.endswith(".md"):
            return snapshot.entry(path)
    if snapshot.commit != wiki.head():  # the derived index follows the head only
        keys = [e.path for e in snapshot.entries()[0] if e.id == target]
    else:
        index = open_synced(wiki).index
        try:
            keys = index.keys_for_doc_id(target)
        finally:
            index.close()
    if not keys and target in snapshot.files:  # wiki.toml: on the branch, not an entry
        raise NotFoundError(_not_an_entry(wiki, target))
    if not keys:
        raise NotFoundError(f"no entry with id or path {target!r} on branch '{wiki.branch}'")
    if len(keys) > 1:
        raise NotFoundError(f"id {target!r} is used by {len(keys)} entries: {', '.join(keys)}")
    return snapshot.entry(keys[0])


def _not_an_entry(wiki: Wiki, path: str) -> str:
    """The message for a file of the branch that is not an entry (``wiki.toml``, a
    generated ``index.md``): where it can be read and how it changes."""
    return (f"{path!r} is a file of the wiki branch '{wiki.branch}', not an entry: `wiki show "
            f"{path}` prints it (without --json); it changes through a proposal branch "
            "(docs/guide.md#configuration), not `wiki propose`")
