"""What a proposal changes, entry by entry and field by field, and its review hash.

The review hash is the full sha256 (64 hex digits) over the sorted ``(path, mode and
object before, mode and object after)`` of every tree entry the proposal changes
(:func:`wiki.review.proposals.review_hash`). ``wiki diff`` shows it; ``wiki approve --expect
HASH`` (the hash, or a prefix of at least 12 digits) refuses to land anything else, so
what was reviewed is exactly what lands. A symbolic link is shown as a link to its target
and a submodule as a gitlink, never as text; ``wiki.toml`` setting by setting
(:func:`wiki.review.settings.changes`) above its text diff. The flags are the review
check's (:mod:`wiki.review.check`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from wiki.config import CONFIG_PATH
from wiki.errors import ConfigError, EntryError
from wiki.review import overviews, settings
from wiki.review.check import tree_items
from wiki.review.proposals import get_proposal, review_hash
from wiki.store import indextree
from wiki.store.entry import Entry
from wiki.store.snapshot import Snapshot
from wiki.store.workspace import Wiki


@dataclass
class FieldChange:
    """One frontmatter field: its value before and after (``None`` when absent)."""

    field: str
    old: Any
    new: Any


@dataclass
class FileChange:
    """One changed file: ``kind`` is added, modified or deleted; for entries, ``entry_id``,
    ``title``, the changed ``fields`` and a unified diff of the body (``body_diff`` lines);
    ``lines_added`` / ``lines_removed`` count the whole file."""

    path: str
    kind: str
    entry_id: str = ""
    title: str = ""
    fields: list[FieldChange] = field(default_factory=list)
    body_diff: list[str] = field(default_factory=list)
    lines_added: int = 0
    lines_removed: int = 0
    note: str = ""


@dataclass
class ProposalDiff:
    """Every change of a proposal against its base, with the ``review_hash``."""

    proposal: str
    base: str
    tip: str
    subject: str
    review_hash: str
    changes: list[FileChange]
    flags: list = field(default_factory=list)
    """What the review check found (:class:`wiki.review.check.ReviewFlag`); ``wiki
    approve`` refuses the proposal unless they are overridden."""
    conflicts: list[str] = field(default_factory=list)
    """Entries the proposing ingest left alone because they were edited since it compiled
    them (``docs/a.md: hand-edited since compiled``): a decision for the reviewer."""


def proposal_diff(wiki: Wiki, name: str) -> ProposalDiff:
    """The per-file, per-field diff of proposal ``name``. Raises ``NotFoundError``."""
    proposal = get_proposal(wiki, name)
    base = Snapshot(wiki.store, proposal.base)
    tip = Snapshot(wiki.store, proposal.tip)
    changes = []
    for path in sorted(overviews.changed(wiki.store, base.files, tip.files)):
        old, new = base.files.get(path), tip.files.get(path)
        if SYMLINK in (old and old.mode, new and new.mode):
            changes.append(_link_change(path, old and old.mode, base.read(path),
                                        new and new.mode, tip.read(path)))
        else:
            changes.append(_file_change(path, base.read(path), tip.read(path)))
    before, after = tree_items(wiki, proposal.base), tree_items(wiki, proposal.tip)
    for path in sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)
                       and "commit" in (getattr(before.get(p), "type", ""),
                                        getattr(after.get(p), "type", ""))):
        old, new = before.get(path), after.get(path)
        kind = "added" if old is None else "deleted" if new is None else "modified"
        changes.append(FileChange(path, kind, note=(
            f"submodule (gitlink) {_object(old)} -> {_object(new)}: not a file")))
    return ProposalDiff(proposal.name, proposal.base, proposal.tip, proposal.subject,
                        review_hash(wiki, proposal), changes, proposal.flags,
                        proposal.conflicts)


SYMLINK = 0o120000


def _object(item) -> str:
    if item is None:
        return "(none)"
    return f"commit {item.sha[:12]}" if item.type == "commit" else f"blob {item.sha[:12]}"


def _link_change(path: str, old_mode: int | None, old: bytes | None, new_mode: int | None,
                 new: bytes | None) -> FileChange:
    """A change to or from a symbolic link: its target, never its bytes as text."""
    kind = "added" if old is None else "deleted" if new is None else "modified"

    def shown(mode: int | None, data: bytes | None) -> str:
        if data is None:
            return "(none)"
        if mode == SYMLINK:
            return f"symbolic link -> {data.decode('utf-8', 'replace')!r}"
        return f"file of {len(data)} bytes"

    return FileChange(path, kind, note=f"{shown(old_mode, old)} => {shown(new_mode, new)}")


def _file_change(path: str, old: bytes | None, new: bytes | None) -> FileChange:
    kind = "added" if old is None else "deleted" if new is None else "modified"
    old_text = (old or b"").decode("utf-8", "replace")
    new_text = (new or b"").decode("utf-8", "replace")
    change = FileChange(path, kind)
    whole = list(difflib.unified_diff(old_text.splitlines(), new_text.splitlines(), lineterm=""))
    change.lines_added = sum(1 for line in whole[2:] if line.startswith("+"))
    change.lines_removed = sum(1 for line in whole[2:] if line.startswith("-"))
    if not indextree.is_entry_path(path):
        change.body_diff = whole
        if path == CONFIG_PATH:
            _setting_changes(change, old_text if old is not None else None,
                             new_text if new is not None else None)
        return change
    old_entry, new_entry = _parse(path, old), _parse(path, new)
    if isinstance(old_entry, str) or isinstance(new_entry, str):
        change.note = next(e for e in (new_entry, old_entry) if isinstance(e, str))
        change.body_diff = whole
        return change
    shown = new_entry or old_entry
    change.entry_id, change.title = shown.id, shown.title
    old_meta = old_entry.meta if old_entry else {}
    new_meta = new_entry.meta if new_entry else {}
    for key in list(dict.fromkeys([*old_meta, *new_meta])):
        if old_meta.get(key) != new_meta.get(key):
            change.fields.append(FieldChange(key, old_meta.get(key), new_meta.get(key)))
    old_body = old_entry.body if old_entry else ""
    new_body = new_entry.body if new_entry else ""
    change.body_diff = list(difflib.unified_diff(
        old_body.splitlines(), new_body.splitlines(), "before", "after", lineterm=""))
    return change


def _setting_changes(change: FileChange, old: str | None, new: str | None) -> None:
    """A ``wiki.toml`` change setting by setting (``llm.model: '' -> 'x'``), its effective
    values (an absent key is its default); the text diff stays below."""
    try:
        found = settings.changes(old, new)
    except ConfigError as exc:
        change.note = f"invalid wiki.toml: {exc}"
        return
    change.fields = [FieldChange(name, was, now) for name, was, now in found]
    if new is None:
        change.note = "wiki.toml deleted: every setting returns to its default"


def _parse(path: str, data: bytes | None) -> Entry | str | None:
    if data is None:
        return None
    try:
        return Entry.parse(path, data)
    except EntryError as exc:
        return f"invalid entry: {exc}"
