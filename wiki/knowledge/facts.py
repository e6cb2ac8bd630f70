"""Keyed facts: ``facts:`` claims that can be looked up, updated and checked.

A fact is ``key: value`` or ``key: {value: ..., unit: ..., as_of: DATE}`` in an entry's
frontmatter. The *current* value of a key is what the active entries holding it say (one
entry normally; several disagreeing is lint W003's contradiction). A new value for a key
never becomes a second truth: :func:`set_fact`, and ``new``/``edit`` proposals that change
a held key
(:func:`wiki.knowledge.authoring.new_entry`), become a **supersession** of the holder. The
history of a key is read from the first-parent history of the wiki branch.
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
    that starts at the clone's edge is said in a ``note:`` (:func:`wiki.store.storage.notify`)."""
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
        from wiki.store.storage import notify

        notify(f"note: this clone is shallow: the history of the fact {key!r} before commit "
               f"{cut[:12]} is missing (its first step is the clone's edge, not when the "
               f"claim was made); {HINT}")
    return changes


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
             category: str = "facts", author: Identity | None = None):
    """Propose ``key = value``: a supersession of the one active entry holding the key,
    or a new ``type: fact`` entry in ``category`` when none does. Returns an
    :class:`wiki.knowledge.authoring.Authored` (``proposal`` ``None`` when the value is already
    current). Raises ``ConfigError`` when several entries hold the key (resolve W003) or
    when ``key`` or ``value`` is blank."""
    import yaml

    from wiki.knowledge import authoring

    if not key.strip() or not value.strip():
        what = "key" if not key.strip() else f"value of {key!r}"
        raise ConfigError(f"the fact {what} is empty: give both, e.g. "
                          "`wiki facts set travel.receipt_threshold 100`")

    claim = {"value": scalar(value)}
    claim.update({k: v for k, v in (("unit", unit), ("as_of", as_of)) if v})
    stored = claim["value"] if len(claim) == 1 else claim
    snapshot = wiki.snapshot()  # one read: the holders and the proposal's base
    holders = current(wiki, key, snapshot)
    probe = Fact(key, claim["value"], unit, as_of)
    if any(h.same_claim == probe.same_claim and h.as_of == as_of for h in holders):
        return authoring.Authored(None, existing=holders[0].path)
    if len(holders) > 1:
        raise ConfigError(f"fact {key!r} is held by {len(holders)} entries "
                          f"({', '.join(h.path for h in holders)}); resolve the "
                          "contradiction (wiki lint --select W003) first")
    line = f"{key} is {probe.text}."
    if not holders:
        meta = {"title": key, "summary": line, "type": "fact", "facts": {key: stored}}
        text = "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + \
            f"---\n{line}\n"
        return authoring.new_entry(wiki, text.encode(), category=category,
                                   source_name=f"{key}.md", author=author,
                                   base=snapshot.commit)
    fresh = successor(snapshot.entry(holders[0].path), holders[0], stored,
                      claim["value"], line)
    return authoring.supersede_entry(wiki, holders[0].entry_id, _render(fresh, fresh.body),
                                     author=author, base=snapshot.commit)


def successor(old: Entry, holder: Fact, stored, value, line: str) -> Entry:
    """What replaces ``old`` when ``holder``'s key takes ``value`` (``stored`` is the
    frontmatter form, plain or ``{value, unit, as_of}``): ``old``'s fields without its
    id, dates and status, the new value, and the claim ``line`` first in the summary (of a
    fact) and the body (see :func:`_restated`). The caller gives it an id."""
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
    (as a whole word, at least two characters) replaced by the new one, so an answer
    quoting the entry never repeats the superseded value. The reviewer sees the change in
    the proposal's diff."""
    import re

    old_text, new_text = " ".join(str(old).split()), " ".join(str(new).split())
    if len(old_text) >= 2:
        body = re.sub(rf"(?<![\w.]){re.escape(old_text)}(?![\w]|\.\d)", new_text, body)
    return f"{line}\n\n{body.lstrip()}"


def _render(entry: Entry, body: str) -> bytes:
    from wiki.store.frontmatter import render

    return render(entry.meta, body).encode("utf-8")


def scalar(text: str):
    """``"42"`` -> 42, ``"0.5"`` -> 0.5, other text as is (so YAML keeps numbers numbers)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
