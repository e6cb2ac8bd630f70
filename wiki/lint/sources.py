"""W001 stale-source, W002 missing-source and W011 renamed-source: compare each entry's
recorded sources with the sources as they are now, through the source adapters
(:mod:`wiki.adapters`: ``git:``, ``file://``, ``http(s)://``; other schemes are not
checked). Each distinct (uri, record) is checked once per run; a ``git:`` source whose
blob id equals its recorded ``blob`` is not even read.
"""

from __future__ import annotations

import re

from wiki.adapters import VALIDATORS, Check, Recorded, Sources, sources_for
from wiki.lint.model import ERROR, WARNING, Finding, LintContext, rule
from wiki.store.entry import Entry, now_iso

_LEAD, _TAIL = r"^(?P<lead> {0,3}\[[^\]\n]+\]:[ \t]*<?)", r"(?P<tail>>?[ \t]*)$"


def _sources(ctx: LintContext) -> Sources:
    if "sources" not in ctx.cache:
        ctx.cache["sources"] = sources_for(ctx.wiki, ctx.config)
        ctx.cleanup.append(ctx.cache["sources"].close)
    return ctx.cache["sources"]


def source_checks(ctx: LintContext) -> list[tuple[Entry, int, str, Recorded, Check | None]]:
    """``(entry, source number, uri, what was recorded, its check now)`` for every source
    of every entry that is not retracted; memoised for the run."""
    if "source_checks" not in ctx.cache:
        sources = _sources(ctx)
        listed = [(entry, number, str(item["uri"]), Recorded.from_meta(item))
                  for entry in ctx.entries if entry.status != "retracted"
                  for number, item in enumerate(entry.meta.get("sources") or [])]
        sources.check_all((uri, recorded) for _, _, uri, recorded in listed)
        ctx.cache["source_checks"] = [(entry, number, uri, recorded,
                                       sources.check(uri, recorded))
                                      for entry, number, uri, recorded in listed]
    return ctx.cache["source_checks"]


def renamed_sources(ctx: LintContext) -> dict[str, str]:
    """``old uri -> new uri`` for missing ``git:`` sources that git's rename detection
    followed to a file that exists now (memoised)."""
    if "renames" not in ctx.cache:
        git_adapter = _sources(ctx).adapter("git:")
        missing = {}
        for _, _, uri, _, check in source_checks(ctx):
            if check is not None and check.error and uri.startswith("git:"):
                path = git_adapter.relative(uri)
                if path is not None and not git_adapter.exists(path):
                    missing[path] = uri
        moved = git_adapter.renamed(missing) if missing else {}
        ctx.cache["renames"] = {missing[old]: f"git:{new}" for old, new in moved.items()}
        if missing.keys() - moved.keys():
            ctx.cache["unfollowed"] = (set(missing[p] for p in missing.keys() - moved.keys()),
                                       _shallow_note(ctx))
    return ctx.cache["renames"]


def _shallow_note(ctx: LintContext) -> str:
    """Why a rename may have been missed: the clone is shallow (``""`` when it is not)."""
    from wiki.store.shallow import HINT, boundary

    edge = boundary(ctx.wiki.repo)
    if not edge:
        return ""
    return (f" (this clone is shallow: a rename before commit {min(edge)[:12]} cannot be "
            f"followed; {HINT})")


def stage_source_fix(ctx: LintContext, entry: Entry, number: int, changes: dict[str, str],
                     old_uri: str | None = None) -> None:
    """Record a safe fix of source ``number`` of ``entry`` (``changes``: keys of its
    ``sources:`` mapping -> new values; with ``old_uri``, body reference definitions
    ``[n]: <old_uri>`` follow ``changes["uri"]``). Fixes of several rules to one entry add
    up; the entry's new bytes land in ``ctx.fixes``."""
    staged = ctx.cache.setdefault("source_fixes", {}).setdefault(entry.path, ({}, []))
    staged[0].setdefault(number, {}).update(changes)
    if old_uri is not None:
        staged[1].append((old_uri, changes["uri"]))
    full = Entry.parse(entry.path, entry.raw) if entry.raw is not None else entry
    sources = []
    for index, raw in enumerate(full.meta.get("sources") or []):
        item = {**raw, **staged[0].get(index, {})}
        sources.append({k: v for k, v in item.items() if v not in ("", None)})
    body = full.body
    for old, new in staged[1]:
        pattern = re.compile(_LEAD + re.escape(old) + _TAIL, re.MULTILINE)
        body = pattern.sub(lambda m, new=new: m["lead"] + new + m["tail"], body)
    fields = {"sources": sources}
    ctx.fixes[entry.path] = full.updated_with(body=body if body != full.body else None,
                                              **fields).to_bytes()


def _record(check: Check) -> dict[str, str]:
    """The source-record keys a fix writes for ``check``: fingerprint, time, validators."""
    found = {key: check.validators.get(key, "") for key in VALIDATORS}
    return {"fingerprint": check.fingerprint or "", "checked_at": now_iso(), **found}


@rule("W001", "stale-source", WARNING)
def stale_source(ctx: LintContext):
    """A source whose current fingerprint differs from the recorded one. A source with no
    recorded fingerprint gets it (and its validators) filled in by ``--fix``."""
    for entry, number, uri, recorded, check in source_checks(ctx):
        if check is None or check.fingerprint is None:
            continue
        if not recorded.fingerprint:
            stage_source_fix(ctx, entry, number, _record(check))
            yield Finding("W001", WARNING, entry.path, f"source {uri} has no recorded "
                          "fingerprint", entry.id, fixable=True)
        elif recorded.fingerprint != check.fingerprint:
            checked = entry.sources[number].checked_at
            yield Finding("W001", WARNING, entry.path, f"source {uri} changed since "
                          f"{checked or 'it was compiled'}: re-ingest it", entry.id)


@rule("W002", "missing-source", ERROR)
def missing_source(ctx: LintContext):
    """A source that no longer exists, cannot be reached or cannot be read. A ``git:``
    source that was renamed is W011's, not this rule's; in a shallow clone, where a
    rename older than the fetched history cannot be followed, the message says so."""
    renamed = renamed_sources(ctx)
    unfollowed, note = ctx.cache.get("unfollowed", (set(), ""))
    for entry, _, uri, _, check in source_checks(ctx):
        if check is not None and check.error and uri not in renamed:
            why = note if uri in unfollowed else ""
            yield Finding("W002", ERROR, entry.path, f"source {uri} {check.error}{why}",
                          entry.id)


@rule("W011", "renamed-source", WARNING)
def renamed_source(ctx: LintContext):
    """A ``git:`` source whose path is gone because git saw it renamed. ``--fix`` rewrites
    the uri (and the body's reference to it); when the content is unchanged it also
    confirms the fingerprint, else W001 reports the new path as stale afterwards."""
    renamed = renamed_sources(ctx)
    sources = _sources(ctx)
    for entry, number, uri, recorded, _ in source_checks(ctx):
        new = renamed.get(uri)
        if new is None:
            continue
        check = sources.check(new, recorded)
        changes = {"uri": new}
        if check is not None and check.fingerprint and \
                check.fingerprint == recorded.fingerprint:
            changes.update(_record(check))
            note = "content unchanged"
        else:
            note = "content changed too: re-ingest it after the fix"
        stage_source_fix(ctx, entry, number, changes, old_uri=uri)
        yield Finding("W011", WARNING, entry.path, f"source {uri} was renamed to {new} "
                      f"({note})", entry.id, fixable=True)
