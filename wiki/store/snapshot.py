"""A read-only view of the wiki branch at one commit, and writing the next commit."""

from __future__ import annotations

from collections.abc import Mapping

from wiki.config import CONFIG_PATH, WikiConfig, parsed_config
from wiki.errors import EntryError
from wiki.store import indextree
from wiki.store.branch import BranchStore, TreeFile
from wiki.store.entry import Entry
from wiki.store.gitrepo import Identity


class Snapshot:
    """The files of the wiki at ``commit`` (``None``: an empty wiki), read lazily."""

    def __init__(self, store: BranchStore, commit: str | None):
        self.store = store
        self.commit = commit
        self.files: dict[str, TreeFile] = store.files(commit)
        self._bytes: dict[str, bytes] = {}

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path`` or ``None`` when absent."""
        item = self.files.get(path)
        if item is None:
            return None
        if path not in self._bytes:
            self._bytes[path] = self.store.read(item.sha)
        return self._bytes[path]

    def entry_paths(self) -> list[str]:
        """Paths of all entry files, sorted."""
        return sorted(p for p in self.files if indextree.is_entry_path(p))

    def entry(self, path: str) -> Entry:
        """The parsed entry at ``path``; raises :class:`EntryError` if malformed and
        ``KeyError`` if absent."""
        data = self.read(path)
        if data is None:
            raise KeyError(path)
        return Entry.parse(path, data)

    def entries(self) -> tuple[list[Entry], list[EntryError]]:
        """Every valid entry, and the errors of the invalid ones (their bytes are read in
        one batch)."""
        good, bad = [], []
        paths = self.entry_paths()
        wanted = [self.files[p].sha for p in paths if p not in self._bytes]
        if len(wanted) > 1:
            data = self.store.read_many(wanted)
            self._bytes.update({p: data[self.files[p].sha] for p in paths
                                if self.files[p].sha in data})
        for path in paths:
            try:
                good.append(self.entry(path))
            except EntryError as exc:
                bad.append(exc)
        return good, bad

    def config(self) -> WikiConfig:
        """Settings from ``wiki.toml`` (defaults when the file is absent)."""
        data = self.read(CONFIG_PATH)
        return parsed_config(data.decode("utf-8")) if data is not None else WikiConfig()


def with_indexes(snapshot: Snapshot,
                 changes: Mapping[str, bytes | None]) -> dict[str, bytes | None]:
    """``changes`` plus the regenerated ``index.md`` of every folder above a changed entry,
    so the listing is always part of the same commit as the change. An ``index.md`` in
    ``changes`` contributes only its overview (the text above the marker)."""
    overviews = {p: d for p, d in changes.items() if p.rpartition("/")[2] == indextree.INDEX_NAME}
    changes = {p: d for p, d in changes.items() if p not in overviews}
    paths = set(snapshot.entry_paths())
    for path, data in changes.items():
        if indextree.is_entry_path(path):
            (paths.discard if data is None else paths.add)(path)
    folders = {f for p in changes if indextree.is_entry_path(p) for f in indextree.ancestors(p)}
    folders |= {indextree.parent(p) for p in overviews}
    if snapshot.commit is None:
        folders.add("")

    def listing(path: str) -> indextree.Listing:
        data = changes[path] if path in changes else snapshot.read(path)
        try:
            entry = Entry.parse(path, data or b"")
            return indextree.Listing(entry.title, entry.summary)
        except EntryError:
            return indextree.Listing(path.rpartition("/")[2].removesuffix(".md"), "")

    def existing(path: str) -> str | None:
        data = overviews[path] if path in overviews else snapshot.read(path)
        return data.decode("utf-8", "replace") if data is not None else None

    return {**changes, **indextree.regenerate(paths, folders, listing, existing)}


def write_commit(snapshot: Snapshot, changes: Mapping[str, bytes | None], message: str, *,
                 author: Identity, committer: Identity | None = None,
                 parents: list[str] | None = None) -> str:
    """Create (but do not publish) the commit of ``snapshot`` + ``changes`` + regenerated
    indexes. ``parents`` defaults to the snapshot's commit. Returns the commit sha."""
    full = with_indexes(snapshot, changes)
    tree = snapshot.store.write_tree(snapshot.files, full)
    if parents is None:
        parents = [snapshot.commit] if snapshot.commit else []
    return snapshot.store.commit(tree, parents, message, author=author, committer=committer)

