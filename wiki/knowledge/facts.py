"""Keyed facts: ``facts:`` claims that can be looked up, updated and checked.

A fact is ``key: value`` or ``key: {value: ..., unit: ..., as_of: DATE}`` in an entry's
frontmatter. The *current* value of a key is what the active entries holding it say (one
entry normally; several disagreeing is lint W003's contradiction). A fact lives in the
entry that states it: :func:`set_fact` changes a key in the entry holding it, or adds it
to an entry the caller names, as an edit in place that keeps the entry's id, path and
sources (never an entry of its own, which would have none); an edit of the holder
(:func:`wiki.knowledge.authoring.edit_entry`) is an edit too. A *new* entry claiming a
held key (:func:`wiki.knowledge.authoring.new_entry`) and a distilled draft with another
value (:mod:`wiki.knowledge.placement`) become a **supersession** of the holder, never a
second truth. The history of a key is read from the first-parent history of the wiki
branch, so a value changed in place keeps its past (:func:`history`, :func:`held_before`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from wiki.errors import ConfigError, NotFoundError
from wiki.store.entry import Entry
from wiki.store.gitrepo import Identity, committed_at
from wiki.store.snapshot import Snapshot
from wiki.store.workspace import Wiki


@dataclass(frozen=True)
class Fact:
    """One claim: ``key``, ``value`` (as written), optional ``unit`` and ``as_of``, and the
    entry that makes it (``entry_id``, ``path``, ``title``, ``status``, source uris)."""

    key: str
    value: object
    unit: str = ""
    as_of: str = ""
    entry_id: str = ""
    path: str = ""
    title: str = ""
    status: str = "active"
    sources: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The value as one line: ``value unit (as of DATE)``."""
        out = " ".join(str(self.value).split())
        out += f" {self.unit}" if self.unit else ""
        return out + (f" (as of {self.as_of})" if self.as_of else "")

    @property
    def same_claim(self) -> tuple[str, str]:
        """What two facts must share to agree: folded value and unit (not the date)."""
        return " ".join(str(self.value).split()), self.unit


def facts_of(entry: Entry) -> dict[str, Fact]:
    """``key -> Fact`` of ``entry`` (both forms)."""
    out = {}
    for key, raw in (entry.meta.get("facts") or {}).items():
        value, unit, as_of = raw, "", ""
        if isinstance(raw, dict):
            value, unit = raw.get("value"), str(raw.get("unit") or "")
            as_of = str(raw.get("as_of") or "")
        out[str(key)] = Fact(str(key), value, unit, as_of, entry.id, entry.path, entry.title,
                             entry.status, tuple(s.uri for s in entry.sources))
    return out


def current(wiki: Wiki, key: str, snapshot: Snapshot | None = None) -> list[Fact]:
    """The active entries' claims for ``key`` (sorted by path)."""
    snapshot = snapshot or wiki.snapshot()
    found = [facts_of(e).get(key) for e in snapshot.entries()[0] if e.status == "active"]
    return [f for f in found if f is not None]


def all_current(wiki: Wiki, snapshot: Snapshot | None = None) -> dict[str, list[Fact]]:
    """Every key the active entries hold now: ``key -> [Fact]`` (keys sorted; facts sorted
    by path; two or more facts under one key are entries that disagree or repeat it)."""
    snapshot = snapshot or wiki.snapshot()
    found: dict[str, list[Fact]] = {}
    for entry in snapshot.entries()[0]:
        if entry.status == "active":
            for key, fact in facts_of(entry).items():
                found.setdefault(key, []).append(fact)
    return {key: sorted(found[key], key=lambda f: f.path) for key in sorted(found)}


def conflicts(snapshot: Snapshot, draft: Entry) -> dict[str, list[Fact]]:
    """``key -> claims of other active entries`` for each fact of ``draft`` that another
    entry already holds with a different value or unit."""
    mine = facts_of(draft)
    out: dict[str, list[Fact]] = {}
    for other in snapshot.entries()[0]:
        if other.status != "active" or other.id == draft.id:
            continue
        for key, fact in facts_of(other).items():
            if key in mine and fact.same_claim != mine[key].same_claim:
                out.setdefault(key, []).append(fact)
    return out


@dataclass(frozen=True)
class Change:
    """One step in a key's history: the landing ``commit`` and its ``date``, what
    happened (``set``, ``changed``, ``superseded``, ``retracted``, ``removed``) and the
    claim after it (before it, for ``removed``)."""

    commit: str
    date: dt.datetime
    change: str
    fact: Fact


def history(wiki: Wiki, key: str) -> list[Change]:
    """How ``key`` was claimed over the first-parent history of the wiki branch, oldest
    first. Raises ``NotFoundError`` when no commit ever held it (``ShallowHistoryError``
    when a shallow clone lacks the commits that might have); in a shallow clone a history
    that starts at the clone's edge is said in a ``note:`` (:func:`wiki.store.notices.notify`)."""
    from wiki.store import indextree

    commits = list(wiki.repo.iter_commits(wiki.require_head(), first_parent=True))[::-1]
    seen: dict[str, str] = {}  # path -> blob sha
    state: dict[str, Fact] = {}  # path -> claim
    changes: list[Change] = []
    for commit in commits:
        files = {p: f.sha for p, f in wiki.store.files(commit.hexsha).items()
                 if indextree.is_entry_path(p)}
        when = committed_at(commit)
        step: list[Change] = []
        for path in sorted(set(files) | set(seen)):
            if files.get(path) == seen.get(path):
                continue
            before = state.pop(path, None)
            fact = None
            if path in files:
                try:
                    fact = facts_of(Entry.parse(path, wiki.store.read(files[path]))).get(key)
                except Exception:  # noqa: BLE001 - a malformed revision holds no claim
                    fact = None
            if fact is not None:
                state[path] = fact
            kind = _kind(before, fact)
            if kind:
                step.append(Change(commit.hexsha, when, kind, fact or before))
        changes += sorted(step, key=lambda c: c.change not in ("superseded", "retracted",
                                                               "removed"))  # old, then new
        seen = files
    from wiki.store.shallow import HINT, ShallowHistoryError, first_cut

    cut = first_cut(wiki.repo, commits[:1])
    if cut is not None and not changes:
        raise ShallowHistoryError(cut, f"the history of the fact {key!r}")
    if not changes:
        raise NotFoundError(f"no entry has ever held the fact {key!r}")
    if cut is not None:
        from wiki.store.notices import notify

        notify(f"note: this clone is shallow: the history of the fact {key!r} before commit "
               f"{cut[:12]} is missing (its first step is the clone's edge, not when the "
               f"claim was made); {HINT}")
    return changes


def held_before(wiki: Wiki, entry: Entry, key: str, claim: tuple[str, str],
                commit: str) -> str | None:
    """The newest commit of the wiki branch's first-parent history up to ``commit`` at
    which ``entry`` (at its path, with its id) held ``key`` with ``claim`` (a
    :attr:`Fact.same_claim`) while holding another value now: a value changed in place
    (:func:`set_fact`), which a later text must not bring back by itself. ``None`` when it
    never did. Reads only the commits that changed the entry's file."""
    now = facts_of(entry).get(key)
    if now is not None and now.same_claim == claim:
        return None
    for past in wiki.repo.iter_commits(commit, paths=[entry.path], first_parent=True):
        data = wiki.store.read_path(past.hexsha, entry.path)
        try:
            earlier = Entry.parse(entry.path, data) if data is not None else None
        except Exception:  # noqa: BLE001 - a malformed revision holds no claim
            earlier = None
        held = facts_of(earlier).get(key) if earlier is not None and \
            earlier.id == entry.id else None
        if held is not None and held.same_claim == claim:
            return past.hexsha
    return None


def _kind(before: Fact | None, after: Fact | None) -> str:
    if after is None:
        return "removed" if before is not None else ""
    if before is None:
        return "set" if after.status == "active" else after.status
    if after.status != before.status:
        return after.status if after.status != "active" else "set"
    return "changed" if after.same_claim != before.same_claim or after.as_of != before.as_of \
        else ""


def set_fact(wiki: Wiki, key: str, value: str, *, unit: str = "", as_of: str = "",
             entry: str | None = None, author: Identity | None = None):
    """Propose ``key = value`` in the entry that states it: an edit, in place, of the
    ``facts:`` of the one active entry holding the key, or, when none does, of ``entry``
    (an id or path). The entry keeps its id, path, sources and every other field; only
    ``updated`` is stamped, and a changed value is restated in its text
    (:func:`with_value`). Returns an :class:`wiki.knowledge.authoring.Authored`
    (``proposal`` ``None`` when the value is already current: ``existing`` is its entry).

    Raises ``ConfigError`` when ``key`` or ``value`` is blank, when several entries hold
    the key (resolve W003), when no entry holds it and no ``entry`` is given (a fact
    never makes an entry of its own: it would have no source), when ``entry`` is not the
    entry holding it, or is not active; ``NotFoundError`` when ``entry`` names nothing."""
    from wiki.knowledge import authoring
    from wiki.review.proposals import propose
    from wiki.store.entry import now_iso
    from wiki.store.lookup import find_entry

    if not key.strip() or not value.strip():
        what = "key" if not key.strip() else f"value of {key!r}"
        raise ConfigError(f"the fact {what} is empty: give both, e.g. "
                          "`wiki facts set travel.receipt_threshold 100 --entry travel/receipts`")

    claim = {"value": scalar(value)}
    claim.update({k: v for k, v in (("unit", unit), ("as_of", as_of)) if v})
    stored = claim["value"] if len(claim) == 1 else claim
    snapshot = wiki.snapshot()  # one read: the holders and the proposal's base
    holders = current(wiki, key, snapshot)
    probe = Fact(key, claim["value"], unit, as_of)
    named = find_entry(wiki, entry, snapshot) if entry is not None else None
    same = [h for h in holders if h.same_claim == probe.same_claim and h.as_of == as_of]
    if same and (named is None or named.path == same[0].path):
        return authoring.Authored(None, existing=same[0].path)
    if len(holders) > 1:
        raise ConfigError(f"fact {key!r} is held by {len(holders)} entries "
                          f"({', '.join(h.path for h in holders)}); resolve the "
                          "contradiction (wiki lint --select W003) first")
    if holders:
        held: Fact | None = holders[0]
        if named is not None and named.path != held.path:
            raise ConfigError(f"fact {key!r} is held by {held.path} (id {held.entry_id}), "
                              f"not {named.path}: set it there (leave out --entry), or "
                              f"remove it from {held.path} first")
        old = snapshot.entry(held.path)
    elif named is None:
        raise ConfigError(f"no entry holds the fact {key!r}: name the entry that states it "
                          "with --entry ID_OR_PATH (`wiki search` finds it), so that the "
                          "fact keeps that entry's sources")
    elif named.status != "active":
        after = named.meta.get("superseded_by") or []
        after = ", ".join(str(i) for i in ([after] if isinstance(after, str) else after))
        raise ConfigError(f"{named.path} is {named.status}: name an active entry with "
                          "--entry" + (f" (it was superseded by {after})" if after else ""))
    else:
        held, old = None, named
    line = f"{key} is {probe.text}."
    changed = with_value(old, key, held, stored, claim["value"], line)
    changed = changed.updated_with(updated=now_iso())
    opened = propose(wiki, {old.path: changed.to_bytes()}, base=snapshot.commit,
                     kind="fact", subject=f"fact {key} = {probe.text}: {old.title}",
                     author=author)
    proposal, created = opened.proposal, opened.created
    return authoring.Authored(proposal, created)


def with_value(old: Entry, key: str, held: Fact | None, stored, value, line: str) -> Entry:
    """``old`` with ``facts[key] = stored`` (the frontmatter form, plain or ``{value, unit,
    as_of}``), every other field as it was. A key ``old`` did not hold (``held`` ``None``)
    changes nothing else. A changed value is restated so that an answer quoting the entry
    never repeats the old one: in a ``type: fact`` entry the claim ``line`` becomes the
    summary and comes first in the body (the whole body when it was only the old line);
    in other entries the old value, written as a whole word of two or more characters, is
    replaced by ``value`` in the summary and the body, which are otherwise the author's
    words and left as written."""
    facts = dict(old.meta.get("facts") or {})
    facts[key] = stored
    fresh = old.updated_with(facts=facts)
    if held is None:
        return fresh
    if old.type == "fact":
        generated = f"{held.key} is {held.text}."
        body = f"{line}\n" if old.body.strip() == generated else \
            _restated(old.body, held.value, value, line)
        return fresh.updated_with(summary=line, body=body)
    summary = old.meta.get("summary")
    if isinstance(summary, str):
        fresh = fresh.updated_with(summary=_replaced(summary, held.value, value))
    return fresh.updated_with(body=_replaced(old.body, held.value, value))


def successor(old: Entry, holder: Fact, stored, value, line: str) -> Entry:
    """What replaces ``old`` when ``holder``'s key takes ``value`` (``stored`` is the
    frontmatter form, plain or ``{value, unit, as_of}``): ``old``'s fields without its
    id, dates and status, the new value, and the claim ``line`` first in the summary (of a
    fact) and the body (see :func:`_restated`). The caller gives it an id. Used by
    distillation (:mod:`wiki.knowledge.placement`) when a source gives a held key a new
    value; `wiki facts set` edits the holder in place instead (:func:`set_fact`)."""
    facts = dict(old.meta.get("facts") or {})
    facts[holder.key] = stored
    summary = line if old.type == "fact" else old.meta.get("summary")
    fresh = old.updated_with(id=None, supersedes=None, superseded_by=None, status=None,
                             created=None, updated=None, facts=facts, summary=summary)
    generated = f"{holder.key} is {holder.text}."
    body = f"{line}\n" if old.body.strip() == generated else \
        _restated(fresh.body, holder.value, value, line)
    return fresh.updated_with(body=body)


def _restated(body: str, old, new, line: str) -> str:
    """The successor's prose: the new claim first, then the old text with the old value
    replaced by the new one (:func:`_replaced`), so an answer quoting the entry never
    repeats the superseded value. The reviewer sees the change in the proposal's diff."""
    return f"{line}\n\n{_replaced(body, old, new).lstrip()}"


def _replaced(text: str, old, new) -> str:
    """``text`` with the old value (as a whole word, at least two characters) replaced by
    the new one."""
    import re

    old_text, new_text = " ".join(str(old).split()), " ".join(str(new).split())
    if len(old_text) >= 2:
        text = re.sub(rf"(?<![\w.]){re.escape(old_text)}(?![\w]|\.\d)",
                      lambda _: new_text, text)
    return text


def scalar(text: str):
    """``"42"`` -> 42, ``"0.5"`` -> 0.5, other text as is (so YAML keeps numbers numbers)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
