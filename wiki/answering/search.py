"""Search: sync the derived index with the branch, run the legs, fuse (docs/architecture.md,
"Retrieval")."""

from __future__ import annotations

import datetime as dt
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from indexes.backend import IndexBackend
from indexes.documents import Hit
from indexes.embedding.embedders import EmbedderUnavailableError
from indexes.errors import IndexesError
from indexes.retrieval.coverage import coverage
from indexes.retrieval.filters import Filters
from indexes.retrieval.hybrid import FusionConfig, encode_in_background, fuse, run_legs
from indexes.retrieval.query import query_words, searched_text
from indexes.retrieval.routing import Route
from indexes.sqlite.faults import OperationalError
from indexes.sqlite.vectors import Progress
from wiki.answering import memory_rescoring
from wiki.answering.embed_settings import current_spec, validate
from wiki.answering.embedding import (
    QUERY_VECTORS,
    TOP_UP,
    get_embedder,
    model_name,
    pending_note,
    top_up_vectors,
)
from wiki.answering.filters import check_filters, filters_for
from wiki.answering.leg_check import require_llm, require_vector
from wiki.answering.routing import apply as apply_route
from wiki.answering.routing import boost, decide, tie_break
from wiki.config import LLMConfig, MemoryConfig, SearchConfig
from wiki.store.derived import (
    CONSISTENT_TRIES,
    Synced,
    SyncReport,
    commit_as_of,
    indexed_config,
    open_synced,
    snapshot_index,
    still_at,
    sync,
)
from wiki.store.disk_faults import storage_cause
from wiki.store.lifetimes import iso, lifetimes
from wiki.store.workspace import Wiki

SENTENCE_HITS = 5
"""The top hits whose stored sentence vectors come with the result (ask reads 3, or
:data:`wiki.answering.budget.MAX_ENTRIES` with a budget)."""


@dataclass(frozen=True)
class SearchRequest:
    """One search as asked, a value: built once, never changed.

    ``query``: the text as asked (past :data:`indexes.retrieval.query.MAX_WORDS` words only the
    first ones are searched, :func:`indexes.retrieval.query.searched_text`); ``limit``: how many
    hits
    (default 10); ``filters``: :func:`filters_for` (default: active, unexpired entries);
    ``legs``: the legs to run (``None``: ``[search] legs`` of wiki.toml); ``as_of``: search
    the wiki as it was then (a timezone-aware time; ``None``: now); ``rerank``: the model
    re-orders the fused hits (:meth:`wiki.llm.leg.LLMStage.rerank`); ``route``: route to
    category folders first (``None``: ``[search] route``); ``sentences``: also return the
    top :data:`SENTENCE_HITS` hits' stored answer-sentence vectors (``wiki ask`` needs
    them, a plain search does not); ``embed_model``: the embedding model, read from
    ``$WIKI_EMBED_MODEL`` when the request is built (``None``: vectors turned off);
    ``preferred_legs``: ``legs`` is the caller's preference (distillation's placement
    passes the configured legs less ``llm``), not a user's naming, so a leg that cannot
    run is skipped with a note as for the configured legs."""

    query: str
    limit: int = 10
    filters: Filters | None = None
    legs: tuple[str, ...] | None = None
    as_of: dt.datetime | None = None
    rerank: bool = False
    route: bool | None = None
    sentences: bool = False
    embed_model: str | None = field(default_factory=model_name)
    preferred_legs: bool = False

    @classmethod
    def with_filters(cls, query: str, *, category: str | None = None,
                     tags: tuple[str, ...] = (), include_superseded: bool = False,
                     scope: str | None = None, include_expired: bool = False,
                     **options) -> SearchRequest:
        """The request a user's options describe (``wiki search``, MCP and REST
        ``search``, ``wiki ask``): the filters built once from ``category``, ``tags``,
        ``include_superseded``, ``scope`` and ``include_expired``
        (:func:`wiki.answering.filters.filters_for`); ``options``: the other fields."""
        return cls(query, filters=filters_for(
            include_superseded=include_superseded, category=category, tags=tuple(tags),
            scope=scope, include_expired=include_expired), **options)

    @property
    def llm_asked(self) -> bool:
        """Whether the ``llm`` leg was asked for by name (then a missing model is an error)."""
        return self.asked("llm")

    def asked(self, leg: str) -> bool:
        """Whether ``leg`` was asked for by name (``legs`` given): then a leg that cannot
        run is an error, not a note (:mod:`wiki.answering.leg_check`)."""
        return self.legs is not None and not self.preferred_legs and leg in self.legs


@dataclass(frozen=True)
class SearchSettings:
    """The indexed wiki.toml's settings one search uses, read once per search
    (:func:`wiki.store.derived.indexed_config`): ``search`` (``[search]``), ``memory``
    (``[memory]``), ``llm`` (``[llm]``) and ``lifetimes`` (``(type, days)`` pairs,
    :func:`wiki.store.lifetimes.lifetimes`)."""

    search: SearchConfig
    memory: MemoryConfig
    llm: LLMConfig
    lifetimes: tuple[tuple[str, float], ...]

    @classmethod
    def of(cls, index: IndexBackend, text: str | None = None) -> SearchSettings:
        """The settings of the commit ``index`` was synced to (made once per parsed
        config: :func:`wiki.config.parsed_config` gives the same object for the same
        text); ``text``: its ``wiki.toml`` as the sync read it (else read from ``index``)."""
        config = indexed_config(index, text)
        kept = _SETTINGS.get(id(config))
        if kept is not None and kept[0] is config:
            return kept[1]
        settings = cls(config.search, config.memory, config.llm,
                       tuple(sorted(lifetimes(config).items())))
        if len(_SETTINGS) > 64:
            _SETTINGS.clear()
        _SETTINGS[id(config)] = (config, settings)
        return settings


_SETTINGS: dict[int, tuple[object, SearchSettings]] = {}
"""``id(config) -> (config, its SearchSettings)``; the config is held, so its id is not
reused while it is here."""


@dataclass(frozen=True)
class GapRule:
    """The evidence-gap thresholds of ``[search]`` (:func:`is_gap`): ``threshold`` (word
    coverage, 0-1, without the vector leg), ``coverage`` and ``cosine`` (with it)."""

    threshold: float
    coverage: float = 0.54
    cosine: float = 0.45


@dataclass(frozen=True)
class AnswerVectors:
    """What an answer reuses of the vector leg: the question's vector ``query`` (numpy,
    unit length), the embedding ``model``'s name and ``sentences``, ``sha256 of a sentence
    -> vector`` of the top hits' stored answer sentences (embedded at index time,
    :meth:`indexes.sqlite.vectors.VectorStore.sentence_vectors`; empty unless asked for)."""

    query: object
    model: str
    sentences: dict = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResult:
    """Ranked ``hits`` for ``query`` at wiki ``commit``, a value. ``confidence`` (0-1) is
    the IDF-weighted query coverage of the top BM25 hit (:mod:`indexes.retrieval.coverage`),
    ``top_cosine`` the vector leg's best cosine (``None`` when it did not run); ``rule``
    holds the gap thresholds (see :attr:`gap`). ``sync``: what syncing the index did;
    ``sources``: entry path -> its sources; ``marks``: hits whose cited files changed
    since they were written (``wiki hook``). ``legs`` lists the legs that ran,
    ``skipped`` the ones that could not, with the reason. ``llm``: when the ``llm`` leg
    or the rerank ran, :meth:`wiki.llm.leg.LLMStage.report`; ``route``: when routing
    ran, the folders chosen and every folder's score (:mod:`wiki.answering.routing`);
    ``vectors``: when the vector leg ran, what an answer reuses (:class:`AnswerVectors`);
    ``pending``: chunk texts still waiting for their vectors (more than
    :data:`wiki.answering.embedding.TOP_UP`: the vector leg was skipped, ``skipped["vector"]``
    says to run ``wiki index``)."""

    query: str
    commit: str
    hits: list[Hit]
    confidence: float
    top_cosine: float | None
    rule: GapRule
    sync: SyncReport
    sources: dict[str, list[dict]] = field(default_factory=dict)
    marks: dict[str, list[dict]] = field(default_factory=dict)
    legs: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    llm: dict | None = None
    route: Route | None = None
    vectors: AnswerVectors | None = None
    pending: int = 0

    @property
    def threshold(self) -> float:
        """The word-coverage gap threshold without the vector leg (``rule.threshold``)."""
        return self.rule.threshold

    @property
    def gap(self) -> bool:
        """The evidence-gap decision (:func:`is_gap`)."""
        return is_gap(bool(self.hits), self.confidence, self.top_cosine,
                      self.rule.threshold, self.rule.coverage, self.rule.cosine)


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


def _with_lifetimes(filters: Filters, index: IndexBackend, as_of: dt.datetime | None
                    ) -> Filters:
    """``filters`` with the indexed wiki.toml's lifetimes, validity checked at ``as_of``."""
    return _valid(filters, SearchSettings.of(index).lifetimes, as_of)


def _valid(filters: Filters, days: tuple[tuple[str, float], ...], as_of: dt.datetime | None
           ) -> Filters:
    """``filters`` with the lifetimes ``days``, validity checked at ``as_of`` (unchanged
    when expired entries are asked for)."""
    if filters.valid_at is None:
        return filters
    return replace(filters, lifetimes=days,
                   valid_at=iso(as_of) if as_of is not None else filters.valid_at)


def search_for(wiki: Wiki, query: str, *, limit: int = 10, filters: Filters | None = None,
               legs: tuple[str, ...] | None = None, index: IndexBackend | None = None,
               progress: Progress | None = None, as_of: dt.datetime | None = None,
               rerank: bool = False, llm=None, route: bool | None = None,
               sentences: bool = False) -> SearchResult:
    """A shorthand for library callers and tests: :func:`search` of the
    :class:`SearchRequest` the keyword arguments describe (see there for each one);
    ``llm`` is :func:`search`'s ``client``."""
    request = SearchRequest(query, limit=limit, filters=filters, legs=legs, as_of=as_of,
                            rerank=rerank, route=route, sentences=sentences)
    return search(wiki, request, index=index, progress=progress, client=llm)


def search(wiki: Wiki, request: SearchRequest, *, index: IndexBackend | None = None,
           progress: Progress | None = None, client=None) -> SearchResult:
    """The search use case (``wiki search``, MCP and REST ``search``, and the retrieval of
    ``wiki ask``): rank entries for ``request.query`` with the configured (or requested)
    legs fused by
    ``[search] fusion``: weighted z-score CombSUM by default (each leg's scores
    standardised over its hits and summed with the leg's weight; it keeps how far a leg's
    first hit stands out, which RRF's ranks throw away: evals/results/fusion.md,
    docs/decisions.md), or weighted RRF with ``fusion = "rrf"``; with ``as_of``, over the
    wiki as it was then. The indexed wiki.toml is read once (:class:`SearchSettings`).
    ``index``: an open index to sync and search (default: the wiki's own, opened and
    closed here); ``progress``: called while missing vectors are embedded; ``client``: the
    :class:`wiki.llm.client.LLMClient` of the ``llm`` leg and the rerank (default: the
    configured model).
    Raises ``EmptyQueryError`` for a query without words, ``ConfigError`` for a bad
    ``WIKI_EMBED_RUNTIME``/``WIKI_EMBED_SERVER``
    (:func:`wiki.answering.embed_settings.validate`), ``NotInitializedError`` without a
    wiki branch and :class:`wiki.answering.filters.NoMatchingEntriesError`
    when the named category, tags or scope match no entry at all (nothing searched).
    A default leg that cannot run (no embedding model; more than
    :data:`wiki.answering.embedding.TOP_UP` chunks waiting for ``wiki index``, counted in
    ``result.pending``) is skipped and reported in ``result.skipped``; a leg named in
    ``request.legs`` that cannot run raises
    :class:`wiki.answering.leg_check.LegUnavailableError` (a ``ConfigError``). The ``llm``
    leg (the index walk) and the rerank use ``client`` or the configured model; asking
    for either explicitly without a model raises ``ModelNotConfiguredError``
    (docs/llm.md). Routing (:mod:`wiki.answering.routing`) needs the vector leg, else it
    is skipped and reported in ``result.skipped["route"]``."""
    query_words(request.query)  # an empty query is an error whatever the legs
    validate(current_spec())  # so is a bad WIKI_EMBED_RUNTIME / WIKI_EMBED_SERVER
    searched = searched_text(request.query)  # past MAX_WORDS words: what is searched
    if searched != request.query:
        result = search(wiki, replace(request, query=searched), index=index,
                        progress=progress, client=client)
        return replace(result, query=request.query)  # as asked: ``truncated`` reads it
    if request.as_of is not None:
        commit = commit_as_of(wiki, request.as_of)
        with snapshot_index(wiki, commit) as past:
            return _search(past, SyncReport(commit), request, wiki, client, progress)
    own = index is None
    for attempt in range(1, CONSISTENT_TRIES + 1):  # again if the index moved meanwhile
        synced = open_synced(wiki) if own else Synced(index, sync(wiki, index))
        index, report = synced.index, synced.report
        try:
            result = _search(index, report, request, wiki, client, progress)
            if attempt == CONSISTENT_TRIES or still_at(index, report.commit):
                return result
        finally:
            if own:
                index.close()
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True)
class _Encoded:
    """The question's vector as the vector leg starts it: ``vector`` (a unit vector or a
    future of one; ``None`` when the leg cannot run), ``model`` and ``skipped`` (the
    reason it cannot, as ``{"vector": why}``); ``pending``: chunk texts left for a build
    (the reason the leg cannot run)."""

    vector: object = None
    model: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    pending: int = 0


def _search(index: IndexBackend, report: SyncReport, request: SearchRequest,
            wiki: Wiki | None, client, progress: Progress | None) -> SearchResult:
    check_filters(index, request.filters)  # a filter naming nothing: a usage error
    settings = SearchSettings.of(index, report.config)
    config = settings.search
    filters = _valid(request.filters or filters_for(), settings.lifetimes, request.as_of)
    fusion = FusionConfig(legs=tuple(request.legs or config.legs), k=config.rrf_k,
                          window=max(config.window, request.limit),
                          weights=config.leg_weights, method=config.fusion)
    encoded = _Encoded()
    if "vector" in fusion.legs:  # encoded on a worker thread while the lexical legs run
        encoded = _query_vector(index, request.query, request.embed_model, progress,
                                None if request.as_of is not None else TOP_UP)
        if request.asked("vector"):  # asked for by name: it runs or the search fails
            require_vector(encoded.skipped.get("vector"))
    routed, route_skipped = None, {}
    if config.route if request.route is None else request.route:
        routed, route_skipped = _route(index, request.query, encoded, filters, settings,
                                       wiki, client)
        if routed is not None:
            filters = apply_route(routed, config.route_mode, filters)
            fusion = replace(fusion, weights={**fusion.weights, "route": config.route_weight})
    run = run_legs(index, request.query, fusion, filters=filters,
                   query_vector=encoded.vector, model=encoded.model, lenient=True)
    found, legs_skipped = run.legs, run.skipped
    if request.asked("vector"):
        require_vector(legs_skipped.get("vector"))
    if routed is not None:
        found = boost(found, routed, config.route_mode)
    stage, llm_skipped = None, {}
    if wiki is not None and ("llm" in fusion.legs or request.rerank):
        from wiki.llm.leg import LLMStage

        stage = LLMStage.open(wiki, settings.llm, required=request.llm_asked or request.rerank,
                              client=client)
        if stage.client is None:
            llm_skipped = {"llm": stage.note or "no model"}
        elif "llm" in fusion.legs:
            found = {**found, "llm": stage.leg(index, request.query, report.commit,
                                               wiki.snapshot(report.commit).read, filters,
                                               fusion.window)}
            if request.llm_asked:  # asked for by name: a failed model call is an error
                require_llm(stage)
    hits = _ranked(index, found, fusion, settings, filters, request)
    if stage is not None and request.rerank:
        hits = stage.rerank(index, request.query, hits)
    lexical = found.get("bm25") or hits
    extras = index.extras(h.key for h in hits)
    skipped = {**encoded.skipped, **route_skipped, **legs_skipped, **llm_skipped}
    return SearchResult(
        query=request.query, commit=report.commit, hits=hits,
        confidence=coverage(index, request.query, lexical[0].key) if lexical else 0.0,
        top_cosine=found["vector"][0].score if found.get("vector") else None,
        rule=GapRule(config.gap_threshold, config.gap_coverage, config.gap_cosine),
        sync=report, sources={key: extra.get("sources", []) for key, extra in extras.items()},
        marks=index.marks([h.key for h in hits]), legs=list(found), skipped=skipped,
        llm=stage.report() if stage is not None else None, route=routed,
        vectors=None if "vector" in skipped else _vectors(index, encoded, hits, request),
        pending=encoded.pending)


def _ranked(index: IndexBackend, found: dict, fusion: FusionConfig, settings: SearchSettings,
            filters: Filters, request: SearchRequest) -> list[Hit]:
    """The legs' hits fused, re-scored by memory when ``[memory]`` turns that on
    (:mod:`wiki.answering.memory_rescoring`), cut to ``request.limit``."""
    if memory_rescoring.enabled(settings.memory):
        fused = fuse(found, fusion, limit=fusion.window)
        return memory_rescoring.after_fusion(index, fused, settings.memory, filters,
                                             now=request.as_of)[:request.limit]
    return fuse(found, fusion, limit=request.limit)


def _vectors(index: IndexBackend, encoded: _Encoded, hits: list[Hit],
             request: SearchRequest) -> AnswerVectors | None:
    """The question's vector and, with ``request.sentences``, the top hits' stored
    sentence vectors; ``None`` when the question has no vector."""
    if encoded.vector is None:
        return None
    try:
        vector = encoded.vector.result() if isinstance(encoded.vector, Future) \
            else encoded.vector
    except IndexesError:
        return None
    if not request.sentences:  # only an answer reads them: not on plain search's path
        return AnswerVectors(vector, encoded.model)
    return AnswerVectors(vector, encoded.model, index.vectors.sentence_vectors(
        [h.key for h in hits[:SENTENCE_HITS]], encoded.model))


def _route(index: IndexBackend, query: str, encoded: _Encoded, filters: Filters,
           settings: SearchSettings, wiki: Wiki | None, client
           ) -> tuple[Route | None, dict[str, str]]:
    """The route of ``query`` (:func:`wiki.answering.routing.decide`), tie-broken by the
    configured model when there is one, and ``{}``; ``(None, {"route": why})`` without
    the vector leg."""
    if encoded.vector is None:
        why = encoded.skipped.get("vector", "not asked for")
        return None, {"route": "needs the vector leg: " + why}
    try:
        vector = encoded.vector.result() if isinstance(encoded.vector, Future) \
            else encoded.vector
    except IndexesError as exc:
        return None, {"route": f"needs the vector leg: {exc}"}
    found = decide(index, query, vector, encoded.model, filters=filters,
                   margin=settings.search.route_margin)
    if found.ambiguous and client is None and wiki is not None:
        from wiki.llm.settings import open_client

        client = open_client(wiki, settings.llm)
    return (tie_break(client, query, found, index) if found.ambiguous and client
            else found), {}


def _query_vector(index: IndexBackend, query: str, name: str | None,
                  progress: Progress | None, top_up: int | None = TOP_UP) -> _Encoded:
    """Start encoding ``query`` with the embedding model ``name``, or say why the vector
    leg cannot run. Chunks without a vector are embedded first when at most ``top_up``
    (``None``: all, for a throwaway ``--as-of`` index that no build will complete);
    more leave the leg out (``pending``) rather than make the reader wait for a build."""
    if name is None:
        return _Encoded(skipped={"vector": "turned off (WIKI_EMBED_MODEL=none)"})
    try:
        embedder = get_embedder(name)
        pending = top_up_vectors(index, embedder, limit=top_up, progress=progress)
        if pending:
            return _Encoded(skipped={"vector": pending_note(pending)}, pending=pending)
        # the server's QueryVector: that server also ranks the vectors (no numpy here)
        encode = getattr(embedder, "encode_query", None)
        if encode is None:  # in process: a query encoded before is not encoded again
            kept = QUERY_VECTORS.get(embedder, query)
            if kept is not None:
                return _Encoded(kept, embedder.name)

            def encode(text: str):
                return QUERY_VECTORS.keep(embedder, text, embedder.encode([text])[0])
        return _Encoded(encode_in_background(encode, query), embedder.name)
    except EmbedderUnavailableError as exc:
        return _Encoded(skipped={"vector": str(exc)})
    except OperationalError as exc:  # the disk refused the new vectors
        cause = storage_cause(exc)
        if cause is None:
            raise
        return _Encoded(skipped={"vector": f"new vectors cannot be stored ({cause})"})
