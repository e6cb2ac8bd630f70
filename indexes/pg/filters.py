""":class:`indexes.retrieval.filters.Filters` as a PostgreSQL condition over ``wiki_docs d``
(psycopg
``%s`` parameters), the same meaning as :meth:`indexes.retrieval.filters.Filters.sql` has in SQLite:
status, category folder prefixes, every tag present, the document's own ``scope`` field,
and expiry at ``valid_at`` from ``valid_until`` or ``dated`` plus the type's lifetime."""

from __future__ import annotations

from dataclasses import dataclass

from indexes.retrieval.filters import Filters


def pg_sql(filters: Filters | None, *, default_active: bool = True) -> tuple[str, list]:
    """``(condition, parameters)`` for ``filters`` (``None``: the default Filters, active
    entries only, unless ``default_active`` is False: no restriction)."""
    if filters is None:
        filters = Filters() if default_active else Filters(statuses=None)
    clauses: list[str] = []
    params: list = []
    if filters.statuses is not None:
        clauses.append("d.status = ANY(%s)")
        params.append(list(filters.statuses))
    if filters.category:
        clauses.append(_under(filters.category, params))
    if filters.categories:
        clauses.append("(" + " OR ".join(_under(c, params) for c in filters.categories) + ")")
    if filters.tags:
        clauses.append("d.tag_list @> %s")
        params.append(list(filters.tags))
    if filters.scope is not None:
        clauses.append("d.scope = %s")
        params.append(filters.scope)
    if filters.valid_at is not None:
        clause, values = pg_expiry_sql(filters)
        clauses.append(clause)
        params.extend(values)
    return (" AND ".join(clauses) or "TRUE"), params


def pg_expiry_sql(filters: Filters) -> tuple[str, list]:
    """The expiry part of :func:`pg_sql` alone (``filters.valid_at`` set): kept while
    ``valid_until`` is later, or ``dated`` plus the type's lifetime is."""
    lifetime = []
    by_type: list = []
    for doc_type, days in filters.lifetimes:
        lifetime.append("(d.doc_type = %s AND d.dated::timestamptz "
                        "+ make_interval(secs => %s) <= %s::timestamptz)")
        by_type.extend([doc_type, float(days) * 86400.0, filters.valid_at])
    return ("(CASE WHEN d.valid_until <> '' THEN d.valid_until > %s "
            "WHEN d.dated = '' THEN TRUE ELSE NOT (" + (" OR ".join(lifetime) or "FALSE")
            + ") END)"), [filters.valid_at, *by_type]


def _under(folder: str, params: list) -> str:
    prefix = folder.strip("/")
    params.extend([prefix, prefix + "/"])
    return "(d.category = %s OR starts_with(d.category, %s))"


@dataclass(frozen=True)
class MaskFilter:
    """A filter split for the masks an engine keeps between searches: ``where`` and
    ``params``, the condition without expiry (what it keeps changes only with the
    documents); ``expiry`` (condition and parameters, ``None``: no expiry), checked each
    search over the documents that can expire (``expiring_types``: the types with a
    lifetime; :func:`can_expire_keys`)."""

    where: str
    params: list
    expiry: tuple[str, list] | None = None
    expiring_types: tuple[str, ...] = ()


def mask_filter(filters: Filters | None) -> MaskFilter:
    """``filters`` (``None``: the default) as a :class:`MaskFilter`."""
    filters = filters or Filters()
    where, params = pg_sql(filters.timeless())
    if filters.valid_at is None:
        return MaskFilter(where, params)
    return MaskFilter(where, params, pg_expiry_sql(filters),
                      tuple(doc_type for doc_type, _ in filters.lifetimes))


def can_expire_keys(conn, space: str, types: tuple[str, ...]) -> list[str]:
    """Keys of the space's documents an expiry can leave out: a ``valid_until``, or a
    ``dated`` time and one of the ``types`` with a lifetime (by default only episodes)."""
    return [r[0] for r in conn.execute(
        "SELECT d.key FROM wiki_docs d WHERE d.space = %s AND (d.valid_until <> '' OR "
        "(d.dated <> '' AND d.doc_type = ANY(%s)))", (space, list(types)))]


def expired_keys(conn, space: str, expiry: tuple[str, list], keys: list[str]) -> set[str]:
    """Those of ``keys`` the ``expiry`` condition leaves out now."""
    if not keys:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT d.key FROM wiki_docs d WHERE d.space = %s AND d.key = ANY(%s) AND "
        f"NOT coalesce(({expiry[0]}), false)", [space, keys, *expiry[1]])}
