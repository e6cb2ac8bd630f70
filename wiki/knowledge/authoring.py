"""Proposing entries by hand (or by an agent): new, edit, retract, supersede.

Every function returns a :class:`Authored` result holding the proposal (or the existing
entry that already says the same thing) and any near-duplicates found, and never writes
to the wiki branch itself (docs/architecture.md, "Proposals and review").

Near-duplicate: another active entry with the same folded title or alias, or whose body
is very similar (``difflib.SequenceMatcher`` ratio ≥ :data:`SIMILAR_TEXT`, compared only
against entries sharing a title word, to keep it cheap). Flagged in the proposal message
so the reviewer can merge instead.
"""

from __future__ import annotations

import difflib
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from indexes.retrieval.names import fold_name
from wiki.errors import ConfigError, DuplicateIdError, EntryError, UsageError
from wiki.knowledge.naming import new_entry_path
from wiki.review.proposals import Proposal, propose
from wiki.safety.scan import screen_bytes
from wiki.store.entry import Entry, now_iso
from wiki.store.frontmatter import render
from wiki.store.gitrepo import Identity
from wiki.store.lookup import find_entry
from wiki.store.slug import slugify, unique_path
from wiki.store.snapshot import Snapshot
from wiki.store.workspace import Wiki

if TYPE_CHECKING:
    from wiki.review.basis import Inferred

SIMILAR_TEXT = 0.9
KINDS = ("new", "edit", "retract", "supersede")
"""The changes :func:`propose_change` proposes."""
NEEDS = {"new": ("content",), "edit": ("target", "content"),
         "retract": ("target", "reason"), "supersede": ("target", "content")}
"""What each kind of change needs besides its kind (a non-blank value)."""
_NOUNS = {"new": "a new entry", "edit": "an edit", "retract": "a retraction",
          "supersede": "a supersession"}
_NEEDED = {"content": "the entry's text (a FILE, or content)",
           "target": "the entry it changes (an id or path)",
           "reason": "a reason (--reason TEXT)"}


@dataclass
class Authored:
    """``proposal`` (``None`` when nothing new was said: ``existing`` names the entry that
    already says it), whether the proposal was ``created`` now, ``near_duplicates``
    (paths of entries that look like the same knowledge) and ``titled_from``."""

    proposal: Proposal | None
    created: bool = False
    existing: str | None = None
    near_duplicates: list[str] = field(default_factory=list)
    titled_from: str | None = None
    """A new entry proposed from plain markdown: the title taken from its first heading."""


@dataclass(frozen=True)
class ProposeRequest:
    """One change as asked (``wiki propose``, MCP/REST ``propose``), a value.

    ``kind``: one of :data:`KINDS`; ``content``: the entry as markdown bytes (new, edit,
    supersede); ``target``: the entry id or path changed (edit, retract, supersede);
    ``reason``: why (retract); ``category``: the folder of a new entry; ``redact``:
    secrets replaced by ``[REDACTED:<kind>]`` instead of refused; ``base``: the wiki commit
    the content was written against (``None``: the head, or for an edit the commit
    :func:`wiki.review.basis.infer_base` finds); ``source_name``: what errors about
    ``content`` call it (a file name, ``-`` for stdin, ``content`` for a tool call);
    ``author``: who proposes (``None``: whoever git says is acting)."""

    kind: Literal["new", "edit", "retract", "supersede"]
    content: bytes | None = None
    target: str | None = None
    reason: str = ""
    category: str = ""
    redact: bool = False
    base: str | None = None
    source_name: str | None = None
    author: Identity | None = None


@dataclass(frozen=True)
class ProposedChange:
    """What :func:`propose_change` did: ``authored`` (the proposal, or the entry that
    already says it) and, for an edit whose base was inferred, ``inferred``
    (:class:`wiki.review.basis.Inferred`: ``current`` false when the text matches an
    older revision, so the proposal is behind); ``None`` otherwise."""

    authored: Authored
    inferred: Inferred | None = None


def check_request(request: ProposeRequest) -> None:
    """Raise :class:`UsageError` when ``request`` is not a change: an unknown kind, or a
    field its kind needs (:data:`NEEDS`) missing or blank."""
    if request.kind not in NEEDS:
        raise UsageError(f"propose takes a kind of {', '.join(KINDS)}; got {request.kind!r}")
    given = {"content": (request.content or b"").decode("utf-8", "replace"),
             "target": request.target or "", "reason": request.reason}
    missing = [_NEEDED[name] for name in NEEDS[request.kind] if not given[name].strip()]
    if missing:
        raise UsageError(f"{_NOUNS[request.kind]} needs {' and '.join(missing)}")


def propose_change(wiki: Wiki, request: ProposeRequest) -> ProposedChange:
    """The ``propose`` use case: check ``request`` (:func:`check_request`, a
    :class:`UsageError`), then propose it as a new entry (:func:`new_entry`), an edit
    (:func:`edit_entry`, its base inferred from the entry's history when not given), a
    retraction (:func:`retract_entry`) or a supersession (:func:`supersede_entry`).
    Raises what those raise (``EntryError``, ``NotFoundError``, ``SecretError``,
    ``DuplicateIdError``, ``ConfigError``). The CLI, MCP and the REST route call this and
    only this."""
    check_request(request)
    text = request.content or b""
    common = {"author": request.author, "redact": request.redact}
    named = {} if request.source_name is None else {"source_name": request.source_name}
    if request.kind == "new":
        return ProposedChange(new_entry(wiki, text, category=request.category,
                                        base=request.base, **named, **common))
    if request.kind == "retract":
        return ProposedChange(retract_entry(wiki, request.target, request.reason,
                                            base=request.base, **common))
    if request.kind == "supersede":
        return ProposedChange(supersede_entry(wiki, request.target, text, base=request.base,
                                              **named, **common))
    inferred = None
    base = request.base
    if base is None:
        from wiki.review.basis import infer_base

        inferred = infer_base(wiki, request.target, text)
        base = inferred.commit
    return ProposedChange(edit_entry(wiki, request.target, text, base=base, **named,
                                     **common), inferred)


def new_entry(wiki: Wiki, text: bytes, *, category: str = "", source_name: str = "entry.md",
              author: Identity | None = None, redact: bool = False,
              base: str | None = None) -> Authored:
    """Propose a new entry from markdown ``text`` (frontmatter needs ``title``; ``id`` is
    generated when absent; plain markdown without frontmatter takes its title from its
    first ``# `` heading, reported in ``titled_from``). Raises ``EntryError`` for a malformed file,
    ``DuplicateIdError`` when the id is taken (use :func:`edit_entry`), ``SecretError``
    for a secret in ``text`` (with ``redact``, it is replaced by ``[REDACTED:<kind>]``) and
    ``ConfigError`` for a ``category`` that cannot be a folder or a title whose file name
    another title has (:func:`wiki.knowledge.naming.new_entry_path`).

    ``base`` (every function here takes it) is the wiki commit the text was written
    against (default: the head, read now); the proposal is built on it (docs/review.md)."""
    snapshot = read_base(wiki, base)
    text = _screened(text, source_name, redact)
    titled_from = None
    try:
        draft = _draft(source_name, text)
    except EntryError as exc:
        if not exc.reason.startswith("no frontmatter"):
            raise
        titled_from, text = _titled(source_name, text, exc.line)
        draft = _draft(source_name, text)
    for current in snapshot.entries()[0]:
        if current.id == draft.id:
            raise DuplicateIdError(f"{source_name}: id {draft.id!r} is already used by "
                                   f"{current.path}; to change it use --edit {draft.id}")
    same = _identical(snapshot, draft)
    if same is not None:
        return Authored(None, existing=same)
    holder = _fact_holder(snapshot, draft)
    if holder is not None:  # a new value for a held fact key supersedes its holder
        return supersede_entry(wiki, holder, text, author=author, base=snapshot.commit)
    path = new_entry_path(wiki, snapshot, category, draft.title)
    stamp = now_iso()
    entry = Entry(path, draft.meta, draft.body, draft.original, None).updated_with(
        created=draft.meta.get("created") or stamp, updated=stamp)
    duplicates = near_duplicates(snapshot, entry)
    opened = propose(wiki, {path: entry.to_bytes()}, base=snapshot.commit,
                     kind="new",
                     subject=f"new entry: {entry.title}",
                     body=_duplicate_note(duplicates), author=author, redact=redact)
    proposal, created = opened.proposal, opened.created
    return Authored(proposal, created, near_duplicates=duplicates, titled_from=titled_from)


def _titled(source_name: str, text: bytes, line: int | None) -> tuple[str, bytes]:
    """Plain markdown (no frontmatter) as an entry: ``(title, text with frontmatter)``,
    the title being the first ``# `` heading outside code; the text is kept as written
    below the frontmatter. Raises :class:`EntryError` when there is no such heading."""
    from wiki.store.markdown_text import first_heading

    body = text.decode("utf-8", "replace")
    heading = first_heading(body)
    if not heading or not heading.strip():
        raise EntryError(source_name, "no frontmatter and no '# ' heading to take the title "
                         "from: start the file with a '# Title' line, or with frontmatter "
                         "('---', 'title: ...', '---'; docs/entry-format.md)", line=line)
    title = " ".join(heading.split())
    return title, render({"title": title}, body).encode("utf-8")


def edit_entry(wiki: Wiki, target: str, text: bytes, *,
               author: Identity | None = None, redact: bool = False,
               base: str | None = None, source_name: str | None = None) -> Authored:
    """Propose ``text`` as the new content of entry ``target`` (id or path); its id must
    stay the same. Raises ``NotFoundError``, ``EntryError`` and ``SecretError`` (a secret
    not already in the entry; ``redact`` replaces secrets instead). With ``base`` older
    than the head, the edit is of the entry as it was there: a proposal that is behind,
    landing only if nobody changed the entry since (:func:`wiki.review.basis.infer_base` finds
    the base of a file exported earlier). ``source_name``: the file ``text`` came from,
    named by an ``EntryError`` about it (default: the entry's path). A changed value of
    one of the entry's own ``facts:`` is an edit like any other (the fact lives in the
    entry that states it); ``ConfigError`` when another entry holds one of its keys with
    another value."""
    snapshot = read_base(wiki, base)
    current = find_entry(wiki, target, snapshot)
    text = _screened(text, current.path, redact, before=current.to_bytes())
    try:
        draft = Entry.parse(current.path, text)
    except EntryError as exc:
        if source_name is None:
            raise
        raise EntryError(source_name, f"{exc.reason} (the new text of {current.path}: an "
                         "edit gives the whole entry, frontmatter included)",
                         field=exc.field, line=exc.line) from None
    if draft.id != current.id:
        raise ConfigError(f"{current.path}: an edit cannot change the id ({current.id} -> "
                          f"{draft.id}); propose a new entry that supersedes it instead")
    other = _fact_holder(snapshot, draft)
    if other is not None:
        raise ConfigError(f"{current.path}: entry {other} holds a fact of this edit with "
                          f"another value; use `wiki facts set` or --supersede {other}")
    return _propose_edit(wiki, snapshot, current, draft, author, verb="edit", redact=redact)


def retract_entry(wiki: Wiki, target: str, reason: str, *,
                  author: Identity | None = None, redact: bool = False,
                  base: str | None = None) -> Authored:
    """Propose marking entry ``target`` retracted (kept in history, hidden from answers).
    A secret in ``reason`` raises ``SecretError`` unless ``redact``."""
    check_request(ProposeRequest("retract", target=target, reason=reason))
    snapshot = read_base(wiki, base)
    current = find_entry(wiki, target, snapshot)
    if current.status == "retracted":
        return Authored(None, existing=current.path)
    changed = current.updated_with(status="retracted", updated=now_iso())
    opened = propose(wiki, {current.path: changed.to_bytes()},
                     base=snapshot.commit, kind="retract",
                     subject=f"retract: {current.title}", body=reason,
                     author=author, redact=redact)
    proposal, created = opened.proposal, opened.created
    return Authored(proposal, created)


def supersede_entry(wiki: Wiki, target: str, text: bytes, *,
                    author: Identity | None = None, redact: bool = False,
                    base: str | None = None, source_name: str = "new.md") -> Authored:
    """Propose a new entry that replaces ``target``: the new one records ``supersedes``,
    the old one becomes ``superseded`` with ``superseded_by`` (kept, hidden by default,
    found with ``--include-superseded`` or ``--as-of``). ``SecretError`` as for
    :func:`new_entry`; ``EntryError`` naming ``source_name`` (the file ``text`` came
    from) for a malformed one."""
    snapshot = read_base(wiki, base)
    old = find_entry(wiki, target, snapshot)
    text = _screened(text, source_name, redact)
    draft = _draft(source_name, text)
    if draft.id == old.id:
        raise ConfigError(f"the replacement needs its own id, not {old.id}")
    new, retired = supersession(old, draft, set(snapshot.files), now_iso())
    opened = propose(wiki, {new.path: new.to_bytes(), old.path: retired.to_bytes()},
                     base=snapshot.commit, kind="supersede",
                     subject=f"supersede {old.title}", author=author, redact=redact)
    proposal, created = opened.proposal, opened.created
    return Authored(proposal, created)


def supersession(old: Entry, draft: Entry, taken: set[str], stamp: str) -> tuple[Entry, Entry]:
    """``(successor, retired)``: ``draft`` (with its own id) as a new entry in ``old``'s
    folder at a path not in ``taken`` (added to it), recording ``supersedes``; ``old`` marked
    ``superseded`` with ``superseded_by``. Both stamped ``updated`` at ``stamp``."""
    path = unique_path(old.category, slugify(draft.title), taken)
    taken.add(path)
    new = Entry(path, draft.meta, draft.body, draft.original, None).updated_with(
        supersedes=[old.id], created=stamp, updated=stamp)
    retired = old.updated_with(status="superseded", superseded_by=[draft.id], updated=stamp)
    return new, retired


def _propose_edit(wiki: Wiki, snapshot: Snapshot, current: Entry, draft: Entry,
                  author: Identity | None, *, verb: str, redact: bool = False) -> Authored:
    if draft.meta == current.meta and draft.body == current.body:
        return Authored(None, existing=current.path)
    changed = current.updated_with(body=draft.body, **{
        **{k: None for k in current.meta if k not in draft.meta},
        **draft.meta, "updated": now_iso()})
    opened = propose(wiki, {current.path: changed.to_bytes()},
                     base=snapshot.commit, kind=verb,
                     subject=f"{verb}: {current.title}", author=author,
                     redact=redact)
    proposal, created = opened.proposal, opened.created
    return Authored(proposal, created)


def read_base(wiki: Wiki, base: str | None) -> Snapshot:
    """The snapshot a change is computed from: ``base`` (any revision of the wiki
    branch's history; ``ConfigError`` otherwise) or, without it, the head read now."""
    return wiki.snapshot(wiki.resolve_base(base) if base else None)


def file_limit(wiki: Wiki) -> int:
    """The most bytes ``wiki propose`` reads of a FILE (or of stdin): the largest blob the
    review check reads, ``([ingest] max_bytes + SIZE_SLACK) * SCAN_FACTOR`` (16.5 MB by
    default). A larger entry could never land (flag R006, unscanned, is not overridable),
    so it is refused before it is read (:func:`wiki.files.read_regular`)."""
    from wiki.config import IngestConfig
    from wiki.errors import WikiError
    from wiki.review.check import SCAN_FACTOR, SIZE_SLACK

    try:
        cap = wiki.config().ingest.max_bytes
    except WikiError:  # an invalid or missing wiki.toml: the default cap still holds
        cap = IngestConfig().max_bytes
    return (cap + SIZE_SLACK) * SCAN_FACTOR


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


def _fact_holder(snapshot: Snapshot, draft: Entry) -> str | None:
    """The id of the one other active entry holding a fact key of ``draft`` with another
    value (``None``: no clash). Raises ``ConfigError`` when the clash involves several."""
    from wiki.knowledge.facts import conflicts

    clash = conflicts(snapshot, draft)
    holders = sorted({f.entry_id for found in clash.values() for f in found})
    if len(holders) > 1:
        raise ConfigError(f"{draft.path}: facts {', '.join(sorted(clash))} are held by "
                          f"{', '.join(holders)}; supersede one of them (--supersede ID) "
                          "or resolve the contradiction first")
    return holders[0] if holders else None


def _duplicate_note(paths: list[str]) -> str:
    if not paths:
        return ""
    return "Near-duplicate of: " + ", ".join(paths) + " (consider editing that entry instead)"


def _screened(text: bytes, name: str, redact: bool, before: bytes | None = None) -> bytes:
    """``text`` after the write-time secret check, so that a refusal names the caller's
    own file and line (the proposal checks again, and flags instruction-like content).
    Text still holding merge-conflict markers is refused (:class:`EntryError` on their
    line), as ``wiki ingest`` skips such a source. A leading UTF-8 byte order mark (what
    Windows editors write) is dropped, as ingest drops it: every check below reads the
    text from its first ``---`` or ``#``."""
    from wiki.ingest.merge_markers import conflict_line
    from wiki.store.frontmatter import normalize_newlines

    text = text.removeprefix(b"\xef\xbb\xbf")
    if b"\0" in text:  # the review check refuses it for good (R007): say so now
        raise EntryError(name, "a NUL byte: an entry is UTF-8 text, and no approval lands "
                         "binary content", line=text[:text.index(b"\0")].count(b"\n") + 1)
    line = conflict_line(normalize_newlines(text.decode("utf-8", "replace")))
    if line is not None:
        raise EntryError(name, "unresolved merge-conflict markers (finish the merge, then "
                         "propose it)", line=line)
    return screen_bytes(text, name, redact_secrets=redact, before=before)[0]


def _draft(name: str, text: bytes) -> Entry:
    """The entry ``text`` (``id`` generated when absent) parsed; an :class:`EntryError`
    names the line of ``text`` as its author wrote it, not of the text with the id."""
    with_id = _with_id(text)
    try:
        return Entry.parse(name, with_id)
    except EntryError as exc:
        if with_id == text or not exc.line or exc.line < 2:
            raise
        line = exc.line - 1 if exc.line > 2 else None  # 2: the generated id line itself
        raise EntryError(exc.path, exc.reason, field=exc.field, line=line) from None


def _with_id(text: bytes) -> bytes:
    """``text`` with a generated ``id:`` line when its frontmatter has none (text without
    frontmatter is returned as is, for the parser to report)."""
    if not text.startswith(b"---"):
        return text
    head, _, rest = text.partition(b"\n")
    if b"\nid:" in text.split(b"\n---", 1)[0]:
        return text
    return head + b"\nid: e" + uuid.uuid4().hex[:12].encode() + b"\n" + rest
