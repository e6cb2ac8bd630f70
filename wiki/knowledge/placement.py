"""Placing distilled drafts in the wiki: a new entry, an update, or a supersession.

A draft (:class:`wiki.knowledge.distill.AtomicDraft`) never becomes a near-copy of an entry that
already says it. In this order, against the active entries (as changed so far in this run):

1. **Same fact key.** An entry holding one of the draft's ``facts`` keys with the *same*
   value is updated; with a *different* value it is superseded
   (:func:`wiki.knowledge.facts.successor`
   and :func:`wiki.knowledge.authoring.supersession`: the old entry is kept, ``superseded``),
   unless the new value is one the holder replaced (it held it before and was changed in
   place, as `wiki facts set` does, or an entry of its supersession chain held it: a
   correction), which only a person brings back: the draft is dropped. Keys
   held by several entries are a contradiction (lint W003): the draft is dropped.
2. **Near-duplicate text.** Among the first :data:`CANDIDATES` hits of a search for the
   draft's title and claim (the configured lexical and vector legs, never the LLM) and the
   entries made earlier in this run, the first entry such that its text supports the
   draft's claim at :data:`DUPLICATE_SUPPORT` or more (every number, and that share of its
   content words: :func:`wiki.llm.answer.support`) *and* the draft supports the entry's
   summary (or title) at :data:`REVERSE_SUPPORT` is updated. Both directions, so a long
   page that merely contains the claim is not its duplicate.
3. Otherwise the draft is a **new** entry.

An update adds the draft's sources to the entry (a source with the same uri is refreshed)
and its facts keys the entry lacks; the text written by people is left as it is. An update
that changes nothing leaves the entry ``known``. Nothing here writes to the branch: the
caller proposes :attr:`Placer.changes` as one proposal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wiki.knowledge.authoring import supersession
from wiki.knowledge.facts import facts_of, held_before, successor
from wiki.llm.answer import MIN_SUPPORT, support
from wiki.store.entry import Entry, new_id, now_iso
from wiki.store.slug import slugify, unique_path
from wiki.store.workspace import Wiki

CANDIDATES = 5
"""Search hits compared with each draft."""
DUPLICATE_SUPPORT = 0.8
"""Share of the draft's content words an existing entry must hold to be its duplicate."""
REVERSE_SUPPORT = MIN_SUPPORT
"""Share of the existing entry's summary words the draft must hold (the other direction)."""
_MARKS = re.compile(r"\s*\[\d+\]")


@dataclass
class Placed:
    """Where one draft went: ``kind`` (``new``, ``update``, ``supersede``, ``known`` or
    ``dropped``), the ``path`` written (the entry, or the successor) and, for an update,
    supersession or known claim, the existing entry's ``target`` path; ``why`` for drops."""

    kind: str
    title: str
    path: str = ""
    target: str = ""
    why: str = ""


@dataclass
class Placer:
    """Places drafts against ``wiki`` (its head when made) into :attr:`changes` (path ->
    bytes). ``taken`` paths and ``ids`` are shared with a caller that adds entries too
    (ingest); both grow as entries are made."""

    wiki: Wiki
    taken: set[str] = field(default_factory=set)
    ids: set[str] = field(default_factory=set)
    changes: dict[str, bytes] = field(default_factory=dict)
    placed: list[Placed] = field(default_factory=list)
    base: str | None = None
    """The wiki commit to place against (default: the head when made); a proposal of
    :attr:`changes` is built on ``self.snapshot.commit``."""

    def __post_init__(self) -> None:
        self.snapshot = self.wiki.snapshot(self.base)
        entries = self.snapshot.entries()[0]
        self.taken |= set(self.snapshot.files)
        self.ids |= {e.id for e in entries}
        self._current = {e.path: e for e in entries}
        self._made: list[str] = []
        legs = self.snapshot.config().search.legs
        self._legs = tuple(leg for leg in legs if leg != "llm") or ("alias", "bm25")
        self.stamp = now_iso()

    def place(self, draft, *, category: str, sources: list[dict], seed: str,
              relations: dict | None = None) -> Placed:
        """Place ``draft`` (:class:`wiki.knowledge.distill.AtomicDraft`) citing ``sources`` (entry
        ``sources:`` mappings) as a new entry in ``category``, an update or a supersession
        (module docstring). ``seed`` makes a new entry's id reproducible."""
        result = self._by_fact(draft, sources, seed) or self._by_text(draft, sources) or \
            self._new(draft, _cited(draft.body, sources), category, sources, seed, relations)
        self.placed.append(result)
        return result

    # -- the three rules -----------------------------------------------------------------
    def _by_fact(self, draft, sources: list[dict], seed: str) -> Placed | None:
        for key, value in draft.facts.items():
            holders = [(e, facts_of(e)[key]) for e in self._active() if key in facts_of(e)]
            if len(holders) > 1:
                return Placed("dropped", draft.title, why=f"fact {key!r} is held by "
                              f"{len(holders)} entries (resolve lint W003 first)")
            if not holders:
                continue
            old, held = holders[0]
            if held.same_claim == (" ".join(str(value).split()), held.unit):
                return self._update(old, draft, sources)
            replaced = self._replaced(old, key, value, held.unit)
            if replaced is not None:
                return Placed("dropped", draft.title, why=(
                    f"fact {key!r} = {' '.join(str(value).split())} is the value {old.path} "
                    f"replaced ({replaced}); a replaced value comes back "
                    f"only by hand: `wiki facts set {key} VALUE`"))
            fresh = successor(old, held, value if not held.unit else
                              {"value": value, "unit": held.unit}, value, draft.summary)
            fresh = fresh.updated_with(id=new_id(seed, self.ids),
                                       sources=_merged(fresh.meta.get("sources"), sources))
            fresh = fresh.updated_with(body=_cited(fresh.body, sources, skip=fresh.body))
            new, retired = supersession(old, fresh, self.taken, self.stamp)
            self._write(new)
            self._write(retired)
            return Placed("supersede", draft.title, new.path, old.path)
        return None

    def _by_text(self, draft, sources: list[dict]) -> Placed | None:
        from wiki.answering.search import SearchRequest, search

        said = _MARKS.sub("", draft.body)  # the claim(s), without [n] citation marks
        claim = f"{draft.title}. {said}"
        hits = search(self.wiki, SearchRequest(claim, limit=CANDIDATES, legs=self._legs,
                                               preferred_legs=True)).hits
        paths = list(dict.fromkeys([*(h.key for h in hits), *self._made]))
        for path in paths:
            entry = self._current.get(path)
            if entry is None or entry.status != "active":
                continue
            text = f"{entry.title}. {entry.summary} {entry.body}"
            if support(said, text) >= DUPLICATE_SUPPORT and \
                    support(entry.summary or entry.title, claim) >= REVERSE_SUPPORT:
                return self._update(entry, draft, sources)
        return None

    def _new(self, draft, body: str, category: str, sources: list[dict], seed: str,
             relations: dict | None) -> Placed:
        path = unique_path(category, slugify(draft.title), self.taken)
        self.taken.add(path)
        meta = {"id": new_id(seed, self.ids), "title": draft.title, "summary": draft.summary,
                "type": draft.type, "status": "active", "sources": sources,
                "relations": relations or None, "facts": draft.facts or None,
                "created": self.stamp, "updated": self.stamp}
        self._write(Entry(path, {k: v for k, v in meta.items() if v is not None}, body))
        self._made.append(path)
        return Placed("new", draft.title, path)

    def _update(self, old: Entry, draft, sources: list[dict]) -> Placed:
        facts = dict(old.meta.get("facts") or {})
        facts.update({k: v for k, v in draft.facts.items() if k not in facts})
        merged = _merged(old.meta.get("sources"), sources)
        if merged == (old.meta.get("sources") or []) and facts == (old.meta.get("facts") or {}):
            return Placed("known", draft.title, old.path, old.path)
        body = _cited(old.body, [s for s in merged if s not in (old.meta.get("sources") or [])],
                      skip=old.body)
        self._write(old.updated_with(body=body, sources=merged, facts=facts or None,
                                     updated=self.stamp))
        return Placed("update", draft.title, old.path, old.path)

    def _replaced(self, entry: Entry, key: str, value, unit: str) -> str | None:
        """Where ``entry`` replaced ``key`` at ``value``, in words: ``entry`` itself held it
        before (a value changed in place: :func:`wiki.knowledge.facts.held_before`), or an
        entry of its supersession chain (what it supersedes, and so on) did. Either is a
        correction a later text must not undo by itself; ``None`` when neither."""
        claim = (" ".join(str(value).split()), unit)
        if entry.path in self.snapshot.files:  # not one made in this run
            commit = held_before(self.wiki, entry, key, claim, self.snapshot.commit)
            if commit is not None:
                return f"it held it until commit {commit[:12]}"
        by_id = {e.id: e for e in self._current.values()}
        queue, seen = list(entry.meta.get("supersedes") or []), {entry.id}
        while queue:
            earlier = by_id.get(str(queue.pop(0)))
            if earlier is None or earlier.id in seen:
                continue
            seen.add(earlier.id)
            held = facts_of(earlier).get(key)
            if held is not None and held.same_claim == claim:
                return f"it supersedes {earlier.path}"
            queue += list(earlier.meta.get("supersedes") or [])
        return None

    # -- state ---------------------------------------------------------------------------
    def _active(self) -> list[Entry]:
        return [e for e in self._current.values() if e.status == "active"]

    def _write(self, entry: Entry) -> None:
        self._current[entry.path] = entry
        self.changes[entry.path] = entry.to_bytes()


def _merged(old: list | None, new: list[dict]) -> list[dict]:
    """``old`` source mappings with each of ``new`` replacing the one of the same uri (a
    refresh: new fingerprint and time) or appended."""
    out = [dict(s) for s in old or []]
    for source in new:
        same = [i for i, s in enumerate(out) if s.get("uri") == source["uri"]]
        if same:
            out[same[0]] = {**out[same[0]], **source}
        else:
            out.append(dict(source))
    return out


def _cited(body: str, sources: list[dict], *, skip: str = "") -> str:
    """``body`` followed by one ``[n]: uri`` line per source not already cited in ``skip``,
    numbered after the citations ``skip`` already has."""
    lines = [line for line in skip.splitlines() if line.startswith("[") and "]: " in line]
    cited = {line.split("]: ", 1)[1].strip() for line in lines}
    new = [s["uri"] for s in sources if s["uri"] not in cited]
    if not new:
        return body
    first = len(lines) + 1
    notes = "\n".join(f"[{first + i}]: {uri}" for i, uri in enumerate(new))
    glue = "\n" if lines and body.rstrip("\n").splitlines()[-1:] == lines[-1:] else "\n\n"
    return body.rstrip("\n") + glue + notes + "\n"

