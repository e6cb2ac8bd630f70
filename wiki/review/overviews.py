"""The overview of a folder's ``index.md`` (the text above its generated listing) is
written by people, so landing a proposal onto a moved wiki, rebasing it and replaying a
sync carry it like an entry, and ``wiki diff`` shows it; the listing below the marker is
regenerated from the entries and never compared."""

from __future__ import annotations

from collections.abc import Mapping

from wiki.store import indextree
from wiki.store.branch import BranchStore, TreeFile


def is_index(path: str) -> bool:
    """Whether ``path`` is a folder's generated ``index.md``."""
    return path.rpartition("/")[2] == indextree.INDEX_NAME


def overview(store: BranchStore, path: str, item: TreeFile | None) -> str:
    """The overview of the ``index.md`` blob ``item`` at ``path``; a missing one has the
    default heading a new folder gets (``indextree.split_overview``)."""
    text = None if item is None else store.read(item.sha).decode("utf-8", "replace")
    return indextree.split_overview(text, indextree.parent(path))


def same(store: BranchStore, path: str, a: TreeFile | None, b: TreeFile | None) -> bool:
    """Whether two versions of ``path`` say the same thing: the same blob and mode, or, for
    an ``index.md``, the same overview."""
    return a == b or (is_index(path) and overview(store, path, a) == overview(store, path, b))


def changed(store: BranchStore, before: Mapping[str, TreeFile],
            after: Mapping[str, TreeFile]) -> set[str]:
    """Paths that changed between two trees (content or mode), counting an ``index.md``
    only when it is still there with another overview: what a merge must carry (a
    listing removed with its folder's last entry is regenerated, not carried)."""
    return {p for p in before.keys() | after.keys()
            if not same(store, p, before.get(p), after.get(p))
            and not (is_index(p) and after.get(p) is None)}


def with_marker(text: str) -> bytes:
    """An overview as ``index.md`` bytes that ``with_indexes`` reads back exactly."""
    return (text + indextree.MARKER).encode("utf-8")
