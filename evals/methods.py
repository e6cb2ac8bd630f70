"""Retrieval methods under evaluation, one factory per name in :data:`METHODS`.

A factory takes a :class:`Target` (an open search index, and the wiki when the dataset
is a wiki) and returns ``retrieve(query, limit) -> Retrieved``. Setup that should not be
timed per query (loading a model, building postings) happens in the factory. To add a
method (``vector``, ``hybrid``, ``llm``), write a factory and register it in ``METHODS``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from indexes.store import Filters, SearchIndex

_WORD = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-case (case folded, accents removed) runs of letters and digits: the grep
    baseline's own tokenizer, independent of the index's (which may stem)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _WORD.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


@dataclass
class Target:
    """What a method searches: ``index`` (documents keyed by ``key``) and, for a wiki
    dataset, the ``wiki`` (so the product's own ``wiki.search.search`` path is used)."""

    name: str
    index: SearchIndex
    wiki: object | None = None
    _documents: list[tuple[str, str]] | None = field(default=None, repr=False)

    def documents(self) -> list[tuple[str, str]]:
        """``(key, title + body)`` of every active document, read once."""
        if self._documents is None:
            rows = self.index.conn.execute(
                "SELECT key, title, body FROM docs WHERE status = 'active' ORDER BY key")
            self._documents = [(k, f"{t}\n{b}") for k, t, b in rows]
        return self._documents


@dataclass
class Retrieved:
    """Ranked document keys; ``confidence`` and ``gap`` when the method decides them."""

    keys: list[str]
    confidence: float | None = None
    gap: bool | None = None


Retriever = Callable[[str, int], Retrieved]


def bm25(target: Target) -> Retriever:
    """BM25. On a wiki: ``wiki.search.search`` with the already-open index (the product
    path: active entries, trigram fallback, confidence and evidence gap). On a bare index:
    ``SearchIndex.search_bm25`` over all documents."""
    if target.wiki is not None:
        from wiki.search import search

        def retrieve_wiki(query: str, limit: int) -> Retrieved:
            result = search(target.wiki, query, limit=limit, index=target.index)
            return Retrieved([h.key for h in result.hits], result.confidence, result.gap)

        return retrieve_wiki

    everything = Filters(statuses=None)

    def retrieve(query: str, limit: int) -> Retrieved:
        hits = target.index.search_bm25(query, limit=limit, filters=everything)
        return Retrieved([h.key for h in hits])

    return retrieve


def grep(target: Target) -> Retriever:
    """Baseline: score = total occurrences of the query's distinct tokens in title + body
    (case-insensitive, :func:`tokens`), ties broken by key; documents scoring 0
    are not returned."""
    documents = target.documents()
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for number, (_, text) in enumerate(documents):
        for token, count in Counter(tokens(text)).items():
            postings[token].append((number, count))

    def retrieve(query: str, limit: int) -> Retrieved:
        scores: Counter[int] = Counter()
        for token in dict.fromkeys(tokens(query)):
            for number, count in postings.get(token, ()):
                scores[number] += count
        ranked = sorted(scores.items(), key=lambda item: (-item[1], documents[item[0]][0]))
        return Retrieved([documents[n][0] for n, _ in ranked[:limit]])

    return retrieve


METHODS: dict[str, Callable[[Target], Retriever]] = {
    "bm25": bm25,
    "grep": grep,
}
