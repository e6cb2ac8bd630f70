"""Search: sync the derived index with the branch, run the legs, fuse (docs/architecture.md,
"Retrieval")."""

from __future__ import annotations

import datetime as dt
import tempfile
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

from indexes.coverage import coverage
from indexes.documents import Hit
from indexes.embedders import EmbedderUnavailableError
from indexes.errors import IndexesError
from indexes.faults import OperationalError
from indexes.hybrid import FusionConfig, encode_in_background, fuse, run_legs
from indexes.query import query_words, searched_text
from indexes.routing import Route
from indexes.store import Filters, SearchIndex
from indexes.vectors import Progress
from wiki.answering import memory_rescoring as rerank
from wiki.answering.embedding import ensure_vectors, get_embedder, model_name
from wiki.answering.routing import apply as apply_route
from wiki.answering.routing import boost, decide, tie_break
from wiki.knowledge.lifetimes import iso, lifetimes
from wiki.store.derived import (
    SyncReport,
    commit_as_of,
    indexed_config,
    open_synced,
    snapshot_index,
    sync,
)
from wiki.store.storage import storage_cause
from wiki.store.workspace import Wiki

SENTENCE_HITS = 5
"""The top hits whose stored sentence vectors come with the result (ask reads 3, or
:data:`wiki.answering.budget.MAX_ENTRIES` with a budget)."""


@dataclass
class SearchResult:
    """Ranked ``hits`` for ``query`` at wiki ``commit``. ``confidence`` (0-1) is the
    IDF-weighted query coverage of the top BM25 hit (:mod:`indexes.confidence`),
    ``top_cosine`` the vector leg's best cosine (``None`` when it did not run); ``gap``
    combines them (see :attr:`gap`). ``legs`` lists the legs that ran,
    ``skipped`` the ones that could not, with the reason."""

    query: str
    commit: str
    hits: list[Hit]
    confidence: float
    threshold: float
    sync: SyncReport
    sources: dict[str, list[dict]] = field(default_factory=dict)
    legs: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    top_cosine: float | None = None
    gap_coverage: float = 0.54
    gap_cosine: float = 0.45
    marks: dict[str, list[dict]] = field(default_factory=dict)
    """Hits whose cited files changed since they were written (``wiki hook``)."""
    llm: dict | None = None
    """When the ``llm`` leg or the rerank ran: :meth:`wiki.llm.leg.LLMStage.report`."""
    route: Route | None = None
    """When routing ran: the folders chosen and every folder's score
    (:mod:`wiki.answering.routing`)."""
    query_vector: object = None
    """The question's vector (numpy, unit length) when the vector leg ran, else ``None``."""
    sentence_vectors: dict = field(default_factory=dict)
    """``sha256 of a sentence -> vector`` of the top hits' stored answer sentences
    (embedded at index time, :meth:`indexes.vectors.VectorStore.sentence_vectors`)."""

    @property
    def gap(self) -> bool:
        """The evidence-gap decision (:func:`is_gap`)."""
        return is_gap(bool(self.hits), self.confidence, self.top_cosine, self.threshold,
                      self.gap_coverage, self.gap_cosine)


def is_gap(has_hits: bool, coverage: float, top_cosine: float | None, threshold: float,
           gap_coverage: float, gap_cosine: float) -> bool:
    """The evidence-gap rule: without the vector leg, ``coverage < threshold``; with it, a
    gap only when neither the words (``coverage < gap_coverage``) nor the meaning
    (``top_cosine < gap_cosine``) come close. Constants fitted on the handbook dev set."""
    if not has_hits:
        return True
    if top_cosine is None:
        return coverage < threshold
    return coverage < gap_coverage and top_cosine < gap_cosine


def filters_for(*, include_superseded: bool = False, category: str | None = None,
                tags: tuple[str, ...] = (), scope: str | None = None,
                include_expired: bool = False) -> Filters:
    """Search filters: active entries only unless ``include_superseded`` (then
    superseded ones too; retracted and draft entries are never answers); only ``scope``
    when given; expired entries (:mod:`wiki.knowledge.lifetimes`) left out unless
    ``include_expired`` (validity is checked now, or at ``--as-of``)."""
    statuses = ("active", "superseded") if include_superseded else ("active",)
    return Filters(statuses=statuses, category=category or None, tags=tuple(tags),
                   scope=scope, valid_at=None if include_expired else iso(_now()))


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _with_lifetimes(filters: Filters, index: SearchIndex, as_of: dt.datetime | None
                    ) -> Filters:
    """``filters`` with the indexed wiki.toml's lifetimes, validity checked at ``as_of``."""
    if filters.valid_at is None:
        return filters
    days = lifetimes(indexed_config(index))
    return replace(filters, lifetimes=tuple(sorted(days.items())),
                   valid_at=iso(as_of) if as_of is not None else filters.valid_at)


def search(wiki: Wiki, query: str, *, limit: int = 10, filters: Filters | None = None,
           legs: tuple[str, ...] | None = None, index: SearchIndex | None = None,
           progress: Progress | None = None, as_of: dt.datetime | None = None,
           rerank: bool = False, llm=None, route: bool | None = None,
           sentences: bool = False) -> SearchResult:
    """Rank entries for ``query`` with the configured (or given) legs fused by
    ``[search] fusion``: weighted z-score CombSUM by default (each leg's scores
    standardised over its hits and summed with the leg's weight; it keeps how far a leg's
    first hit stands out, which RRF's ranks throw away: evals/results/fusion.md,
    docs/decisions.md), or weighted RRF with ``fusion = "rrf"``; with ``as_of``, over the
    wiki as it was then. Raises ``EmptyQueryError`` for a
    query without words and ``NotInitializedError`` without a wiki branch. A leg that
    cannot run (no embedding model) is skipped and reported in ``result.skipped``.
    The ``llm`` leg (the index walk) and ``rerank`` use ``llm`` (a
    :class:`wiki.llm.client.LLMClient`) or the configured model; asking for either
    explicitly without a model raises ``ModelNotConfiguredError`` (docs/llm.md).
    ``route`` (default: ``[search] route``) routes the question to category folders first
    and scopes the search (:mod:`wiki.answering.routing`); it needs the vector leg, else it is
    skipped and reported in ``result.skipped["route"]``. ``sentences``: also fetch the top
    hits' stored answer-sentence vectors (``result.sentence_vectors``; ``wiki ask`` needs
    them, a plain search does not)."""
    query_words(query)  # an empty query is an error whatever the legs
    searched = searched_text(query)  # past MAX_WORDS words: what the note says was searched
    if searched != query:
        result = search(wiki, searched, limit=limit, filters=filters, legs=legs, index=index,
                        progress=progress, as_of=as_of, rerank=rerank, llm=llm, route=route,
                        sentences=sentences)
        result.query = query  # as asked: the payload's ``truncated`` is computed from it
        return result
    options = (wiki, rerank, llm, legs is not None and "llm" in legs, route, sentences)
    if as_of is not None:
        commit = commit_as_of(wiki, as_of)
        with tempfile.TemporaryDirectory(prefix="wiki-asof-") as folder, \
                snapshot_index(wiki, commit, Path(folder) / "index.sqlite") as past:
            return _search(past, SyncReport(commit), query, limit, filters, legs, progress,
                           options, as_of)
    own = index is None
    if own:
        index, report = open_synced(wiki)
    else:
        report = sync(wiki, index)
    try:
        return _search(index, report, query, limit, filters, legs, progress, options)
    finally:
        if own:
            index.close()


def _search(index: SearchIndex, report: SyncReport, query: str, limit: int,
            filters: Filters | None, legs: tuple[str, ...] | None,
            progress: Progress | None,
            options: tuple = (None, False, None, False, None, False),
            as_of: dt.datetime | None = None) -> SearchResult:
    wiki, llm_rerank, client, llm_asked, route, sentences = options
    config = indexed_config(index).search
    memory = indexed_config(index).memory
    filters = _with_lifetimes(filters or filters_for(), index, as_of)
    fusion = FusionConfig(legs=tuple(legs or config.legs), k=config.rrf_k,
                          window=max(config.window, limit), weights=config.leg_weights,
                          method=config.fusion)
    skipped: dict[str, str] = {}
    vector, model = None, None
    if "vector" in fusion.legs:  # encoded on a worker thread while the lexical legs run
        vector, model = _query_vector(index, query, skipped, progress)
    routed = None
    if config.route if route is None else route:
        routed = _route(index, query, (vector, model), filters, skipped, wiki, client)
        if routed is not None:
            filters = apply_route(routed, config.route_mode, filters)
            fusion = replace(fusion, weights={**fusion.weights, "route": config.route_weight})
    found = run_legs(index, query, fusion, filters=filters,
                     query_vector=vector, model=model, skipped=skipped)
    if routed is not None:
        found = boost(found, routed, config.route_mode)
    stage = None
    if wiki is not None and ("llm" in fusion.legs or llm_rerank):
        from wiki.llm.leg import LLMStage

        stage = LLMStage.open(wiki, indexed_config(index).llm,
                              required=llm_asked or llm_rerank, client=client)
        if stage.client is None:
            skipped["llm"] = stage.note or "no model"
        elif "llm" in fusion.legs:
            found["llm"] = stage.leg(index, query, report.commit,
                                     wiki.snapshot(report.commit).read, filters, fusion.window)
    if rerank.enabled(memory):
        hits = rerank.after_fusion(index, fuse(found, fusion, limit=fusion.window), memory,
                                   filters, now=as_of)[:limit]
    else:
        hits = fuse(found, fusion, limit=limit)
    if stage is not None and llm_rerank:
        hits = stage.rerank(index, query, hits)
    lexical = found.get("bm25") or hits
    confidence = coverage(index, query, lexical[0].key) if lexical else 0.0
    cosine = found["vector"][0].score if found.get("vector") else None
    extras = index.extras(h.key for h in hits)
    sources = {key: extra.get("sources", []) for key, extra in extras.items()}
    result = SearchResult(query, report.commit, hits, confidence, config.gap_threshold, report,
                          sources, list(found), skipped, cosine, config.gap_coverage,
                          config.gap_cosine, index.marks([h.key for h in hits]),
                          stage.report() if stage is not None else None, routed)
    if vector is not None and "vector" not in skipped:
        try:
            result.query_vector = vector.result() if isinstance(vector, Future) else vector
        except IndexesError:
            return result
        if sentences:  # only an answer reads them: not on plain search's path
            result.sentence_vectors = index.vectors.sentence_vectors(
                [h.key for h in hits[:SENTENCE_HITS]], model)
    return result


def _route(index: SearchIndex, query: str, encoded: tuple, filters: Filters,
           skipped: dict[str, str], wiki: Wiki | None, client) -> Route | None:
    """The route of ``query`` (:func:`wiki.answering.routing.decide`), tie-broken by the configured
    model when there is one; ``None`` (reason in ``skipped``) without the vector leg."""
    vector, model = encoded
    if vector is None:
        skipped["route"] = "needs the vector leg: " + skipped.get("vector", "not asked for")
        return None
    try:
        vector = vector.result() if isinstance(vector, Future) else vector
    except IndexesError as exc:
        skipped["route"] = f"needs the vector leg: {exc}"
        return None
    found = decide(index, query, vector, model, filters=filters,
                   margin=indexed_config(index).search.route_margin)
    if found.ambiguous and client is None and wiki is not None:
        from wiki.llm.settings import open_client

        client = open_client(wiki, indexed_config(index).llm)
    return tie_break(client, query, found, index) if found.ambiguous and client else found


def _query_vector(index: SearchIndex, query: str, skipped: dict[str, str],
                  progress: Progress | None):
    name = model_name()
    if name is None:
        skipped["vector"] = "turned off (WIKI_EMBED_MODEL=none)"
        return None, None
    try:
        embedder = get_embedder(name)
        ensure_vectors(index, embedder, progress=progress)
        return encode_in_background(lambda q: embedder.encode([q])[0], query), embedder.name
    except EmbedderUnavailableError as exc:
        skipped["vector"] = str(exc)
        return None, None
    except OperationalError as exc:  # the disk refused the new vectors
        cause = storage_cause(exc)
        if cause is None:
            raise
        skipped["vector"] = f"new vectors cannot be stored ({cause})"
        return None, None
