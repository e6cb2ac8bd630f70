"""Proposing entries by hand (or by an agent): new, edit, retract, supersede.

Every function returns a :class:`Authored` result holding the proposal (or the existing
entry that already says the same thing) and any near-duplicates found, and never writes
to the wiki branch itself (DESIGN.md §7).

Near-duplicate: another active entry with the same folded title or alias, or whose body
is very similar (``difflib.SequenceMatcher`` ratio ≥ :data:`SIMILAR_TEXT`, compared only
against entries sharing a title word, to keep it cheap). Flagged in the proposal message
so the reviewer can merge instead.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass, field

from indexes.names import fold_name
from wiki.entry import Entry, now_iso
from wiki.errors import ConfigError, DuplicateIdError
from wiki.gitrepo import Identity
from wiki.lookup import find_entry
from wiki.proposals import Proposal, propose
from wiki.safety import screen_bytes
from wiki.slug import slug_path, slugify, unique_path
from wiki.snapshot import Snapshot
from wiki.workspace import Wiki

SIMILAR_TEXT = 0.9


@dataclass
class Authored:
    """``proposal`` (``None`` when nothing new was said: ``existing`` names the entry that
    already says it), whether the proposal was ``created`` now, and ``near_duplicates``
    (paths of entries that look like the same knowledge)."""

    proposal: Proposal | None
    created: bool = False
    existing: str | None = None
    near_duplicates: list[str] = field(default_factory=list)


def new_entry(wiki: Wiki, text: bytes, *, category: str = "", source_name: str = "entry.md",
              author: Identity | None = None, redact: bool = False) -> Authored:
    """Propose a new entry from markdown ``text`` (frontmatter needs ``title``; ``id`` is
    generated when absent). Raises ``EntryError`` for a malformed file,
    ``DuplicateIdError`` when the id is taken (use :func:`edit_entry`) and ``SecretError``
    for a secret in ``text`` (with ``redact``, it is replaced by ``[REDACTED:<kind>]``)."""
    snapshot = wiki.snapshot()
    text = _screened(text, source_name, redact)
    draft = Entry.parse(source_name, _with_id(text))
    for current in snapshot.entries()[0]:
        if current.id == draft.id:
            raise DuplicateIdError(f"{source_name}: id {draft.id!r} is already used by "
                                   f"{current.path}; to change it use --edit {draft.id}")
    same = _identical(snapshot, draft)
    if same is not None:
        return Authored(None, existing=same)
    taken = set(snapshot.files)
    path = unique_path(slug_path(category), slugify(draft.title), taken)
    stamp = now_iso()
    entry = Entry(path, draft.meta, draft.body, draft.original, None).updated_with(
        created=draft.meta.get("created") or stamp, updated=stamp)
    duplicates = near_duplicates(snapshot, entry)
    proposal, created = propose(wiki, {path: entry.to_bytes()}, kind="new",
                                subject=f"new entry: {entry.title}",
                                body=_duplicate_note(duplicates), author=author, redact=redact)
    return Authored(proposal, created, near_duplicates=duplicates)


def edit_entry(wiki: Wiki, target: str, text: bytes, *,
               author: Identity | None = None, redact: bool = False) -> Authored:
    """Propose ``text`` as the new content of entry ``target`` (id or path); its id must
    stay the same. Raises ``NotFoundError``, ``EntryError`` and ``SecretError`` (a secret
    not already in the entry; ``redact`` replaces secrets instead)."""
    snapshot = wiki.snapshot()
    current = find_entry(wiki, target)
    text = _screened(text, current.path, redact, before=current.to_bytes())
    draft = Entry.parse(current.path, text)
    if draft.id != current.id:
        raise ConfigError(f"{current.path}: an edit cannot change the id ({current.id} -> "
                          f"{draft.id}); propose a new entry that supersedes it instead")
    return _propose_edit(wiki, snapshot, current, draft, author, verb="edit", redact=redact)


def retract_entry(wiki: Wiki, target: str, reason: str, *,
                  author: Identity | None = None, redact: bool = False) -> Authored:
    """Propose marking entry ``target`` retracted (kept in history, hidden from answers).
    A secret in ``reason`` raises ``SecretError`` unless ``redact``."""
    if not reason.strip():
        raise ConfigError("a retraction needs a reason (--reason TEXT)")
    current = find_entry(wiki, target)
    if current.status == "retracted":
        return Authored(None, existing=current.path)
    changed = current.updated_with(status="retracted", updated=now_iso())
    proposal, created = propose(wiki, {current.path: changed.to_bytes()}, kind="retract",
                                subject=f"retract: {current.title}", body=reason,
                                author=author, redact=redact)
    return Authored(proposal, created)


def supersede_entry(wiki: Wiki, target: str, text: bytes, *,
                    author: Identity | None = None, redact: bool = False) -> Authored:
    """Propose a new entry that replaces ``target``: the new one records ``supersedes``,
    the old one becomes ``superseded`` with ``superseded_by`` (kept, hidden by default,
    found with ``--include-superseded`` or ``--as-of``). ``SecretError`` as for
    :func:`new_entry`."""
    snapshot = wiki.snapshot()
    old = find_entry(wiki, target)
    text = _screened(text, "new.md", redact)
    draft = Entry.parse("new.md", _with_id(text))
    if draft.id == old.id:
        raise ConfigError(f"the replacement needs its own id, not {old.id}")
    stamp = now_iso()
    path = unique_path(old.category, slugify(draft.title), set(snapshot.files))
    new = Entry(path, draft.meta, draft.body, draft.original, None).updated_with(
        supersedes=[old.id], created=stamp, updated=stamp)
    retired = old.updated_with(status="superseded", superseded_by=[draft.id], updated=stamp)
    proposal, created = propose(wiki, {path: new.to_bytes(), old.path: retired.to_bytes()},
                                kind="supersede", subject=f"supersede {old.title}",
                                author=author, redact=redact)
    return Authored(proposal, created)


def _propose_edit(wiki: Wiki, snapshot: Snapshot, current: Entry, draft: Entry,
                  author: Identity | None, *, verb: str, redact: bool = False) -> Authored:
    if draft.meta == current.meta and draft.body == current.body:
        return Authored(None, existing=current.path)
    changed = current.updated_with(body=draft.body, **{
        **{k: None for k in current.meta if k not in draft.meta},
        **draft.meta, "updated": now_iso()})
    proposal, created = propose(wiki, {current.path: changed.to_bytes()}, kind=verb,
                                subject=f"{verb}: {current.title}", author=author,
                                redact=redact)
    return Authored(proposal, created)


def near_duplicates(snapshot: Snapshot, entry: Entry) -> list[str]:
    """Paths of active entries that look like ``entry`` (see the module docstring)."""
    names = {fold_name(n) for n in (entry.title, *entry.aliases)} - {""}
    words = set(fold_name(entry.title).split())
    found = []
    for other in snapshot.entries()[0]:
        if other.status != "active" or other.id == entry.id:
            continue
        same_name = bool(names & {fold_name(n) for n in (other.title, *other.aliases)})
        similar = bool(words & set(fold_name(other.title).split())) and \
            difflib.SequenceMatcher(None, entry.body, other.body).ratio() >= SIMILAR_TEXT
        if same_name or similar:
            found.append(other.path)
    return found


def _identical(snapshot: Snapshot, draft: Entry) -> str | None:
    for other in snapshot.entries()[0]:
        if other.title == draft.title and other.body.strip() == draft.body.strip():
            return other.path
    return None


def _duplicate_note(paths: list[str]) -> str:
    if not paths:
        return ""
    return "Near-duplicate of: " + ", ".join(paths) + " (consider editing that entry instead)"


def _screened(text: bytes, name: str, redact: bool, before: bytes | None = None) -> bytes:
    """``text`` after the write-time secret check, so that a refusal names the caller's
    own file and line (the proposal checks again, and flags instruction-like content)."""
    return screen_bytes(text, name, redact_secrets=redact, before=before)[0]


def _with_id(text: bytes) -> bytes:
    """``text`` with a generated ``id:`` line when its frontmatter has none (text without
    frontmatter is returned as is, for the parser to report)."""
    if not text.startswith(b"---"):
        return text
    head, _, rest = text.partition(b"\n")
    if b"\nid:" in text.split(b"\n---", 1)[0]:
        return text
    return head + b"\nid: e" + uuid.uuid4().hex[:12].encode() + b"\n" + rest
