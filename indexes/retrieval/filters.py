"""Restrictions applied inside every retrieval leg, before ranking and fusion.

A filter is one SQL condition over the ``docs`` table (alias ``d``), so the alias, BM25,
trigram and vector legs all see exactly the same set of documents: a document outside a
scope or past its expiry can never reach the fusion, whatever leg would have found it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Filters:
    """Restrictions applied inside every leg, before ranking and fusion.

    ``statuses``: allowed entry statuses (``None`` = all); ``category``: a folder prefix
    (``"travel"`` keeps ``travel`` and ``travel/...``); ``tags``: every tag must be present;
    ``scope``: the document's ``scope`` column must equal it exactly (``None``: any scope);
    ``categories``: folder prefixes, any of which keeps a document (routing's hard scope,
    :mod:`indexes.retrieval.routing`; ``()``: no restriction), on top of ``category``.

    Expiry: with ``valid_at`` (an ISO 8601 UTC time ``YYYY-MM-DDTHH:MM:SSZ``), a document
    is kept only while it is valid then: its ``valid_until`` (same format) is later than
    ``valid_at``, or, without one, its ``dated`` time plus the lifetime of its ``doc_type``
    in ``lifetimes`` (``(type, days)`` pairs; a type not listed never expires) is later.
    ``valid_at = None`` keeps expired documents.
    """

    statuses: tuple[str, ...] | None = ("active",)
    category: str | None = None
    tags: tuple[str, ...] = ()
    scope: str | None = None
    valid_at: str | None = None
    lifetimes: tuple[tuple[str, float], ...] = ()
    categories: tuple[str, ...] = ()

    @property
    def narrow(self) -> bool:
        """Whether the filter keeps a chosen part of the documents (a scope, folders,
        tags) rather than nearly all of them (statuses, expiry): ranking then applies it
        as it goes instead of ranking everything first."""
        return bool(self.scope is not None or self.category or self.categories or self.tags)

    def timeless(self) -> Filters:
        """The same filter without expiry (``valid_at = None``): what it keeps changes only
        with the documents, so an engine can keep its rows between searches; the expired
        ones at ``valid_at`` are then taken out (:meth:`expiry_sql` over the few documents
        that can expire: ``valid_until`` or ``dated`` set). A search passes the current
        second as ``valid_at``, so a cache keyed by it never served twice."""
        return replace(self, valid_at=None)

    def sql(self) -> tuple[str, list]:
        """A SQL condition over table alias ``d`` and its parameters."""
        clauses: list[str] = []
        params: list = []
        if self.statuses is not None:
            clauses.append(f"d.status IN ({','.join('?' * len(self.statuses))})")
            params.extend(self.statuses)
        if self.category:
            clauses.append(_under(self.category, params))
        if self.categories:
            clauses.append("(" + " OR ".join(_under(c, params) for c in self.categories) + ")")
        for tag in self.tags:
            clauses.append("EXISTS (SELECT 1 FROM json_each(d.extra, '$.tags') WHERE value = ?)")
            params.append(tag)
        if self.scope is not None:
            clauses.append("d.scope = ?")
            params.append(self.scope)
        if self.valid_at is not None:
            clause, values = self.expiry_sql()
            clauses.append(clause)
            params.extend(values)
        return (" AND ".join(clauses) or "1"), params

    def can_expire_sql(self) -> tuple[str, list]:
        """The documents the expiry condition can leave out at some time (the others are
        kept at any ``valid_at``): a ``valid_until``, or a ``dated`` time and a type with
        a lifetime; a condition over alias ``d`` and its parameters."""
        types = [doc_type for doc_type, _ in self.lifetimes]
        typed = (f" OR (d.dated != '' AND d.doc_type IN ({','.join('?' * len(types))}))"
                 if types else "")
        return f"(d.valid_until != ''{typed})", types

    def expiry_sql(self) -> tuple[str, list]:
        """Kept when not expired at ``valid_at`` (see the class docstring): a condition over
        alias ``d`` and its parameters (``valid_at`` must be set)."""
        params: list = [self.valid_at]
        lifetime = []
        for doc_type, days in self.lifetimes:
            lifetime.append("(d.doc_type = ? AND julianday(d.dated) + ? <= julianday(?))")
            params.extend([doc_type, float(days), self.valid_at])
        by_type = " OR ".join(lifetime) or "0"
        return (f"(CASE WHEN d.valid_until != '' THEN d.valid_until > ? "
                f"WHEN d.dated = '' THEN 1 ELSE NOT ({by_type}) END)"), params




def _under(folder: str, params: list) -> str:
    """The condition "``d.category`` is ``folder`` or below it"; appends its parameters."""
    prefix = folder.strip("/")
    params.extend([prefix, len(prefix) + 1, prefix + "/"])
    return "(d.category = ? OR substr(d.category, 1, ?) = ?)"
