"""Types and lifetimes: when an entry stops being part of default answers.

An entry's expiry is its ``valid_until`` when it has one (a bare date lasts to the end of
that day, UTC); otherwise its ``updated`` (else ``created``) time plus the lifetime of its
``type`` from ``wiki.toml`` ``[lifetimes]`` (``"90d"``, ``"12w"``, ``"1y"`` = 365 days,
``"never"``). Decisions never expire by default; episodes after 90 days. Expired entries
drop out of search and ask unless ``--include-expired`` (a filter inside every leg:
:class:`indexes.retrieval.filters.Filters`) and lint W008 lists them.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from wiki.config import LifetimesConfig, WikiConfig, parse_duration

if TYPE_CHECKING:
    from wiki.store.entry import Entry

def lifetimes(config: WikiConfig | LifetimesConfig) -> dict[str, float]:
    """``type -> lifetime in days`` for the types that expire."""
    section = config.lifetimes if isinstance(config, WikiConfig) else config
    days = {t: parse_duration(v) for t, v in vars(section).items()}
    return {t: d for t, d in days.items() if d is not None}


def as_time(value: Any, *, end_of_day: bool = False) -> dt.datetime | None:
    """An aware UTC time from a frontmatter date/time (``None`` when absent or not a
    date). A bare date is midnight, or 23:59:59 with ``end_of_day``."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, dt.date):
        when = dt.datetime.combine(value, dt.time(23, 59, 59) if end_of_day else dt.time())
    else:
        text = str(value).strip()
        try:
            if len(text) == 10:
                return as_time(dt.date.fromisoformat(text), end_of_day=end_of_day)
            when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    return utc(when)


EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)
LATEST = dt.datetime.max.replace(tzinfo=dt.UTC)


def utc(when: dt.datetime) -> dt.datetime:
    """``when`` as an aware UTC time (a naive one is taken as UTC). A time whose UTC form
    falls outside years 1-9999 (``9999-12-31T23:59:59-14:00``) is clamped to
    :data:`EARLIEST` / :data:`LATEST`: as far in the past or future as a time can be,
    never an ``OverflowError`` from every command that reads the entry."""
    if when.tzinfo is None:
        return when.replace(tzinfo=dt.UTC)
    try:
        return when.astimezone(dt.UTC)
    except OverflowError:
        return LATEST if when.year > 1 else EARLIEST


def later(start: dt.datetime, days: float) -> dt.datetime:
    """``start`` plus ``days``, or :data:`LATEST` when that is past year 9999."""
    try:
        return start + dt.timedelta(days=days)
    except OverflowError:
        return LATEST


def iso(when: dt.datetime | None) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` (UTC), ``""`` for ``None``: the form stored in the index,
    which sorts as text in time order."""
    return "" if when is None else utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def dated(entry: Entry) -> dt.datetime | None:
    """The time an entry's lifetime counts from: ``updated``, else ``created``."""
    return as_time(entry.meta.get("updated")) or as_time(entry.meta.get("created"))


def expiry(entry: Entry, days: dict[str, float]) -> tuple[dt.datetime | None, str]:
    """``(when the entry expires, why)``; ``(None, "")`` when it never does. ``days`` is
    :func:`lifetimes` of the wiki's config."""
    until = as_time(entry.meta.get("valid_until"), end_of_day=True)
    if until is not None:
        return until, f"valid_until {entry.meta.get('valid_until')}"
    start = dated(entry)
    if start is None or entry.type not in days:
        return None, ""
    lifetime = days[entry.type]
    return (later(start, lifetime),
            f"{entry.type} lifetime {lifetime:g} days from {iso(start)}")

