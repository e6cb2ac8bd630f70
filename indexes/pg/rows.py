"""Typed reads of one space's document rows in PostgreSQL: the same methods as
:class:`indexes.sqlite.rows.DocRows` (``index.docs``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from indexes.documents import Hit
from indexes.sqlite.rows import Attributes, Card

HIT_COLUMNS = "d.key, d.doc_id, d.title, d.summary, d.category, d.status"


class PgDocRows:
    """Reads of ``wiki_docs`` for one ``space`` over a psycopg connection."""

    def __init__(self, conn, space: str):
        self.conn, self.space = conn, space

    def _rows(self, columns: str, keys: Iterable[str], order: str = "",
              where: str = "TRUE", params: Sequence = ()):
        return self.conn.execute(
            f"SELECT {columns} FROM wiki_docs d WHERE d.space = %s AND d.key = ANY(%s) "
            f"AND {where} {order}", (self.space, list(keys), *params)).fetchall()

    def hits(self, keys: Iterable[str], where: str = "TRUE",
             params: Sequence = ()) -> list[Hit]:
        """Unranked hits (score 0.0) of the stored documents among ``keys`` that pass the
        condition ``where`` over ``wiki_docs d`` (psycopg parameters ``params``), by key."""
        return [Hit(*row, 0.0) for row in self._rows(HIT_COLUMNS, keys, "ORDER BY d.key",
                                                      where, params)]

    def titles(self, keys: Iterable[str]) -> dict[str, str]:
        """``key -> title`` of the documents among ``keys``."""
        return dict(self._rows("d.key, d.title", keys))

    def cards(self, keys: Iterable[str]) -> dict[str, Card]:
        """``key -> Card`` of the documents among ``keys``."""
        return {key: Card(*rest) for key, *rest in self._rows(
            "d.key, d.title, d.summary, d.tags, d.aliases, d.body", keys)}

    def attributes(self, keys: Iterable[str]) -> dict[str, Attributes]:
        """``key -> Attributes`` of the documents among ``keys``."""
        return {key: Attributes(doc_type, dated, extra) for key, doc_type, dated, extra
                in self._rows("d.key, d.doc_type, d.dated, d.extra", keys)}

    def categories(self) -> dict[str, str]:
        """``key -> category`` of every document."""
        return dict(self.conn.execute(
            "SELECT key, category FROM wiki_docs WHERE space = %s", (self.space,)).fetchall())

    def tags(self) -> list[str]:
        """Every tag some document carries, sorted."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT t COLLATE \"C\" AS t FROM wiki_docs, unnest(tag_list) t "
            "WHERE space = %s "
            "ORDER BY 1", (self.space,))]

    def scopes(self) -> list[str]:
        """Every non-empty scope of the documents, sorted."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT scope COLLATE \"C\" FROM wiki_docs WHERE space = %s AND scope <> '' "
            "ORDER BY 1", (self.space,))]

    def status_counts(self) -> dict[str, int]:
        """``status -> number of documents``."""
        return dict(self.conn.execute(
            "SELECT status, count(*) FROM wiki_docs WHERE space = %s GROUP BY status",
            (self.space,)).fetchall())

    def duplicate_doc_ids(self) -> list[str]:
        """The ``doc_id`` values stored under more than one key, sorted."""
        return [r[0] for r in self.conn.execute(
            "SELECT doc_id FROM wiki_docs WHERE space = %s GROUP BY doc_id HAVING "
            "count(*) > 1 ORDER BY doc_id COLLATE \"C\"", (self.space,))]
