"""Typed relations between entries (``relations:`` in the frontmatter): both directions of
one entry for ``wiki show``, and the cycles lint W016 reports.

Types: ``depends_on``, ``refines``, ``derived_from`` (directed, acyclic by meaning: an
entry cannot, through a chain, depend on, refine or derive from itself),
``conflicts_with`` and ``related_to`` (symmetric in meaning; cycles are fine).
"""

from __future__ import annotations

from dataclasses import dataclass

from wiki.store.entry import Entry

ACYCLIC = ("depends_on", "refines", "derived_from")


@dataclass(frozen=True)
class Link:
    """One edge seen from an entry: relation ``kind``, the other entry's ``entry_id`` and,
    when it exists, its ``path``, ``title`` and ``status``."""

    kind: str
    entry_id: str
    path: str = ""
    title: str = ""
    status: str = ""


def links(entries: list[Entry], entry: Entry) -> tuple[list[Link], list[Link]]:
    """``(outgoing, incoming)`` relations of ``entry`` among ``entries``; an outgoing
    target no entry has keeps an empty path (lint W006 reports it)."""
    by_id = {e.id: e for e in entries}

    def link(kind: str, other_id: str) -> Link:
        other = by_id.get(other_id)
        return Link(kind, other_id, other.path if other else "",
                    other.title if other else "", other.status if other else "")

    outgoing = [link(kind, target) for kind, targets in sorted(entry.relations.items())
                for target in targets]
    incoming = [link(kind, other.id) for other in entries if other.id != entry.id
                for kind, targets in sorted(other.relations.items()) if entry.id in targets]
    return outgoing, incoming


def cycles(entries: list[Entry], kind: str) -> list[list[str]]:
    """Cycles of relation ``kind`` as lists of entry ids (each strongly connected group of
    more than one entry, or an entry related to itself), sorted. Tarjan's algorithm
    (SIAM J. Comput. 1972), iterative."""
    graph = {e.id: [t for t in e.relations.get(kind, [])] for e in entries}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = [t for t in graph.get(node, []) if t in graph]
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph.get(node, []):
                    found.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)
