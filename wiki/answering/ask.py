"""Extractive answers: the most relevant sentences of the top entries, each cited.

Without a model, an answer is a handful of sentences taken verbatim from the best
entries, ranked by BM25 against the question with the index's own tokenizer
(:func:`indexes.retrieval.passages.rank_passages`) and discounted by the rank of their entry, each
with a citation ``[n]`` to its entry and, through it, to the entry's sources. When the
retrieval confidence is below the threshold the answer is an evidence gap, recorded in
``<git dir>/wiki/gaps.jsonl`` for lint, never a guess (docs/architecture.md, "Asking").

Before sentences are picked, the candidate entries' sources are revalidated
(:mod:`wiki.answering.revalidate`): a stale entry competes with the current text of its source and
its citation says so; an unverifiable one is flagged.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from indexes.sqlite.vectors import Progress
from wiki.answering.answer_type import TYPE_NAMES, missing_type
from wiki.answering.embedding import model_name
from wiki.answering.gap_judge import GapJudge, open_judge
from wiki.answering.gaps import record_gap
from wiki.answering.picker import DEFAULT, GapReason, pick_answer
from wiki.answering.revalidate import Revalidated, Revalidation
from wiki.answering.revalidate import revalidate as check_sources
from wiki.answering.search import SearchRequest, SearchResult, search
from wiki.answering.sentence_scoring import PickerConfig
from wiki.config import SearchConfig
from wiki.store.markdown_text import heading_above
from wiki.store.workspace import Wiki

MAX_ENTRIES = 3


@dataclass
class Citation(Revalidated):
    """A cited entry: ``number`` as used in ``[n]``, its id, path, title and source uris,
    and what revalidation found for it (:class:`wiki.answering.revalidate.Revalidated`)."""

    number: int
    entry_id: str
    path: str
    title: str
    sources: list[str]
    changed_sources: list[str] = field(default_factory=list)
    """Cited files changed since the entry was written (marked by the git hook)."""
    section: str | None = None
    """The heading inside the entry above every sentence quoted from it, when that is not
    the heading its title already names (an entry that holds a short section merged into
    the one before it, :mod:`wiki.ingest.sections`); ``None`` otherwise."""


@dataclass(frozen=True)
class Answer:
    """An answer to ``question``, a value: ``sentences`` as ``(text, citation number)``
    pairs and the ``citations`` they point to; ``gap`` when the wiki does not say, ``hedge``
    (the reason) when the sentences are the closest evidence and may not answer;
    :attr:`confidence` names the outcome. ``coverage``: the retrieval's word coverage of
    the top entry (:mod:`indexes.retrieval.coverage`), ``threshold`` its gap threshold without
    vectors."""

    question: str
    commit: str
    coverage: float
    threshold: float
    sentences: list[tuple[str, int]] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    top_cosine: float | None = None
    tokens: dict | None = None
    """With a budget: ``used``, ``budget``, ``whole`` (the whole-entry context) and
    ``counter`` (:mod:`wiki.answering.budget`)."""
    revalidation: dict | None = None
    """Counts of the sources checked at ask time and the uris to re-ingest
    (:meth:`wiki.answering.revalidate.Revalidation.summary`); ``None`` when not revalidated."""
    llm: dict | None = None
    """What the model did and cost, when the ``llm`` leg or the rerank ran."""
    mode: str = "extractive"
    """``llm`` when the sentences are a model's, verified against the cited entries
    (:mod:`wiki.llm.answer`); ``extractive`` when quoted from them."""
    note: str = ""
    """Why a configured model's answer is not shown (failure, timeout, nothing verified)."""
    dropped: list = field(default_factory=list)
    """The model's sentences that failed verification, as ``(text, why)``."""
    missing_type: str | None = None
    """When the question asks for a value of a type (a percentage, an amount of money:
    :mod:`wiki.answering.answer_type`) that none of the cited entries states: that type, and the
    answer is an evidence gap (``note`` says why)."""
    route: dict | None = None
    """When routing ran: :meth:`indexes.retrieval.routing.Route.to_dict`."""
    gap_reason: GapReason | None = None
    """Why the answer is a gap (:class:`wiki.answering.picker.GapReason`: ``code`` and
    ``sentence``); ``None`` when it is not."""
    form_missing: str | None = None
    """The form the question asks for (a number, a person, a place) when none of the best
    sentences states one (:mod:`wiki.answering.sentence_scoring`); a gap only with
    ``PickerConfig.form_gap``."""
    sentence_cosine: float | None = None
    """The cosine of the best sentence (as embedded with its entry's title) to the
    question; ``None`` without vectors."""
    answer_score: float | None = None
    """How well the best sentence answers (:func:`wiki.answering.sentence_scoring.answer_score`);
    ``None`` when no sentence was scored."""
    judge: dict | None = None
    """When the model's gap judge ran (:mod:`wiki.answering.gap_judge`): ``p_yes``,
    ``below``, ``seconds``, ``note``."""
    hedge: str | None = None
    """Why the sentences are only the closest evidence and may not answer (the answer
    score is below ``[search] hedge_score``), one line for people; ``None`` for a sure
    answer and for a gap."""
    skipped: dict[str, str] = field(default_factory=dict)
    """The search's legs that could not run, with the reason
    (:attr:`wiki.answering.search.SearchResult.skipped`)."""
    vectors_pending: int = 0
    """Chunk texts waiting for ``wiki index``: the vector leg was left out, the answer
    came from the lexical legs (:attr:`wiki.answering.search.SearchResult.pending`)."""

    @property
    def gap(self) -> bool:
        """Whether the wiki does not say: no sentence."""
        return not self.sentences

    @property
    def confidence(self) -> str:
        """How sure the answer is: ``answered``, ``hedged`` (the closest evidence, which
        may not answer: :attr:`hedge` says why) or ``gap`` (the wiki does not say)."""
        if self.gap:
            return "gap"
        return "hedged" if self.hedge else "answered"


@dataclass(frozen=True)
class AskRequest:
    """One question as asked, a value: built once, never changed.

    ``question``: the text; ``include_superseded``, ``category``, ``scope``,
    ``include_expired``: the search filters (:func:`wiki.answering.filters.filters_for`);
    ``legs``, ``as_of``, ``rerank``, ``route``: as in
    :class:`wiki.answering.search.SearchRequest`; ``budget``: at most this many tokens of
    evidence (``None``: no budget; :func:`wiki.answering.budget.fit`); ``revalidate``:
    check the candidate entries' sources first (never with ``as_of``); ``synthesize``:
    a configured model writes the answer from the cited entries; ``picker``: the
    sentence picker's parameters (:class:`wiki.answering.sentence_scoring.PickerConfig`; evals
    pass variants; ``None``: :data:`wiki.answering.picker.DEFAULT` with the wiki's
    ``[search] gap_score`` and ``hedge_score``, :func:`configured_picker`);
    ``embed_model``: the embedding model, read from ``$WIKI_EMBED_MODEL`` when the
    request is built (``None``: vectors off), used by the search, the picker and the
    budget's token counter alike.

    What ``wiki ask`` does besides answering (:func:`wiki.questions.answer_question`;
    :func:`answer` ignores them): ``save``: propose a confident answer as entries
    (distilled by the model unless not ``synthesize``); ``redact``: secrets replaced, not
    refused, in that proposal; ``offer``: work out the update of out-of-date cited
    entries; ``propose``: and open it as a proposal.

    ``search``: the search this question runs (10 hits with their sentence vectors),
    built once with the request (:meth:`SearchRequest.with_filters`), never passed."""

    question: str
    include_superseded: bool = False
    category: str | None = None
    scope: str | None = None
    include_expired: bool = False
    legs: tuple[str, ...] | None = None
    as_of: dt.datetime | None = None
    budget: int | None = None
    revalidate: bool = True
    rerank: bool = False
    synthesize: bool = True
    route: bool | None = None
    picker: PickerConfig | None = None
    embed_model: str | None = field(default_factory=model_name)
    save: bool = False
    redact: bool = False
    offer: bool = True
    propose: bool = False
    search: SearchRequest = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "search", SearchRequest.with_filters(
            self.question, limit=10, legs=self.legs, as_of=self.as_of, rerank=self.rerank,
            route=self.route, sentences=True, embed_model=self.embed_model,
            include_superseded=self.include_superseded, category=self.category,
            scope=self.scope, include_expired=self.include_expired))


def ask_for(wiki: Wiki, question: str, *, progress: Progress | None = None,
            **options) -> Answer:
    """A shorthand for library callers and tests: :func:`answer` of
    ``AskRequest(question, **options)`` (see :class:`AskRequest` for each option);
    ``progress`` is called while missing vectors are embedded."""
    return answer(wiki, AskRequest(question, **options), progress=progress)


def answer(wiki: Wiki, request: AskRequest, *, progress: Progress | None = None) -> Answer:
    """Answer ``request.question`` from the wiki. Raises ``EmptyQueryError`` for an empty
    question and ``NotInitializedError`` without a wiki branch; a gap is a normal return
    (recorded in ``gaps.jsonl``). With a ``budget`` (tokens), the answer is the best
    evidence that fits it (:func:`wiki.answering.budget.fit`) and ``answer.tokens``
    reports what it used. With ``revalidate`` (not with ``as_of``: that asks what the
    wiki said then) the candidate entries' sources are checked first
    (:mod:`wiki.answering.revalidate`). With a model configured and ``synthesize``, the
    model writes the answer from the cited entries and only its verified sentences are
    kept (:mod:`wiki.llm.answer`). The route, when routing ran, is in ``answer.route``.
    All its model calls share one ``[llm] timeout``
    (:func:`wiki.llm.usage.command_scope`)."""
    from wiki.llm.usage import command_scope

    with command_scope():
        result = search(wiki, request.search, progress=progress)
        found = Answer(request.question, result.commit, result.confidence, result.threshold,
                       top_cosine=result.top_cosine, llm=result.llm,
                       route=result.route.to_dict() if result.route else None,
                       skipped=dict(result.skipped), vectors_pending=result.pending)
        if result.gap and ((request.picker or DEFAULT).retrieval_gap
                           or result.vectors is None):
            cosine = ("" if result.top_cosine is None
                      else f", best cosine {result.top_cosine:.2f}")
            found = replace(found, gap_reason=GapReason(
                "no_match", f"no entry shares enough of the question's words or meaning "
                f"(word coverage {result.confidence:.2f}{cosine})"))
        elif result.hits:
            found = _from_entries(wiki, request, result, found)
        if found.gap:
            found = replace(found, hedge=None)
            if found.gap_reason is None:
                found = replace(found, gap_reason=GapReason("no_match",
                                                            "no entry matches the question"))
            # over budget: the wiki holds that answer; vectors pending: decided without
            # the vector leg, which `wiki index` brings back (provisional, not a fact)
            if found.gap_reason.code != "over_budget" and not found.vectors_pending:
                record_gap(wiki, found)
        return found


def configured_picker(search: SearchConfig) -> PickerConfig:
    """The product's picker (:data:`wiki.answering.picker.DEFAULT`) with the thresholds of
    the wiki's ``[search]`` section: ``gap_score`` (below it, an evidence gap) and
    ``hedge_score`` (below it, a hedged answer)."""
    return replace(DEFAULT, gap_score=search.gap_score, hedge_score=search.hedge_score)


def _from_entries(wiki: Wiki, request: AskRequest, result: SearchResult,
                  found: Answer) -> Answer:
    """``found`` (the retrieval's answer) completed from the top hits' entries:
    revalidated, picked (or fitted to the budget), checked for the asked type, written by
    the model."""
    from wiki.answering.budget import MAX_ENTRIES as BUDGET_ENTRIES

    snapshot = wiki.snapshot(result.commit)
    if request.picker is None:
        request = replace(request, picker=configured_picker(snapshot.config().search))
    count = MAX_ENTRIES if request.budget is None else BUDGET_ENTRIES
    entries = [snapshot.entry(hit.key) for hit in result.hits[:count]]
    checks = None
    if request.revalidate and request.as_of is None:
        checks = check_sources(wiki, entries, snapshot.config())
        entries = checks.current(entries)
    stale = {p for p, e in enumerate(entries)
             if checks is not None and checks.entries[e.path].stale}
    picked = _extract(wiki, result, request, entries[:MAX_ENTRIES], stale, found,
                      open_judge(wiki, snapshot.config().llm))
    answer = picked.answer
    if request.budget is not None and answer.sentences:
        answer = _fit(result, request, entries, picked, found)
    if answer.sentences:
        answer = _check_type(request.question, answer, entries)
    if request.synthesize and request.budget is None and answer.sentences:
        answer = _synthesize(wiki, request.question, answer, entries, snapshot.config().llm)
    if checks is not None:
        answer = _annotate(answer, checks)
    return answer


@dataclass(frozen=True)
class _Picked:
    """What :func:`_extract` picked: the ``answer`` and its sentences as ``lead``,
    ``(text, entry position)`` pairs, for :func:`_fit` to open a budgeted answer with."""

    answer: Answer
    lead: list[tuple[str, int]]


def _extract(wiki: Wiki, result: SearchResult, request: AskRequest, entries: list,
             stale: set[int], found: Answer, judge: GapJudge | None = None) -> _Picked:
    """``found`` with the answer's sentences picked by
    :func:`wiki.answering.picker.pick_answer`: the one that answers first, then its
    support, each cited; an entry at a ``stale`` position (answered from its current
    source) also gets its best sentence. A gap (no sentences, ``gap_reason`` and ``note``)
    when no sentence answers. With a ``judge``, the model's yes/no may turn the answer
    into a ``judge_no`` gap (:mod:`wiki.answering.gap_judge`). The vectors of the
    sentences that had none are embedded here and kept in the index
    (:func:`wiki.answering.embedding.keep_sentence_vectors`): a build embeds no answer
    sentences, an answer embeds those of the few entries it reads, once."""
    vectors = result.vectors
    embed = None
    if vectors is not None:
        from wiki.answering.embedding import RecordingEncoder, get_embedder

        embed = RecordingEncoder(get_embedder(vectors.model).encode)
    picked = pick_answer(request.question, [(e.title, e.body) for e in entries],
                         vectors.sentences if vectors is not None else {},
                         vectors.query if vectors is not None else None, request.picker,
                         coverage=result.confidence, stale=frozenset(stale), embed=embed)
    if embed is not None and embed.texts:  # embedded on demand: kept for the next answer
        from wiki.answering.embedding import keep_sentence_vectors

        keep_sentence_vectors(wiki, vectors.model, embed.texts, embed.vectors)
    judged = judge.review(request.question, picked, [e.title for e in entries]) \
        if judge is not None else {}
    scored = replace(found, answer_score=round(picked.score, 4),
                     sentence_cosine=picked.cosine, form_missing=picked.form_missing,
                     judge=judged or None,
                     hedge=picked.hedge if picked.gap is None else None)
    if judged.get("note") and picked.gap is None:
        scored = replace(scored, note=judged["note"])
    if picked.gap is not None:
        return _Picked(replace(scored, sentences=[], citations=[], gap_reason=picked.gap,
                               note=picked.gap.sentence), [])
    numbers: dict[int, int] = {}
    for _, position in picked.sentences:
        numbers.setdefault(position, len(numbers) + 1)
    sentences = [(text, numbers[position]) for text, position in picked.sentences]
    if not picked.sentences and entries:  # confident retrieval, no sentence: the summary
        sentences = [(entries[0].summary or entries[0].title, 1)]
        numbers[0] = 1
    citations = [_citation(number, entries[position], result,
                           [text for text, at in picked.sentences if at == position])
                 for position, number in sorted(numbers.items(), key=lambda p: p[1])]
    return _Picked(replace(scored, sentences=sentences, citations=citations),
                   picked.sentences or [(text, 0) for text, _ in sentences])


def _check_type(question: str, answer: Answer, entries: list) -> Answer:
    """``answer`` as an evidence gap when the question asks for a percentage or an
    amount of money and no cited entry states one (:mod:`wiki.answering.answer_type`);
    ``answer`` unchanged otherwise."""
    cited = {c.path for c in answer.citations}
    texts = [f"{e.title}\n{e.summary}\n{e.body}" for e in entries if e.path in cited]
    kind = missing_type(question, texts)
    if kind is None:
        return answer
    titles = "; ".join(c.title for c in answer.citations)
    note = (f"the question asks for {TYPE_NAMES[kind]} and none of the closest "
            f"entries ({titles}) states one")
    return replace(answer, missing_type=kind, note=note,
                   gap_reason=GapReason("missing_type", note), sentences=[], citations=[])


def _synthesize(wiki: Wiki, question: str, answer: Answer, entries: list,
                config) -> Answer:
    """``answer`` with the model-written sentences over the cited entries when a model is
    configured (:func:`wiki.llm.answer.answer_from`): ``mode`` ``llm`` and its verified
    sentences, else the ``note`` saying why the extractive ones stand; unchanged without a
    model."""
    from wiki.llm.settings import open_client

    client = open_client(wiki, config)
    if client is None:
        return answer
    from wiki.llm.answer import answer_from

    written = answer_from(client, question, answer.sentences,
                          [(c.number, c.path) for c in answer.citations], entries)
    if written.sentences:
        return replace(answer, dropped=written.dropped, sentences=written.sentences,
                       mode="llm")
    return replace(answer, dropped=written.dropped, note=written.note)


def _fit(result: SearchResult, request: AskRequest, entries: list, picked: _Picked,
         found: Answer) -> Answer:
    """The answer for a token budget (:func:`wiki.answering.budget.fit`): ``found`` with
    the ``picked`` answer's scores, opening with its sentences; an ``over_budget`` gap,
    never a lesser sentence, when its opening sentence does not fit."""
    from indexes.retrieval.tokens import counter
    from wiki.answering.budget import fit

    evidence = fit(request.question, entries, request.budget, counter(request.embed_model),
                   lead=picked.lead)
    best = picked.answer
    scored = replace(found, answer_score=best.answer_score,
                     sentence_cosine=best.sentence_cosine, form_missing=best.form_missing,
                     judge=best.judge, hedge=best.hedge)
    tokens = {"used": evidence.used, "budget": request.budget, "whole": evidence.whole,
              "counter": evidence.counter}
    if evidence.needed:
        return replace(scored, sentences=[], citations=[],
                       tokens={**tokens, "needed": evidence.needed},
                       gap_reason=GapReason("over_budget", f"the best evidence needs "
                                            f"{evidence.needed} tokens (the answer's first "
                                            f"sentence with its citation), over the budget "
                                            f"of {request.budget}: ask again with --budget "
                                            f"{evidence.needed} or more"))
    return replace(scored, sentences=evidence.sentences,
                   citations=[_citation(number, entries[position], result,
                                        [t for t, n in evidence.sentences if n == number])
                              for number, position in enumerate(evidence.cited, start=1)],
                   tokens=tokens)


def _annotate(answer: Answer, checks: Revalidation) -> Answer:
    """``answer`` with each citation's revalidation and the summary of the checks."""
    return replace(answer,
                   citations=[replace(c, **checks.entries[c.path].revalidated())
                              if c.path in checks.entries else c for c in answer.citations],
                   revalidation=checks.summary())


def _citation(number: int, entry, result: SearchResult, quoted: list[str]) -> Citation:
    return Citation(number, entry.id, entry.path, entry.title, [s.uri for s in entry.sources],
                    [m["uri"] for m in result.marks.get(entry.path, [])],
                    section=_section(entry, quoted))


def _section(entry, quoted: list[str]) -> str | None:
    """The one heading above all of ``quoted`` in ``entry``'s body, unless the entry's
    title ends with it (``Source: Heading``) or there is none."""
    found = {heading_above(entry.body, text) for text in quoted}
    if len(found) != 1:
        return None
    (heading,) = found
    if heading is None or entry.title.endswith(heading) or heading == entry.title:
        return None
    return heading
