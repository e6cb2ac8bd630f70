"""Review-check flags about the proposal's tree as a whole (:mod:`wiki.review.check`):
``index.md`` files whose listing is not the generated one, entries deleted or retracted
while a live entry still depends on them, and objects git's own fsck refuses."""

from __future__ import annotations

from collections.abc import Mapping

from wiki.errors import (
    DuplicateIdError,
    EntryError,
    ReviewFlaggedError,
    StaleProposalError,
    TreePathError,
)
from wiki.review.check import (
    BREAKS,
    INVALID_TREE,
    SCHEMA,
    ReviewFlag,
    TreeItem,
    blob_text,
    content_flags,
)
from wiki.store import indextree
from wiki.store.branch import TreeFile
from wiki.store.entry import Entry, named_ids, resolve_link
from wiki.store.markdown_blocks import links
from wiki.store.workspace import Wiki

_RETRACTION_BREAKS = ("relations.depends_on", "supersedes")
"""Fields through which retracting an entry breaks another (deleting breaks every field)."""


def index_flags(wiki: Wiki, base: str, tip: str, before: dict[str, TreeItem],
                 after: dict[str, TreeItem], changed: list[str],
                 blobs: dict[str, bytes]) -> list[ReviewFlag]:
    """A changed ``index.md``: its overview (free text) is screened like an entry; its
    listing must be the one the tip's entries generate (the entries are screened)."""
    from wiki.store.snapshot import Snapshot, with_indexes

    indexes = [p for p in changed if p.rpartition("/")[2] == indextree.INDEX_NAME
               and p in after and after[p].type == "blob" and after[p].sha in blobs]
    if not indexes:
        return []
    flags: list[ReviewFlag] = []
    snapshot = Snapshot(wiki.store, base)
    tip_snapshot = Snapshot(wiki.store, tip)
    changes = {p: tip_snapshot.read(p) for p in changed
               if indextree.is_entry_path(p) or p in indexes}
    expected = with_indexes(snapshot, changes)
    for path in indexes:
        folder = indextree.parent(path)
        text = blob_text(blobs[after[path].sha]) or ""
        old = before.get(path)
        old_text = blob_text(wiki.store.read(old.sha)) if old and old.type == "blob" else None
        want = expected.get(path)
        # all of it is screened (what is below the marker lands too when the drift is
        # overridden) against what the generator would have written without this
        # proposal's overview: the base's text, a new folder's heading and the listing
        # (whose titles and summaries were screened in their entries). ``want`` carries
        # the proposer's overview above its marker, so it is never the reference whole.
        generated = "\0".join((old_text or "", indextree.split_overview(None, folder),
                               indextree.listing_part(want)))
        flags += content_flags(text, path, generated)
        if want != blobs[after[path].sha]:
            flags.append(ReviewFlag("R004", "index-drift", path, 0, 0, SCHEMA,
                                    "its listing is not the one its entries generate"
                                    if want is not None else
                                    "an index.md of a folder that has no entries"))
    return flags


def dependency_flags(wiki: Wiki, tip: str, before: dict[str, TreeItem],
                      after: dict[str, TreeItem], changed: list[str],
                      blobs: dict[str, bytes]) -> list[ReviewFlag]:
    """Entries this proposal deletes or retracts that a live entry of the tip still names
    (by id in ``relations``/``supersedes``, or, for a deleted file, by a relative markdown
    link in its body)."""
    from wiki.store.snapshot import Snapshot

    def entry(item: TreeItem | None, path: str) -> Entry | None:
        if item is None or item.type != "blob" or item.sha not in blobs:
            return None
        try:
            return Entry.parse(path, blobs[item.sha])
        except EntryError:
            return None

    old_entries = {p: entry(before.get(p), p) for p in changed
                   if p in before and indextree.is_entry_path(p)}
    deleted = {p for p in changed if p in before and p not in after and p.endswith(".md")}
    if not any(old_entries.values()) and not deleted:  # only additions: nothing can break
        return []
    new_entries = {p: entry(after.get(p), p) for p in old_entries}
    kept_ids = {e.id for e in new_entries.values() if e is not None}
    if any(e is not None and e.id not in kept_ids for e in old_entries.values()):
        kept_ids |= {e.id for p in changed if p not in before and indextree.is_entry_path(p)
                     for e in [entry(after.get(p), p)] if e is not None}  # renamed, same id
    gone: dict[str, tuple[str, str]] = {}  # id -> (path, what happened)
    for path, old in old_entries.items():
        if old is None or old.status == "retracted":
            continue
        new = new_entries.get(path)
        if old.id not in kept_ids:
            gone[old.id] = (path, "deletes")
        elif new is not None and new.id == old.id and new.status == "retracted":
            gone[old.id] = (path, "retracts")
    if not gone and not deleted:
        return []
    entries, _ = Snapshot(wiki.store, tip).entries()
    flags = []
    for other in entries:
        if other.status == "retracted" or other.id in gone:
            continue
        for target in dict.fromkeys(links(other.body) if deleted else ()):
            if resolve_link(other.path, target) in deleted:
                flags.append(ReviewFlag(
                    "R005", "breaks-dependency", resolve_link(other.path, target), 0, 0,
                    BREAKS, f"this proposal deletes {resolve_link(other.path, target)}, but "
                    f"{other.path} ({other.id}) still links to it ({target!r})"))
        for field, target in named_ids(other):
            if target not in gone:
                continue
            path, how = gone[target]
            if how == "retracts" and field not in _RETRACTION_BREAKS:
                continue
            flags.append(ReviewFlag("R005", "breaks-dependency", path, 0, 0, BREAKS,
                                    f"this proposal {how} {target}, but {other.path} "
                                    f"({other.id}) still names it in {field}"))
    return flags


def check_ids(wiki: Wiki, name: str, tip_files: Mapping[str, TreeFile], ours: set[str]) -> None:
    """Refuse to land proposal ``name`` when an entry among the changed paths ``ours`` of its
    tip (``tip_files``: path -> TreeFile) takes an id another entry already uses (ids are
    identities, never reused). Raises :class:`DuplicateIdError`."""
    from wiki.store.derived import open_synced

    ids: dict[str, str] = {}
    for path in sorted(p for p in ours if p in tip_files and indextree.is_entry_path(p)):
        try:
            entry_id = Entry.parse(path, wiki.store.read(tip_files[path].sha)).id
        except EntryError:
            continue  # malformed entries are lint's business, not an identity clash
        if entry_id in ids:
            raise DuplicateIdError(f"proposal {name} gives id {entry_id!r} to both "
                                   f"{ids[entry_id]} and {path}")
        ids[entry_id] = path
    index = open_synced(wiki).index
    try:
        for entry_id, path in ids.items():
            others = [k for k in index.keys_for_doc_id(entry_id) if k not in ours]
            if others:
                raise DuplicateIdError(f"proposal {name}: {path} reuses id "
                                       f"{entry_id!r} of {others[0]}; ids are never reused")
    finally:
        index.close()


def invalid_objects(wiki: Wiki, include: list[str], exclude: list[str]) -> list[ReviewFlag]:
    """``R010`` flags (``invalid-tree``) for the objects reachable from ``include`` and not
    from ``exclude`` that git's fsck refuses (:func:`wiki.store.fsck.object_problems`; git
    stops at the first). The flag's path is the object id, its kind git's message id."""
    from wiki.store.fsck import object_problems

    return [ReviewFlag("R010", message_id, sha, 0, 0, INVALID_TREE,
                       f"git fsck: {text} (a remote that checks objects refuses it)")
            for sha, message_id, text in object_problems(str(wiki.repo.git_dir), include,
                                                         exclude)]


def merged_tree(wiki: Wiki, name: str, snapshot, changes: Mapping[str, bytes | None]) -> str:
    """The tree of proposal ``name``'s ``changes`` on a wiki head that moved since its base
    (``snapshot``), ``index.md`` files regenerated. Raises :class:`StaleProposalError` when
    the merge would make a path both a file and a folder (a tree git refuses), or give a
    new path of the proposal the name of another (of it or of a folder above it) on a
    case-insensitive file system: the review checked the twins of the base, not of the
    head it lands on."""
    from wiki.review.names import command_line
    from wiki.store.snapshot import with_indexes
    from wiki.store.treepaths import case_twins

    new = [p for p, data in changes.items() if data is not None and p not in snapshot.files]
    twins = case_twins(new, {*snapshot.files, *new})
    why = (f"{twins[0][0]!r} would have the same name as {twins[0][1]!r} on a "
           "case-insensitive file system") if twins else None
    if why is None:
        try:
            return wiki.store.write_tree(snapshot.files, with_indexes(snapshot, changes))
        except TreePathError as exc:
            why = str(exc)
    raise StaleProposalError(f"proposal {name} cannot land on the wiki as it is now: {why}; "
                             f"it is kept — try `{command_line('rebase', name)}`")


def check_landing(wiki: Wiki, name: str, commit: str, head: str) -> None:
    """Refuse the landing ``commit`` of proposal ``name`` on ``head`` when git's fsck refuses
    an object a push of it would send (:func:`invalid_objects`): :class:`ReviewFlaggedError`
    carrying the ``R010`` flags."""
    refused = invalid_objects(wiki, [commit], [head])
    if refused:
        raise ReviewFlaggedError(f"proposal {name} would land an object git refuses "
                                 f"({refused[0].path[:12]}: {refused[0].detail}); nothing "
                                 "was landed", refused)
