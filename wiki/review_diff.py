"""What a proposal changes, entry by entry and field by field, and its review hash.

The review hash is sha256 over the sorted ``(path, blob before, blob after)`` triples of
the proposal's changes (generated ``index.md`` files excluded), shortened to 16 hex
digits. ``wiki diff`` shows it; ``wiki approve --expect HASH`` refuses to land anything
else, so what was reviewed is exactly what lands.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from wiki import indextree
from wiki.entry import Entry
from wiki.errors import EntryError
from wiki.proposals import changed_paths, get_proposal, review_hash
from wiki.snapshot import Snapshot
from wiki.workspace import Wiki


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
    """Instruction-like content flagged when it was proposed (``wiki.safety.Flag``)."""


def proposal_diff(wiki: Wiki, name: str) -> ProposalDiff:
    """The per-file, per-field diff of proposal ``name``. Raises ``NotFoundError``."""
    proposal = get_proposal(wiki, name)
    base = Snapshot(wiki.store, proposal.base)
    tip = Snapshot(wiki.store, proposal.tip)
    changes = [_file_change(path, base.read(path), tip.read(path))
               for path in sorted(changed_paths(base.files, tip.files))]
    return ProposalDiff(proposal.name, proposal.base, proposal.tip, proposal.subject,
                        review_hash(wiki, proposal), changes, proposal.flags)


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


def _parse(path: str, data: bytes | None) -> Entry | str | None:
    if data is None:
        return None
    try:
        return Entry.parse(path, data)
    except EntryError as exc:
        return f"invalid entry: {exc}"
