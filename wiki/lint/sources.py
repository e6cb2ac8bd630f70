"""W001 stale-source and W002 missing-source: compare each entry's recorded source
fingerprints with the files as they are now.

Only ``git:<path>`` (relative to the work tree of the repository that holds the wiki) and
``file://`` sources are checked here; other schemes (http) are left to their adapters.
Each distinct source is read once per run.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from wiki.entry import Entry, now_iso
from wiki.errors import SourceError
from wiki.lint.model import ERROR, WARNING, Finding, LintContext, rule
from wiki.sources import fingerprint, read_text


def local_path(uri: str, root: Path | None) -> Path | str | None:
    """The file a source ``uri`` names: a :class:`Path`, a ``str`` saying why it cannot be
    resolved, or ``None`` for a scheme lint does not check."""
    if uri.startswith("git:"):
        if root is None:
            return "the repository has no work tree"
        relative = uri[4:].lstrip("/")
        path = (root / relative).resolve()
        if not path.is_relative_to(root.resolve()):
            return "the path leaves the repository"
        return path
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        return Path(url2pathname(unquote(parsed.path)))
    return None


class _Fingerprints:
    """Current fingerprints of sources, memoised per uri: ``(fingerprint, None)`` or
    ``(None, why it is missing)``; ``None`` for unchecked schemes."""

    def __init__(self, ctx: LintContext):
        self.ctx = ctx
        self.cache: dict[str, tuple[str | None, str | None] | None] = {}

    def get(self, uri: str) -> tuple[str | None, str | None] | None:
        if uri not in self.cache:
            self.cache[uri] = self._compute(uri)
        return self.cache[uri]

    def _compute(self, uri: str) -> tuple[str | None, str | None] | None:
        path = local_path(uri, self.ctx.wiki.root)
        if path is None or isinstance(path, str):
            return None if path is None else (None, path)
        if not path.is_file():
            return None, "no longer exists" if not path.exists() else "is not a file"
        config = self.ctx.config
        try:
            text = read_text(path, max_bytes=config.ingest.max_bytes,
                             max_lines=config.ingest.max_lines)
        except SourceError as exc:
            return None, f"is unreadable ({exc.reason})"
        return fingerprint(text, ignore_frontmatter=config.sources.ignore_frontmatter,
                           ignore_whitespace=config.sources.ignore_whitespace), None


def _current(ctx: LintContext) -> _Fingerprints:
    if "sources" not in ctx.cache:
        ctx.cache["sources"] = _Fingerprints(ctx)
    return ctx.cache["sources"]


def _live(ctx: LintContext) -> list[Entry]:
    return [e for e in ctx.entries if e.status != "retracted"]


@rule("W001", "stale-source", WARNING)
def stale_source(ctx: LintContext):
    """A source whose current fingerprint differs from the recorded one. A source with no
    recorded fingerprint gets it filled in by ``--fix`` (nothing to judge)."""
    current = _current(ctx)
    for entry in _live(ctx):
        refreshed: dict[int, str] = {}
        for number, source in enumerate(entry.sources):
            state = current.get(source.uri)
            if state is None or state[0] is None:
                continue
            now = state[0]
            if not source.fingerprint:
                refreshed[number] = now
                yield Finding("W001", WARNING, entry.path, f"source {source.uri} has no "
                              "recorded fingerprint", entry.id, fixable=True)
            elif source.fingerprint != now:
                yield Finding("W001", WARNING, entry.path, f"source {source.uri} changed "
                              f"since {source.checked_at or 'it was compiled'}: re-ingest it",
                              entry.id)
        if refreshed:
            ctx.fixes[entry.path] = _with_fingerprints(entry, refreshed)


def _with_fingerprints(entry: Entry, refreshed: dict[int, str]) -> bytes:
    stamp = now_iso()
    sources = []
    for number, raw in enumerate(entry.meta.get("sources") or []):
        item = dict(raw)
        if number in refreshed:
            item["fingerprint"] = refreshed[number]
            item["checked_at"] = stamp
        sources.append(item)
    full = Entry.parse(entry.path, entry.raw) if entry.raw is not None else entry
    return full.updated_with(sources=sources).to_bytes()


@rule("W002", "missing-source", ERROR)
def missing_source(ctx: LintContext):
    """A source file that no longer exists or cannot be read."""
    current = _current(ctx)
    for entry in _live(ctx):
        for source in entry.sources:
            state = current.get(source.uri)
            if state is not None and state[0] is None:
                yield Finding("W002", ERROR, entry.path, f"source {source.uri} {state[1]}",
                              entry.id)
