"""Extractive answers: the most relevant sentences of the top entries, each cited.

Without a model, an answer is a handful of sentences taken verbatim from the best
entries, ranked by BM25 against the question with the index's own tokenizer
(:func:`indexes.passages.rank_passages`) and discounted by the rank of their entry, each
with a citation ``[n]`` to its entry and, through it, to the entry's sources. When the
retrieval confidence is below the threshold the answer is an evidence gap, recorded in
``<git dir>/wiki/gaps.jsonl`` for lint, never a guess (docs/architecture.md, "Asking").

Before sentences are picked, the candidate entries' sources are revalidated
(:mod:`wiki.answering.revalidate`): a stale entry competes with the current text of its source and
its citation says so; an unverifiable one is flagged.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field

from indexes.answer_type import TYPE_NAMES, missing_type
from indexes.sentence_scoring import PickerConfig
from indexes.vectors import Progress
from wiki.answering.picker import DEFAULT, GapReason, pick_answer
from wiki.answering.revalidate import Revalidated
from wiki.answering.revalidate import revalidate as check_sources
from wiki.answering.search import SearchResult, filters_for, search
from wiki.store.entry import now_iso
from wiki.store.storage import notify, storage_cause
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


@dataclass
class Answer:
    """An answer to ``question``: ``sentences`` as ``(text, citation number)`` pairs and
    the ``citations`` they point to; ``gap`` when the wiki does not say."""

    question: str
    commit: str
    confidence: float
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
    (:mod:`wiki.answering.synthesis`); ``extractive`` when quoted from them."""
    note: str = ""
    """Why a configured model's answer is not shown (failure, timeout, nothing verified)."""
    dropped: list = field(default_factory=list)
    """The model's sentences that failed verification, as ``(text, why)``."""
    missing_type: str | None = None
    """When the question asks for a value of a type (a percentage, an amount of money:
    :mod:`indexes.answer_type`) that none of the cited entries states: that type, and the
    answer is an evidence gap (``note`` says why)."""
    route: dict | None = None
    """When routing ran: :meth:`indexes.routing.Route.to_dict`."""
    gap_reason: GapReason | None = None
    """Why the answer is a gap (:class:`wiki.answering.picker.GapReason`: ``code`` and
    ``sentence``); ``None`` when it is not."""
    form_missing: str | None = None
    """The form the question asks for (a number, a person, a place) when none of the best
    sentences states one (:mod:`indexes.sentence_scoring`); a gap only with
    ``PickerConfig.form_gap``."""
    sentence_cosine: float | None = None
    """The cosine of the best sentence (as embedded with its entry's title) to the
    question; ``None`` without vectors."""
    answer_score: float | None = None
    """How well the best sentence answers (:func:`indexes.sentence_scoring.answer_score`);
    ``None`` when no sentence was scored."""

    @property
    def gap(self) -> bool:
        return not self.sentences


def ask(wiki: Wiki, question: str, *, include_superseded: bool = False,
        category: str | None = None, legs: tuple[str, ...] | None = None,
        progress: Progress | None = None, as_of: dt.datetime | None = None,
        scope: str | None = None, include_expired: bool = False,
        budget: int | None = None, revalidate: bool = True, rerank: bool = False,
        synthesize: bool = True, route: bool | None = None,
        picker: PickerConfig = DEFAULT) -> Answer:
    """Answer ``question`` from the wiki. Raises ``EmptyQueryError`` for an empty question
    and ``NotInitializedError`` without a wiki branch; a gap is a normal return. With
    ``budget`` (tokens), the answer is the best evidence that fits it
    (:func:`wiki.answering.budget.fit`) and ``answer.tokens`` reports what it used. With
    ``revalidate`` (not with ``as_of``: that asks what the wiki said then) the candidate
    entries' sources are checked first (:mod:`wiki.answering.revalidate`). With a model configured
    and ``synthesize``, the model writes the answer from the cited entries and only its
    verified sentences are kept (:mod:`wiki.answering.synthesis`). ``route``: as in
    :func:`wiki.answering.search.search`; the route is in ``answer.route``. All its model calls
    share one ``[llm] timeout`` (:func:`wiki.llm.usage.command_scope`). ``picker``: the
    sentence picker's parameters (:class:`indexes.sentence_scoring.PickerConfig`; evals
    pass variants)."""
    from wiki.llm.usage import command_scope

    with command_scope():
        return _ask(wiki, question, include_superseded, category, legs, progress, as_of,
                    scope, include_expired, budget, revalidate, rerank, synthesize, route,
                    picker)


def _ask(wiki: Wiki, question: str, include_superseded: bool, category: str | None,
         legs: tuple[str, ...] | None, progress: Progress | None, as_of: dt.datetime | None,
         scope: str | None, include_expired: bool, budget: int | None, revalidate: bool,
         rerank: bool, synthesize: bool, route: bool | None, picker: PickerConfig) -> Answer:
    result = search(wiki, question, limit=10, legs=legs, progress=progress, as_of=as_of,
                    rerank=rerank, route=route, sentences=True,
                    filters=filters_for(include_superseded=include_superseded,
                                        category=category, scope=scope,
                                        include_expired=include_expired))
    answer = Answer(question, result.commit, result.confidence, result.threshold,
                    top_cosine=result.top_cosine, llm=result.llm,
                    route=result.route.to_dict() if result.route else None)
    if result.gap and (picker.retrieval_gap or result.query_vector is None):
        cosine = "" if result.top_cosine is None else f", best cosine {result.top_cosine:.2f}"
        answer.gap_reason = GapReason(
            "no_match", f"no entry shares enough of the question's words or meaning (word "
            f"coverage {result.confidence:.2f}{cosine})")
    elif result.hits:
        from wiki.answering.budget import MAX_ENTRIES as BUDGET_ENTRIES

        snapshot = wiki.snapshot(result.commit)
        count = MAX_ENTRIES if budget is None else BUDGET_ENTRIES
        entries = [snapshot.entry(hit.key) for hit in result.hits[:count]]
        checks = None
        if revalidate and as_of is None:
            checks = check_sources(wiki, entries, snapshot.config())
            entries = checks.current(entries)
        if budget is not None:
            _fit(result, answer, budget, entries)
        else:
            stale = {p for p, e in enumerate(entries)
                     if checks is not None and checks.entries[e.path].stale}
            _extract(result, answer, entries, stale, picker)
        if answer.sentences:
            _check_type(answer, entries)
        if synthesize and budget is None and answer.sentences:
            _synthesize(wiki, answer, entries, snapshot.config().llm)
        if checks is not None:
            _annotate(answer, checks)
    if answer.gap:
        if answer.gap_reason is None:
            answer.gap_reason = GapReason("no_match", "no entry matches the question")
        _record_gap(wiki, answer)
    return answer


def _extract(result: SearchResult, answer: Answer, entries: list, stale: set[int],
             picker: PickerConfig) -> None:
    """Pick the answer's sentences (:func:`wiki.answering.picker.pick_answer`): the one that
    answers first, then its support, each cited; an entry at a ``stale`` position (answered
    from its current source) also gets its best sentence. A gap when no sentence answers."""
    embed = None
    if result.query_vector is not None:
        from wiki.answering.embedding import get_embedder, model_name

        embed = get_embedder(model_name()).encode
    picked = pick_answer(answer.question, [(e.title, e.body) for e in entries],
                         result.sentence_vectors, result.query_vector, picker,
                         coverage=result.confidence, stale=frozenset(stale), embed=embed)
    answer.answer_score = round(picked.score, 4)
    answer.sentence_cosine = picked.cosine
    answer.form_missing = picked.form_missing
    if picked.gap is not None:
        answer.gap_reason, answer.note = picked.gap, picked.gap.sentence
        return
    numbers: dict[int, int] = {}
    for _, position in picked.sentences:
        numbers.setdefault(position, len(numbers) + 1)
    answer.sentences = [(text, numbers[position]) for text, position in picked.sentences]
    if not picked.sentences and entries:  # confident retrieval, no sentence: the summary
        answer.sentences = [(entries[0].summary or entries[0].title, 1)]
        numbers[0] = 1
    answer.citations = [_citation(number, entries[position], result)
                        for position, number in sorted(numbers.items(), key=lambda p: p[1])]


def _check_type(answer: Answer, entries: list) -> None:
    """Turn the answer into an evidence gap when the question asks for a percentage or an
    amount of money and no cited entry states one (:mod:`indexes.answer_type`)."""
    cited = {c.path for c in answer.citations}
    texts = [f"{e.title}\n{e.summary}\n{e.body}" for e in entries if e.path in cited]
    kind = missing_type(answer.question, texts)
    if kind is None:
        return
    titles = "; ".join(c.title for c in answer.citations)
    answer.missing_type = kind
    answer.note = (f"the question asks for {TYPE_NAMES[kind]} and none of the closest "
                   f"entries ({titles}) states one")
    answer.gap_reason = GapReason("missing_type", answer.note)
    answer.sentences, answer.citations = [], []


def _synthesize(wiki: Wiki, answer: Answer, entries: list, config) -> None:
    from wiki.llm.settings import open_client

    client = open_client(wiki, config)
    if client is not None:
        from wiki.answering.synthesis import synthesize_answer

        synthesize_answer(answer, entries, client)


def _fit(result: SearchResult, answer: Answer, budget: int, entries: list) -> None:
    from indexes.tokens import counter
    from wiki.answering.budget import fit
    from wiki.answering.embedding import model_name

    evidence = fit(answer.question, entries, budget, counter(model_name()))
    answer.sentences = evidence.sentences
    answer.citations = [_citation(number, entries[position], result)
                        for number, position in enumerate(evidence.cited, start=1)]
    answer.tokens = {"used": evidence.used, "budget": budget, "whole": evidence.whole,
                     "counter": evidence.counter}


def _annotate(answer: Answer, checks) -> None:
    """Copy each cited entry's revalidation onto its citation."""
    for citation in answer.citations:
        check = checks.entries.get(citation.path)
        if check is not None:
            citation.take_revalidation(check)
    answer.revalidation = checks.summary()


def _citation(number: int, entry, result: SearchResult) -> Citation:
    return Citation(number, entry.id, entry.path, entry.title, [s.uri for s in entry.sources],
                    [m["uri"] for m in result.marks.get(entry.path, [])])


def _record_gap(wiki: Wiki, answer: Answer) -> None:
    """Append the gap to ``gaps.jsonl`` for lint; a disk that refuses it (read-only,
    full) loses only this record, said in a notice, never the answer."""
    line = {"time": now_iso(), "question": answer.question, "commit": answer.commit,
            "confidence": round(answer.confidence, 4)}
    if answer.missing_type:
        line["missing_type"] = answer.missing_type
    if answer.gap_reason is not None:
        line["gap_reason"] = answer.gap_reason.code
    try:
        wiki.state_dir.mkdir(parents=True, exist_ok=True)
        with open(wiki.state_dir / "gaps.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
    except OSError as exc:
        cause = storage_cause(exc)
        if cause is None:
            raise
        notify(f"note: the evidence gap was not recorded in {wiki.state_dir / 'gaps.jsonl'} "
               f"({cause})")
