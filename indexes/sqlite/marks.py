"""Revalidation marks: documents whose sources changed after they were written.

Set by the git post-commit hook (``wiki.lint.hook``) in the derived database, never on the
branch; cleared when the document itself is re-indexed (it was updated) or deleted.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable


def mark_sources(conn: sqlite3.Connection, uris: Iterable[str], commit: str,
                 when: str) -> list[str]:
    """Mark the documents citing any of ``uris`` (in ``extra.sources``); returns their keys."""
    uris = sorted(set(uris))
    if not uris:
        return []
    rows = conn.execute(
        "SELECT DISTINCT d.key, json_extract(s.value, '$.uri') FROM docs d, "
        "json_each(d.extra, '$.sources') s WHERE json_extract(s.value, '$.uri') IN "
        "(SELECT value FROM json_each(?))", [json.dumps(uris, ensure_ascii=False)]).fetchall()
    conn.executemany("INSERT OR REPLACE INTO revalidate(key, uri, commit_sha, marked_at) "
                     "VALUES (?, ?, ?, ?)", [(key, uri, commit, when) for key, uri in rows])
    return sorted({key for key, _ in rows})


def marks(conn: sqlite3.Connection, keys: Iterable[str] | None = None) -> dict[str, list[dict]]:
    """``key -> [{uri, commit, marked_at}]`` of marked documents (all, or only ``keys``)."""
    wanted = None if keys is None else set(keys)
    out: dict[str, list[dict]] = {}
    for key, uri, commit, when in conn.execute(
            "SELECT key, uri, commit_sha, marked_at FROM revalidate ORDER BY key, uri"):
        if wanted is None or key in wanted:
            out.setdefault(key, []).append({"uri": uri, "commit": commit, "marked_at": when})
    return out
