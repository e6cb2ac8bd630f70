""":class:`indexes.retrieval.filters.Filters` as a PostgreSQL condition over ``wiki_docs d``
(psycopg
``%s`` parameters), the same meaning as :meth:`indexes.retrieval.filters.Filters.sql` has in SQLite:
status, category folder prefixes, every tag present, the document's own ``scope`` field,
and expiry at ``valid_at`` from ``valid_until`` or ``dated`` plus the type's lifetime."""

from __future__ import annotations

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
        lifetime = []
        by_type: list = []
        for doc_type, days in filters.lifetimes:
            lifetime.append("(d.doc_type = %s AND d.dated::timestamptz "
                            "+ make_interval(secs => %s) <= %s::timestamptz)")
            by_type.extend([doc_type, float(days) * 86400.0, filters.valid_at])
        clauses.append("(CASE WHEN d.valid_until <> '' THEN d.valid_until > %s "
                       "WHEN d.dated = '' THEN TRUE ELSE NOT (" + (" OR ".join(lifetime)
                                                                   or "FALSE") + ") END)")
        params.extend([filters.valid_at, *by_type])
    return (" AND ".join(clauses) or "TRUE"), params


def _under(folder: str, params: list) -> str:
    prefix = folder.strip("/")
    params.extend([prefix, prefix + "/"])
    return "(d.category = %s OR starts_with(d.category, %s))"
