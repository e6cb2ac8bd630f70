"""A seeded corpus whose words follow a Zipf law, and the definition of the BM25 leg's
answer (every match of the whole OR query scored by FTS5), shared by the tests of the
BM25 leg's fast paths (MaxScore, postings)."""

from __future__ import annotations

import random

from indexes.documents import Document
from indexes.retrieval.filters import Filters
from indexes.retrieval.query import match_expression
from indexes.sqlite.engine import SearchIndex

VOCABULARY = [f"w{i:03d}" for i in range(300)]
FILTERS = [Filters(), Filters(statuses=None), Filters(scope="s1"), Filters(category="c2"),
           Filters(tags=("t1",)), Filters(scope="s3", category="c0")]


def corpus(seed: int = 7, size: int = 700) -> list[Document]:
    """Documents of Zipf-distributed words in every column, some superseded, in five
    scopes, four folders and with tags."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** 1.1 for rank in range(len(VOCABULARY))]

    def words(count: int) -> str:
        return " ".join(rng.choices(VOCABULARY, weights, k=count))

    return [Document(f"c{i % 4}/d{i}.md", f"d{i}", words(rng.randint(1, 6)),
                     summary=words(rng.randint(0, 12)), body=words(rng.randint(5, 120)),
                     aliases=(words(2),) if i % 9 == 0 else (),
                     tags=("t1",) if i % 3 == 0 else ("t2",),
                     status="superseded" if i % 11 == 0 else "active",
                     category=f"c{i % 4}", scope=f"s{i % 5}")
            for i in range(size)]


def whole_query(index: SearchIndex, query: str, limit: int, filters: Filters, *,
                digits: int | None = 9) -> list[tuple[str, float]]:
    """The definition: every match of the OR query scored, filtered, best first; scores
    rounded to ``digits`` (``None``: as FTS5 gives them)."""
    where, params = filters.sql()
    weights = ", ".join(str(float(w)) for w in index.weights)
    rows = index.conn.execute(
        f"SELECT d.key, -bm25(docs_fts, {weights}) AS s FROM docs_fts CROSS JOIN docs d "
        f"ON d.rowid = docs_fts.rowid WHERE docs_fts MATCH ? AND {where} "
        "ORDER BY s DESC, d.rowid LIMIT ?", [match_expression(query), *params, limit])
    return [(key, score if digits is None else round(score, digits)) for key, score in rows]


PAIRS = ["w001-w002", "w000-w003", "w005-w004"]
"""Hyphenated pairs: FTS5 makes each a phrase of two adjacent tokens (PostgreSQL a
``<->`` phrase the documents must match)."""


def with_pairs(size: int, *, seed: int = 7, share: int = 6,
               pairs: list[str] = PAIRS) -> list[Document]:
    """:func:`corpus` with one body in ``share`` also holding one of ``pairs``."""
    docs = corpus(seed=seed, size=size)
    rng = random.Random(seed)
    for at in rng.sample(range(size), size // share):
        d = docs[at]
        docs[at] = Document(d.key, d.doc_id, d.title, summary=d.summary,
                            body=f"{d.body} {rng.choice(pairs)}", aliases=d.aliases,
                            tags=d.tags, status=d.status, category=d.category, scope=d.scope)
    return docs
