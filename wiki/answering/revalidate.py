"""Revalidation at ask time: answer from the source when the entry is old
(docs/architecture.md, "Asking").

Before an answer's sentences are picked, the sources of the candidate entries (the top
hits that may be cited) are checked through the adapter registry
(:mod:`wiki.adapters`). Checking is cheap: a ``git:`` source whose blob id, from one
listing of the repository, equals the ``blob`` its entry recorded is unchanged without
being read; an HTTP source is asked with a conditional GET. Unchanged sources are never
read. For a source whose fingerprint changed, and only for it:

* the current text is read once (secrets redacted: it is quoted, never written), split
  exactly like ingest splits it (:func:`wiki.ingest.pipeline.compile_sections`) and the part that
  corresponds to the entry is found by its recorded ``locator`` (the ``##`` heading) and
  ``occurrence``; when that section is gone the whole current source is used;
* when that part still says what the entry says (the change was elsewhere in the source),
  the entry stands, verified;
* otherwise the entry is **stale**: its text is replaced, for this answer, by the current
  text of the section, so the same sentence ranking picks the answer from what the source
  says now, and the citation says that the entry is out of date.

A source that no longer exists or cannot be read leaves the entry's text in the answer,
flagged **unverifiable**. A scheme no adapter knows is not checked (as in lint).
:func:`propose_update` re-ingests the changed local sources as one proposal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from wiki.adapters import Recorded, Sources, scheme_of, sources_for
from wiki.config import WikiConfig
from wiki.errors import EntryError, SourceError
from wiki.ingest.pipeline import IngestReport, ingest
from wiki.ingest.sections import compile_sections
from wiki.safety.scan import screen
from wiki.store.entry import Entry
from wiki.store.frontmatter import parse as parse_frontmatter
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

UPDATABLE = ("git", "file")
"""Schemes whose sources ``wiki ingest`` (and so :func:`propose_update`) can re-read."""
@dataclass(kw_only=True)
class Revalidated:
    """What ask-time revalidation found for one entry, carried by :class:`EntryCheck` and
    by the answer's :class:`wiki.answering.ask.Citation`: ``checked`` (some source had an adapter),
    ``stale`` (a source changed where the entry came from: the answer uses the current
    source), ``unverifiable`` (a source is missing or unreadable: the entry's text is
    kept), ``current_source_used`` (its sentences come from the current source text),
    ``reason`` (one line for people; empty when every source is unchanged) and
    ``stale_sources`` (uris)."""

    checked: bool = False
    stale: bool = False
    unverifiable: bool = False
    current_source_used: bool = False
    reason: str = ""
    stale_sources: list[str] = field(default_factory=list)

    def revalidated(self) -> dict:
        """This revalidation's fields as ``name -> value`` (to build a copy of a citation
        that carries them: ``dataclasses.replace(citation, **check.revalidated())``)."""
        return {item.name: getattr(self, item.name) for item in fields(Revalidated)}


@dataclass
class EntryCheck(Revalidated):
    """The revalidation of one candidate entry (:class:`Revalidated`), with its
    ``changed_sources`` (uris) and the ``current`` entry built from the changed sources'
    text when it is stale."""

    entry: Entry
    changed_sources: list[str] = field(default_factory=list)
    current: Entry | None = None


@dataclass
class Revalidation:
    """What one ask checked: per entry path an :class:`EntryCheck`, and counts of
    sources ``checked``, ``unchanged`` (of which ``proven`` equal without reading them),
    ``changed``, ``unverifiable``, ``unchecked`` (no adapter) and ``reread`` (whole
    sources read to answer from them)."""

    entries: dict[str, EntryCheck] = field(default_factory=dict)
    checked: int = 0
    unchanged: int = 0
    proven: int = 0
    changed: int = 0
    unverifiable: int = 0
    unchecked: int = 0
    reread: int = 0

    def current(self, entries: list[Entry]) -> list[Entry]:
        """``entries`` with each stale one replaced by its current-source version."""
        out = []
        for entry in entries:
            check = self.entries.get(entry.path)
            out.append(check.current if check and check.current is not None else entry)
        return out

    def update_uris(self) -> list[str]:
        """Changed sources of the checked entries that re-ingest can refresh."""
        found: list[str] = []
        for check in self.entries.values():
            for uri in check.changed_sources:
                if scheme_of(uri) in UPDATABLE and uri not in found:
                    found.append(uri)
        return found

    def summary(self) -> dict:
        """The counts and the uris to re-ingest, as plain values."""
        return {"checked": self.checked, "unchanged": self.unchanged, "proven": self.proven,
                "changed": self.changed, "unverifiable": self.unverifiable,
                "unchecked": self.unchecked, "reread": self.reread,
                "stale_entries": [c.entry.id for c in self.entries.values() if c.stale],
                "update": self.update_uris()}


def revalidate(wiki: Wiki, entries: Iterable[Entry], config: WikiConfig,
               sources: Sources | None = None) -> Revalidation:
    """Check the sources of ``entries`` now (see the module docstring). ``sources`` lets a
    caller share (and count) one adapter run; by default one is made and closed here.
    Raises ``ConfigError`` for a bad ``[sources] git_ref``; a source that cannot be
    reached or read is never raised, it makes the entry unverifiable."""
    own = sources is None
    sources = sources or sources_for(wiki, config)
    result = Revalidation()
    texts: dict[str, str | SourceError] = {}
    entries = list(entries)
    try:
        sources.check_all((str(item.get("uri") or ""), Recorded.from_meta(item))
                          for entry in entries for item in entry.meta.get("sources") or []
                          if isinstance(item, dict))
        for entry in entries:
            if entry.path not in result.entries:
                result.entries[entry.path] = _check_entry(entry, config, sources, result,
                                                          texts)
        result.reread = sum(1 for t in texts.values() if isinstance(t, str))
    finally:
        if own:
            sources.close()
    return result


def _check_entry(entry: Entry, config: WikiConfig, sources: Sources, result: Revalidation,
                 texts: dict[str, str | SourceError]) -> EntryCheck:
    check = EntryCheck(entry)
    records = [item for item in entry.meta.get("sources") or [] if isinstance(item, dict)]
    parts: list[str] = []
    notes: list[str] = []
    for item in records:
        uri = str(item.get("uri") or "")
        recorded = Recorded.from_meta(item)
        state = sources.check(uri, recorded)
        since = _since(item)
        if state is None:
            result.unchecked += 1
            continue
        check.checked = True
        result.checked += 1
        if state.error:
            result.unverifiable += 1
            check.unverifiable = True
            notes.append(f"its source {uri} {state.error}; the entry could not be verified")
            continue
        if state.fingerprint == recorded.fingerprint:
            result.unchanged += 1
            result.proven += state.unchanged
            continue
        result.changed += 1
        check.changed_sources.append(uri)
        if uri not in texts:
            try:
                texts[uri] = sources.read(uri)
            except SourceError as exc:
                texts[uri] = exc
        text = texts[uri]
        if isinstance(text, SourceError):
            check.unverifiable = True
            notes.append(f"its source {uri} changed since {since} and cannot be read now "
                         f"({text.reason}); the entry could not be verified")
            continue
        section, where = _section(text, uri, entry, item, config)
        if _same(section, entry.body):
            notes.append(f"its source {uri} changed since {since}, but not "
                         f"{'in ' if where.startswith('section') else ''}{where}; "
                         "the entry still says what the source says")
            continue
        check.stale = True
        check.stale_sources.append(uri)
        parts.append(section)
        notes.append(f"its source {uri} changed since {since}; answered from the current "
                     "source" + ("" if where == "the whole source" else f" ({where})"))
    if check.stale:
        body = "\n\n".join(parts)
        check.current = entry.updated_with(body=body, summary=_summary(body, entry))
        check.current_source_used = True
    stale_first = sorted(notes, key=lambda n: "answered from" not in n)
    check.reason = "; ".join(stale_first)
    if not check.checked and not records:
        check.reason = "the entry cites no source"
    elif not check.checked:
        check.reason = "no source adapter knows its sources' schemes; not checked"
    return check


def _since(item: dict) -> str:
    value = item.get("checked_at")
    return str(value) if value else "the entry was compiled"


def _section(text: str, uri: str, entry: Entry, item: dict, config: WikiConfig
             ) -> tuple[str, str]:
    """The current text of the part of the source ``entry`` was compiled from, and a few
    words saying which part: ``(markdown, "section 'X'")``."""
    text, _ = screen(text, uri, redact_secrets=True)
    try:
        body = parse_frontmatter(text, uri).body
    except EntryError:
        body = text
    drafts = compile_sections(entry.title, body, config.ingest)
    locator = str(item.get("locator") or "")
    occurrence = item.get("occurrence", 1)
    occurrence = occurrence if isinstance(occurrence, int) else 1
    exact = [d for d in drafts if d.locator == locator and d.occurrence == occurrence]
    found = exact or [d for d in drafts if d.locator == locator]
    if found and len(drafts) == 1:
        return found[0].body, "the whole source"
    if found and locator:
        return found[0].body, f"section '{locator}'"
    if not locator:  # a whole-source entry, or the part before the first heading
        if found and _overlap(found[0].body, entry.body) >= _overlap(body, entry.body):
            return found[0].body, "the part before its first section"
        return body, "the whole source"
    return body, f"the whole source: its section '{locator}' is gone"


def _overlap(text: str, other: str) -> float:
    """Jaccard similarity of the word sets of two texts."""
    a, b = set(_plain(text).lower().split()), set(_plain(other).lower().split())
    return len(a & b) / len(a | b) if a | b else 0.0


_REFERENCE_PREFIX = "["


def _plain(markdown: str) -> str:
    """Words of ``markdown`` without trailing reference definitions (``[1]: uri``)."""
    lines = markdown.rstrip().splitlines()
    while lines and (not lines[-1].strip() or (lines[-1].startswith(_REFERENCE_PREFIX)
                                               and "]: " in lines[-1])):
        lines.pop()
    return " ".join(" ".join(lines).split())


def _same(section: str, body: str) -> bool:
    return _plain(section) == _plain(body)


def _summary(body: str, entry: Entry) -> str:
    from wiki.store.markdown_text import summary

    return summary(body) or entry.summary


def local_paths(wiki: Wiki, uris: Iterable[str]) -> list[Path]:
    """The local files of ``git:`` and ``file:`` ``uris`` that exist now and that the
    reader's source policy allows reading (:mod:`wiki.adapters.policy`); others are
    skipped, so a refused source is never re-ingested into a proposal."""
    from wiki.errors import ConfigError

    found: list[Path] = []
    with sources_for(wiki, WikiConfig()) as sources:
        for uri in uris:
            if scheme_of(uri) not in UPDATABLE:
                continue
            adapter = sources.adapter(uri)
            try:
                path = (adapter.local_path(uri) if scheme_of(uri) == "git"
                        else adapter.allowed(uri))
            except (SourceError, ConfigError):
                continue
            if path.is_file() and path not in found:
                found.append(path)
    return found


def propose_update(wiki: Wiki, uris: Iterable[str], *, author: Identity | None = None
                   ) -> IngestReport:
    """Re-ingest the local sources ``uris`` (``git:`` / ``file:``) as one proposal through
    :func:`wiki.ingest.pipeline.ingest`, so every write-time check applies. ``report.proposal`` is
    the proposal (an open one for the same sources is reused: ``proposal_created`` false),
    ``None`` when nothing could be re-ingested (see ``report.skipped``)."""
    paths = local_paths(wiki, uris)
    if not paths:
        return IngestReport()
    return ingest(wiki, paths, author=author, remember=False)
