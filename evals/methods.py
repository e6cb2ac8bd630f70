"""Retrieval methods under evaluation, one factory per name in :data:`METHODS`.

A factory takes a :class:`Target` (an open search index, and the wiki when the dataset
is a wiki) and returns ``retrieve(query, limit, filters=None) -> Retrieved`` (``filters``
restricts the documents, e.g. LoCoMo's own conversation; default ``target.filters``).
Setup that should not be timed per query (loading a model, building postings) happens in
the factory; encoding the query is part of the timed call. ``vector`` and ``hybrid`` use
the in-process MiniLM; ``hybrid`` fuses with ``target.fusion`` (the CLI's flags).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from indexes.retrieval.hybrid import FusionConfig, fuse, run_legs
from indexes.sqlite.engine import Filters, SearchIndex

_WORD = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-case (case folded, accents removed) runs of letters and digits: the grep
    baseline's own tokenizer, independent of the index's (which may stem)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return _WORD.findall("".join(c for c in decomposed if not unicodedata.combining(c)))


@dataclass
class Target:
    """What a method searches: ``index`` (documents keyed by ``key``) and, for a wiki
    dataset, the ``wiki`` (so the product's own ``wiki.answering.search.search`` path is used)."""

    name: str
    index: SearchIndex
    wiki: object | None = None
    filters: Filters = field(default_factory=lambda: Filters(statuses=None))
    fusion: FusionConfig = field(default_factory=FusionConfig)
    gap_threshold: float = 0.4
    _documents: list[tuple[str, str, str]] | None = field(default=None, repr=False)

    def documents(self) -> list[tuple[str, str, str]]:
        """``(key, title + body, category)`` of every active document, read once."""
        if self._documents is None:
            rows = self.index.conn.execute("SELECT key, title, body, category FROM docs "
                                           "WHERE status = 'active' ORDER BY key")
            self._documents = [(k, f"{t}\n{b}", c) for k, t, b, c in rows]
        return self._documents


@dataclass
class Retrieved:
    """Ranked document keys; ``confidence`` and ``gap`` when the method decides them."""

    keys: list[str]
    confidence: float | None = None
    gap: bool | None = None
    legs: dict[str, list] | None = None
    scores: list[float] | None = None
    extra: dict = field(default_factory=dict)
    """Abstention features; ``extra["later"]()`` computes more, outside the timed call."""


Retriever = Callable[..., Retrieved]


def bm25(target: Target) -> Retriever:
    """BM25. On a wiki: ``wiki.answering.search.search`` with the already-open index (the product
    path: active entries, trigram fallback, confidence and evidence gap). On a bare index:
    ``SearchIndex.search_bm25`` over all documents."""
    if target.wiki is not None:
        from wiki.answering.search import search_for

        def retrieve_wiki(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
            result = search_for(target.wiki, query, limit=limit, index=target.index,
                            legs=("bm25",), filters=filters)
            return Retrieved([h.key for h in result.hits], result.confidence, result.gap)

        return retrieve_wiki

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        hits = target.index.search_bm25(query, limit=limit, filters=filters or target.filters)
        return Retrieved([h.key for h in hits], scores=[h.score for h in hits])

    return retrieve


def grep(target: Target) -> Retriever:
    """Baseline: score = total occurrences of the query's distinct tokens in title + body
    (case-insensitive, :func:`tokens`), ties broken by key; documents scoring 0
    are not returned."""
    documents = target.documents()
    postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for number, (_, text, _) in enumerate(documents):
        for token, count in Counter(tokens(text)).items():
            postings[token].append((number, count))

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        category = (filters or target.filters).category
        scores: Counter[int] = Counter()
        for token in dict.fromkeys(tokens(query)):
            for number, count in postings.get(token, ()):
                if category is None or documents[number][2] == category:
                    scores[number] += count
        ranked = sorted(scores.items(), key=lambda item: (-item[1], documents[item[0]][0]))
        return Retrieved([documents[n][0] for n, _ in ranked[:limit]])

    return retrieve


def _confidence(target: Target, query: str, keys: list[str]) -> tuple[float, bool]:
    """The product's evidence-gap rule: IDF-weighted lexical coverage of the top hit."""
    from indexes.retrieval.coverage import coverage

    confidence = coverage(target.index, query, keys[0]) if keys else 0.0
    return confidence, confidence < target.gap_threshold


def _product_gap(target: Target, query: str, legs: dict, keys: list[str]) -> tuple[float, bool]:
    """The product's hybrid evidence-gap rule (``wiki.answering.search.is_gap``): coverage of the
    BM25 leg's first hit and the vector leg's best cosine, with wiki.toml's defaults."""
    from indexes.retrieval.coverage import coverage
    from wiki.answering.search import is_gap
    from wiki.config import SearchConfig

    lexical = legs.get("bm25") or []
    confidence = coverage(target.index, query, lexical[0].key) if lexical else 0.0
    cosine = legs["vector"][0].score if legs.get("vector") else None
    config = SearchConfig()
    return confidence, is_gap(bool(keys), confidence, cosine, target.gap_threshold,
                              config.gap_coverage, config.gap_cosine)


def _coverages(target: Target, query: str, legs: dict, keys: list[str]) -> dict:
    """Abstention features needing the index: coverage of the BM25 leg's first hit and the
    best coverage among the first three fused hits."""
    from evals.abstain import phrase_coverage
    from indexes.retrieval.coverage import coverage

    lexical = legs.get("bm25") or []
    return {"bm25_coverage": coverage(target.index, query, lexical[0].key) if lexical else 0.0,
            "max3_coverage": max((coverage(target.index, query, k) for k in keys[:3]),
                                 default=0.0),
            "phrase_coverage": phrase_coverage(target.index, query, keys[:3])}


def vector(target: Target) -> Retriever:
    """The vector leg alone: MiniLM query vector, documents by their best chunk's cosine."""
    from evals.embedcache import embedder

    model = embedder()

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        query_vector = model.encode([query])[0]
        hits = target.index.search_vector(query_vector, model.name, limit=limit,
                                          filters=filters or target.filters)
        keys = [h.key for h in hits]
        return Retrieved(keys, *_confidence(target, query, keys),
                         scores=[h.score for h in hits])

    return retrieve


ZSUM_WEIGHTS = {"alias": 1.0, "bm25": 1.0, "vector": 0.75}
ZSUM_WINDOW = 50


def hybrid_z(target: Target) -> Retriever:
    """Candidate fusion (:func:`evals.fusion_variants.zsum`): the same legs, each cut at
    :data:`ZSUM_WINDOW`, fused by the weighted sum of per-leg z-scores with
    :data:`ZSUM_WEIGHTS` (tuned on SciFact train + LoCoMo tune half; see results/tuning*)."""
    from evals.embedcache import embedder
    from evals.fusion_variants import zsum

    model = embedder()

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        config = FusionConfig(window=max(ZSUM_WINDOW, limit))
        query_vector = model.encode([query])[0]
        legs = run_legs(target.index, query, config, filters=filters or target.filters,
                        query_vector=query_vector, model=model.name).legs
        keys = zsum({leg: [(h.key, h.score) for h in hits] for leg, hits in legs.items()},
                    weights=ZSUM_WEIGHTS, window=ZSUM_WINDOW)[:limit]
        return Retrieved(keys, *_confidence(target, query, keys), legs=legs)

    return retrieve


def hybrid(target: Target) -> Retriever:
    """alias + bm25 + vector legs fused by ``indexes.retrieval.hybrid.fuse`` with ``target.fusion``
    (the CLI's flags: ``--fusion`` where the project has it, k, window, weights; each leg
    offers ``max(window, limit)`` hits, as ``wiki.answering.search`` does); confidence and gap as
    the product (coverage of the top hit)."""
    from evals.embedcache import embedder

    model = embedder()

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        config = replace(target.fusion, window=max(target.fusion.window, limit))
        query_vector = model.encode([query])[0]
        legs = run_legs(target.index, query, config, filters=filters or target.filters,
                        query_vector=query_vector, model=model.name).legs
        hits = fuse(legs, config, limit=limit)
        keys = [h.key for h in hits]
        return Retrieved(keys, *_product_gap(target, query, legs, keys), legs=legs,
                         scores=[h.score for h in hits],
                         extra={"later": lambda: _coverages(target, query, legs, keys)})

    return retrieve


METHODS: dict[str, Callable[[Target], Retriever]] = {
    "bm25": bm25,
    "grep": grep,
    "vector": vector,
    "hybrid": hybrid,
    "hybrid-z": hybrid_z,
}
