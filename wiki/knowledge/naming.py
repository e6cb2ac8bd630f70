"""Where a new entry goes: its folder checked, its file named from its title, and a
different title that would take the same file said at propose time.

The file is ``<folder>/<slugify(title)>.md`` (:mod:`wiki.store.slug`). When that file is
already an entry of the wiki, or is added by an open proposal, with a title that folds the
same (case, accents, spacing: :func:`indexes.retrieval.names.fold_name`), this is the same title
again: the wiki's file gets the next free ``-2``, ``-3`` name (the near-duplicate is
flagged in the proposal), and an open proposal's file is kept, so proposing the same text
twice is still the same proposal. A *different* title there (``C`` and ``C++``, ``a/b``
and ``a b``) is a :class:`ConfigError`: two titles never share a file name silently.
"""

from __future__ import annotations

from indexes.retrieval.names import fold_name
from wiki.errors import ConfigError, EntryError, quoted
from wiki.store.entry import Entry
from wiki.store.slug import slug_path, slugify, unique_path
from wiki.store.snapshot import Snapshot
from wiki.store.treepaths import check_folder, folders_of
from wiki.store.workspace import Wiki


def new_entry_path(wiki: Wiki, snapshot: Snapshot, category: str, title: str) -> str:
    """The path of a new entry titled ``title`` in folder ``category`` (as the user gave
    it: slugged by :func:`slug_path`) on ``snapshot``. Raises :class:`ConfigError` for a
    folder that cannot hold it (:func:`wiki.store.treepaths.check_folder`) and for a
    different title already at, or proposed at, the file its title names."""
    folder = slug_path(category)
    check_folder(folder, snapshot.files, shown=category)
    stem = slugify(title)
    wanted = f"{folder}/{stem}.md" if folder else f"{stem}.md"
    here = next((p for p in snapshot.files if p.casefold() == wanted.casefold()), None)
    if here is not None:
        _same_title(title, here, _title_of(here, snapshot.read(here)), "the entry")
    else:
        for name, tip in wiki.store.list_refs(wiki.proposal_prefix).items():
            data = wiki.store.read_path(tip, wanted)
            if data is not None:
                _same_title(title, wanted, _title_of(wanted, data),
                            f"open proposal {name.removeprefix(wiki.proposal_prefix)!r}, "
                            "which adds")
                return wanted  # the same title again: the same file (and proposal)
    taken = set(snapshot.files) | folders_of(snapshot.files)
    return unique_path(folder, stem, taken)


def _title_of(path: str, data: bytes | None) -> str | None:
    try:
        return Entry.parse(path, data or b"").title
    except EntryError:
        return None


def _same_title(title: str, path: str, other: str | None, where: str) -> None:
    """Return when ``other`` (the title held at ``path``) folds like ``title``; else raise
    the :class:`ConfigError` that names both."""
    if other is not None and fold_name(other) == fold_name(title):
        return
    held = f"titled {quoted(other)}" if other is not None else "(not a readable entry)"
    raise ConfigError(f"title {quoted(title)} names the file {quoted(path)}, which is taken "
                      f"by {where} {path} {held}; give the entry a title that differs in "
                      "letters or digits, not only in symbols or spacing")
