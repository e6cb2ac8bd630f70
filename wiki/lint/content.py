"""Rules over what entries say: W003 contradiction, W004 near-duplicate, W006 broken-link,
W008 expired, W009 broken-supersession, W012 orphan, W016 relation-cycle."""

from __future__ import annotations

import datetime as dt

from indexes.retrieval.names import fold_name
from wiki.knowledge.relations import ACYCLIC, cycles
from wiki.lint.model import ERROR, WARNING, Finding, LintContext, rule
from wiki.store.entry import Entry, as_ids, named_ids, resolve_link
from wiki.store.markdown_blocks import links


def _value(value) -> str:
    return " ".join(str(value).split())


@rule("W003", "contradiction", ERROR)
def contradiction(ctx: LintContext):
    """Two active entries giving different values for the same ``facts:`` key."""
    claims: dict[str, dict[str, list[Entry]]] = {}
    for entry in ctx.active:
        for key, value in (entry.meta.get("facts") or {}).items():
            claims.setdefault(str(key), {}).setdefault(_value(value), []).append(entry)
    for key, values in sorted(claims.items()):
        if len(values) < 2:
            continue
        for value, entries in values.items():
            others = sorted(f"{e.id} says {v!r}" for v, es in values.items() if v != value
                            for e in es)
            for entry in entries:
                yield Finding("W003", ERROR, entry.path, f"fact {key!r} is {value!r} here "
                              f"but {', '.join(others)}", entry.id)


@rule("W004", "near-duplicate", WARNING)
def near_duplicate(ctx: LintContext):
    """Two active entries sharing a title or alias once folded (case, accents, punctuation)."""
    names: dict[str, dict[str, Entry]] = {}
    for entry in ctx.active:
        for name in {fold_name(n) for n in [entry.title, *entry.aliases]} - {""}:
            names.setdefault(name, {})[entry.id] = entry
    for name, entries in sorted(names.items()):
        if len(entries) < 2:
            continue
        for entry in entries.values():
            others = sorted(e.path for e in entries.values() if e is not entry)
            yield Finding("W004", WARNING, entry.path, f"name {name!r} is also used by "
                          f"{', '.join(others)}", entry.id)


@rule("W006", "broken-link", ERROR)
def broken_link(ctx: LintContext):
    """A relative ``.md`` link to no file on the branch, or a relation / supersession
    naming an id no entry has."""
    files = ctx.snapshot.files
    for entry in ctx.entries:
        for target in dict.fromkeys(links(entry.body)):
            resolved = resolve_link(entry.path, target)
            if resolved is not None and resolved not in files:
                why = "leaves the wiki" if resolved == "" else "no such file on the branch"
                yield Finding("W006", ERROR, entry.path, f"link {target!r}: {why}", entry.id)
        for key, target_id in named_ids(entry):
            if target_id not in ctx.by_id:
                yield Finding("W006", ERROR, entry.path, f"{key} names {target_id!r}, "
                              "which no entry has", entry.id)


@rule("W008", "expired", WARNING)
def expired(ctx: LintContext):
    """An active entry past its expiry: ``valid_until`` (a date lasts to its end, UTC), or
    without one its ``updated``/``created`` time plus its type's ``[lifetimes]`` entry in
    wiki.toml (:mod:`wiki.store.lifetimes`). Expired entries are left out of default answers."""
    from wiki.store.lifetimes import expiry, lifetimes

    now = ctx.cache.setdefault("now", dt.datetime.now(dt.UTC))
    days = lifetimes(ctx.config)
    for entry in ctx.active:
        when, why = expiry(entry, days)
        if when is not None and when <= now:
            yield Finding("W008", WARNING, entry.path, f"expired: {why} has passed "
                          "(left out of answers): review, extend or supersede it", entry.id)


@rule("W009", "broken-supersession", ERROR)
def broken_supersession(ctx: LintContext):
    """``superseded_by`` and ``supersedes`` that do not point at each other, or a
    ``superseded`` entry that names no successor. Unknown ids are W006's."""
    for entry in ctx.entries:
        successors = as_ids(entry.meta.get("superseded_by"))
        if entry.status == "superseded" and not successors:
            yield Finding("W009", ERROR, entry.path, "status is superseded but "
                          "superseded_by is missing", entry.id)
        for key, back, target_ids in (("superseded_by", "supersedes", successors),
                                      ("supersedes", "superseded_by",
                                       as_ids(entry.meta.get("supersedes")))):
            for target_id in target_ids:
                for other in ctx.by_id.get(target_id, []):
                    if entry.id not in as_ids(other.meta.get(back)):
                        yield Finding("W009", ERROR, entry.path, f"{key} {target_id!r}, "
                                      f"but {other.path} has no {back} {entry.id!r}", entry.id)


@rule("W012", "orphan", WARNING)
def orphan(ctx: LintContext):
    """An active entry with no sources that no other live entry links to (a relative
    markdown link) or names (``relations``, ``supersedes``, ``superseded_by``): nothing
    backs what it says and nothing leads a reader to it but search."""
    unsourced = [e for e in ctx.active if not e.meta.get("sources")]
    if not unsourced:
        return
    id_of = {e.path: e.id for e in ctx.entries}
    reached: set[str] = set()
    for entry in ctx.entries:
        if entry.status == "retracted":
            continue
        targets = {id_of.get(resolve_link(entry.path, t) or "") for t in links(entry.body)}
        targets |= {target_id for _, target_id in named_ids(entry)}
        reached |= targets - {entry.id, None}
    for entry in unsourced:
        if entry.id not in reached:
            yield Finding("W012", WARNING, entry.path, "no sources, and no other entry links "
                          "to it or names it: cite a source, link it from a related entry, "
                          "or retract it", entry.id)


@rule("W016", "relation-cycle", ERROR)
def relation_cycle(ctx: LintContext):
    """Entries that, through a chain of ``depends_on``, ``refines`` or ``derived_from``,
    relate to themselves (retracted entries left out). One finding per entry in the
    cycle, naming the whole cycle."""
    live = [e for e in ctx.entries if e.status != "retracted"]
    by_id = {e.id: e for e in live}
    for kind in ACYCLIC:
        for group in cycles(live, kind):
            for entry_id in group:
                entry = by_id[entry_id]
                yield Finding("W016", ERROR, entry.path, f"{kind} cycle among "
                              f"{', '.join(group)}; break one of its links",
                              entry.id)
