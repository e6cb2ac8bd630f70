"""Typed reads of the search database's document rows (table ``docs``), for callers that
need a document's stored fields rather than a search: the hits of given keys, titles, the
walk's cards, the re-scoring attributes, per-status counts. Lists of keys travel as one
JSON parameter (``key IN (SELECT value FROM json_each(?))``), never as a built list of
placeholders."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import NamedTuple

from indexes.documents import Hit

IN_KEYS = "key IN (SELECT value FROM json_each(?))"
"""The ``WHERE`` clause selecting the keys of one :func:`keys_json` parameter."""


def keys_json(keys: Iterable[str]) -> str:
    """``keys`` as the one JSON array parameter of :data:`IN_KEYS`."""
    return json.dumps(list(keys), ensure_ascii=False)


class Card(NamedTuple):
    """The fields of a document the LLM walk shows the model (as stored: normalised;
    ``tags`` space-separated, ``aliases`` one per line)."""

    title: str
    summary: str
    tags: str
    aliases: str
    body: str


class Attributes(NamedTuple):
    """What re-scoring reads of a document: its ``doc_type``, its ``dated`` ISO date
    (``""`` when none) and its ``extra`` attributes (decoded JSON)."""

    doc_type: str
    dated: str
    extra: dict


class DocRows:
    """Reads of the ``docs`` table over an open connection (owned by
    :class:`indexes.sqlite.engine.SearchIndex`, which creates one as ``index.docs``)."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def hits(self, keys: Iterable[str]) -> list[Hit]:
        """Unranked hits (score 0.0, rank 0) of the stored documents among ``keys``,
        sorted by key; unknown keys are left out."""
        rows = self.conn.execute(
            "SELECT key, doc_id, title, summary, category, status FROM docs WHERE "
            f"{IN_KEYS} ORDER BY key", [keys_json(keys)]).fetchall()
        return [Hit(*row, 0.0) for row in rows]

    def titles(self, keys: Iterable[str]) -> dict[str, str]:
        """``key -> title`` (as stored) of the documents among ``keys``."""
        return dict(self.conn.execute(f"SELECT key, title FROM docs WHERE {IN_KEYS}",
                                      [keys_json(keys)]))

    def cards(self, keys: Iterable[str]) -> dict[str, Card]:
        """``key -> Card`` of the documents among ``keys``."""
        return {key: Card(*rest) for key, *rest in self.conn.execute(
            f"SELECT key, title, summary, tags, aliases, body FROM docs WHERE {IN_KEYS}",
            [keys_json(keys)])}

    def attributes(self, keys: Iterable[str]) -> dict[str, Attributes]:
        """``key -> Attributes`` of the documents among ``keys``."""
        return {key: Attributes(doc_type, dated, json.loads(extra))
                for key, doc_type, dated, extra in self.conn.execute(
                    f"SELECT key, doc_type, dated, extra FROM docs WHERE {IN_KEYS}",
                    [keys_json(keys)])}

    def categories(self) -> dict[str, str]:
        """``key -> category`` of every document."""
        return dict(self.conn.execute("SELECT key, category FROM docs"))

    def tags(self) -> list[str]:
        """Every tag some document carries, sorted."""
        return [str(row[0]) for row in self.conn.execute(
            "SELECT DISTINCT t.value FROM docs d, json_each(d.extra, '$.tags') t "
            "ORDER BY t.value")]

    def scopes(self) -> list[str]:
        """Every non-empty scope of the documents, sorted."""
        return [row[0] for row in self.conn.execute(
            "SELECT DISTINCT scope FROM docs WHERE scope != '' ORDER BY scope")]

    def status_counts(self) -> dict[str, int]:
        """``status -> number of documents`` (only statuses that occur)."""
        return dict(self.conn.execute("SELECT status, count(*) FROM docs GROUP BY status"))

    def duplicate_doc_ids(self) -> list[str]:
        """The ``doc_id`` values stored under more than one key, sorted."""
        return [row[0] for row in self.conn.execute(
            "SELECT doc_id FROM docs GROUP BY doc_id HAVING count(*) > 1 ORDER BY doc_id")]
