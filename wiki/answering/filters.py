"""The search filters: built from the options (:func:`filters_for`), and checked to name
something: a filter that names nothing in the wiki is a usage error, not an evidence gap.

``wiki ask ... --category nosuch`` used to search an empty set, answer "the wiki does not
say" and record the question in ``gaps.jsonl``: the team was told the wiki lacks what it
has. :func:`check_filters` runs before any leg: when the filters the user named
(``category``, ``tags``, ``scope``) match no document of the index at all, whatever its
status or validity, it raises :class:`NoMatchingEntriesError` naming the value and the
values that exist. Status and expiry are not part of the check: a category whose entries
are all superseded or expired is a real gap of current knowledge (docs/decisions.md,
"Filters that match nothing").
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from indexes.backend import IndexBackend
from indexes.retrieval.filters import Filters
from wiki.errors import UsageError, quoted
from wiki.store.lifetimes import iso

SHOWN = 12
"""At most this many existing values are listed in the message (then ``...``)."""


def filters_for(*, include_superseded: bool = False, category: str | None = None,
                tags: tuple[str, ...] = (), scope: str | None = None,
                include_expired: bool = False) -> Filters:
    """Search filters: active entries only unless ``include_superseded`` (then
    superseded ones too; retracted and draft entries are never answers); only ``scope``
    when given; expired entries (:mod:`wiki.store.lifetimes`) left out unless
    ``include_expired`` (validity is checked now, or at ``--as-of``)."""
    statuses = ("active", "superseded") if include_superseded else ("active",)
    return Filters(statuses=statuses, category=category or None, tags=tuple(tags),
                   scope=scope, valid_at=None if include_expired else iso(_now()))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class NoMatchingEntriesError(UsageError):
    """The search filters the user named match no entry of the wiki (CLI exit 2; nothing
    is searched or recorded as a gap). ``option`` is the filter (``category``, ``tag``,
    ``scope``, or ``filters`` for a combination), ``value`` what was given."""

    def __init__(self, message: str, *, option: str, value: str):
        super().__init__(message)
        self.option = option
        self.value = value


def check_filters(index: IndexBackend, filters: Filters | None) -> None:
    """Raise :class:`NoMatchingEntriesError` when the user-named parts of ``filters``
    (``category``, ``tags``, ``scope``) match no document of ``index`` (any status, any
    validity). Each value is checked alone first, so the message names the one that
    matches nothing and lists the values that exist; when each matches something but
    not together, the message names the combination. Nothing named: nothing checked."""
    if filters is None:
        return
    named = Filters(statuses=None, category=filters.category, tags=filters.tags,
                    scope=filters.scope)
    if named == Filters(statuses=None) or index.count(named):
        return
    base = Filters(statuses=None)
    if filters.category and not index.count(replace(base, category=filters.category)):
        raise NoMatchingEntriesError(
            f"no entries in category {quoted(filters.category)} "
            f"(categories: {_listed(_categories(index))})",
            option="category", value=filters.category)
    for tag in filters.tags:
        if not index.count(replace(base, tags=(tag,))):
            raise NoMatchingEntriesError(
                f"no entries tagged {quoted(tag)} (tags: {_listed(_tags(index))})",
                option="tag", value=tag)
    if filters.scope is not None and not index.count(replace(base, scope=filters.scope)):
        raise NoMatchingEntriesError(
            f"no entries in scope {quoted(filters.scope)} (scopes: {_listed(_scopes(index))})",
            option="scope", value=filters.scope)
    asked = ", ".join(
        [f"category {quoted(filters.category)}"] * bool(filters.category)
        + [f"tag {quoted(tag)}" for tag in filters.tags]
        + [f"scope {quoted(filters.scope)}"] * (filters.scope is not None))
    raise NoMatchingEntriesError(f"no entry matches {asked} together",
                                 option="filters", value=asked)


def _listed(values: list[str]) -> str:
    """``values`` comma-separated, at most :data:`SHOWN` of them, each one line and clipped
    to 40 characters (:func:`~wiki.errors.quoted`, less its quotes: stored text, possibly
    hostile); ``none`` when empty."""
    if not values:
        return "none"
    more = ", ..." if len(values) > SHOWN else ""
    return ", ".join(quoted(value, 40)[1:-1] for value in values[:SHOWN]) + more


def _categories(index: IndexBackend) -> list[str]:
    """The top-level folders of the documents (what ``--category`` is usually given),
    sorted; the root folder (``''``) is left out."""
    return sorted({category.split("/")[0] for category in index.docs.categories().values()
                   if category})


def _tags(index: IndexBackend) -> list[str]:
    """Every tag some document carries, sorted."""
    return index.docs.tags()


def _scopes(index: IndexBackend) -> list[str]:
    """Every non-empty scope of the documents, sorted."""
    return index.docs.scopes()
