"""The extractive answer: the sentence that answers first, then its support, each cited.

The candidates are the :func:`wiki.store.markdown_text.answer_sentences` of the top entries
(their current source text for a stale one). Each is scored by
:func:`wiki.answering.sentence_scoring.score_sentences`: its words (BM25), its meaning (the cosine
of its vector, embedded at index time and handed over by the search, to the question's)
and whether it states what the question's form asks for. The answer opens with the best
sentence; the others above the floor follow, entry by entry. A how-to question whose best
sentence is a step opens with the run of steps around it, in order.

The answer is also where a gap gets its reason (:class:`GapReason`): the retrieval rule
(no entry shares the question's words or meaning), the answer type (a percentage or money
that no cited entry states, :mod:`wiki.answering.answer_type`), no candidate sentence answering
well enough (``no_answer``) or none stating the number, person or place asked for
(``missing_form``): a gap, never a guess (docs/architecture.md, "Asking"). An answer
that is not a gap but scores below ``hedge_score`` carries a hedge, the reason it may not
answer (:attr:`Picked.hedge`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from indexes.sqlite.vectors import text_hash
from wiki.answering.sentence_scoring import (
    PickerConfig,
    Scored,
    answer_score,
    form_missing,
    judged_cosine,
    pick,
    question_form,
    score_sentences,
)
from wiki.store.derived import embedded
from wiki.store.markdown_text import answer_sentences

DEFAULT = PickerConfig()
"""The product's picker (chosen on the staff tune half; docs/decisions.md)."""
MAX_SENTENCE_CHARS = 400

FORM_NAMES = {"amount": "a number or an amount", "code": "a code or a port number",
              "who": "a person or a team",
              "where": "a place, a channel or a link", "percent": "a percentage",
              "money": "an amount of money"}


@dataclass(frozen=True)
class GapReason:
    """Why an answer is an evidence gap: ``code`` (``no_match``: the retrieval rule;
    ``missing_type``: a percentage or money no cited entry states; ``no_answer``: no
    sentence answers well enough; ``missing_form``: none states the number, person or
    place asked for; ``judge_no``: the model's gap judge, :mod:`wiki.answering.gap_judge`)
    and ``sentence``, one line for people."""

    code: str
    sentence: str


@dataclass
class Picked:
    """The picker's outcome: ``sentences`` as ``(text, entry position)`` (the best first),
    the answer ``score`` (:func:`wiki.answering.sentence_scoring.answer_score`) and the ``gap``
    reason when no sentence answers."""

    sentences: list[tuple[str, int]]
    score: float
    gap: GapReason | None = None
    cosine: float | None = None
    """The cosine the answer score takes (:func:`wiki.answering.sentence_scoring.judged_cosine`;
    ``None`` without vectors)."""
    form_missing: str | None = None
    """The form the question asks for (``amount``, ``who``, ``where``, ...) when none of
    the best sentences states one (:func:`wiki.answering.sentence_scoring.form_missing`)."""
    hedge: str | None = None
    """Why the sentences are the closest evidence rather than a sure answer (the answer
    score is below ``hedge_score``), one line for people; ``None`` when sure or a gap."""


def pick_answer(question: str, entries: list, stored: dict, query_vector,
                config: PickerConfig = DEFAULT, *, coverage: float = 1.0,
                stale: frozenset[int] = frozenset(), embed=None) -> Picked:
    """Pick the answer's sentences from ``entries`` (``(title, markdown body)`` pairs, in
    rank order). ``stored``: ``hash of the embedded text -> vector`` from the index
    (:func:`embedded`); a sentence without one is encoded by ``embed(texts) -> (n, dim)``
    when given, else scored without its cosine (as is every sentence when
    ``query_vector`` is ``None``). ``coverage``: the retrieval's word coverage, part of the
    answer score. An entry at a ``stale`` position also gets its best sentence, so a
    changed value is shown, flagged. ``query_vector``: a numpy row or anything
    ``numpy.asarray`` reads as one (the server's
    :class:`indexes.embedding.query_vector.QueryVector`)."""
    if query_vector is not None:
        query_vector = np.asarray(query_vector, dtype=np.float32)
    texts: list[str] = []
    keys: list[str] = []
    positions: list[int] = []
    for position, (title, body) in enumerate(entries):
        for sentence in answer_sentences(body):
            texts.append(sentence)
            keys.append(embedded(title, sentence))
            positions.append(position)
    vectors = _vectors(keys, stored, query_vector, embed)
    scored = score_sentences(question, texts, positions, vectors, query_vector, config)
    chosen = pick(scored, config)
    if question_form(question) == "howto" and chosen and chosen[0].states:
        chosen = _steps(chosen, scored, config)
    for position in sorted(stale):
        if not any(s.entry == position for s in chosen):
            chosen += [s for s in scored if s.entry == position and s.score > 0][:1]
    score = answer_score(scored, coverage, config) if vectors is not None else 1.0
    picked = Picked([(_clip(texts[s.index]), s.entry) for s in chosen], score,
                    form_missing=form_missing(question, scored, config),
                    cosine=round(judged_cosine(scored, config), 4)
                    if scored and vectors is not None else None)
    picked.gap = _gap(picked, scored, config, vectors is not None)
    picked.hedge = _hedge(picked, config, vectors is not None)
    return picked


def _steps(chosen: list[Scored], scored: list[Scored], config: PickerConfig) -> list[Scored]:
    """A how-to answer whose best sentence is a step opens with the run of steps around it
    (neighbours in the same entry that also read as steps; around an imperative step,
    "Open ...", only imperative ones, so the run of a list does not reach into the
    paragraph before it: "You can also check the status page."), in their order, then
    the other picked sentences."""
    by_index = {s.index: s for s in scored}
    best = chosen[0]

    def step(s: Scored | None) -> bool:
        return (s is not None and s.entry == best.entry and s.states
                and (s.imperative or not best.imperative))

    start = end = best.index
    while step(by_index.get(start - 1)):
        start -= 1
    while step(by_index.get(end + 1)):
        end += 1
    run = [by_index[i] for i in range(start, end + 1)]
    rest = [s for s in chosen if not start <= s.index <= end]
    return (run + rest)[:max(config.max_sentences, 1)]


def _vectors(texts: list[str], stored: dict, query_vector, embed) -> np.ndarray | None:
    if query_vector is None or not texts:
        return None
    hashes = [text_hash(t) for t in texts]
    missing = [i for i, h in enumerate(hashes) if h not in stored]
    if missing and embed is None:
        return None if len(missing) == len(texts) else np.stack(
            [stored.get(h, np.zeros_like(query_vector)) for h in hashes])
    found = dict(zip([hashes[i] for i in missing],
                     embed([texts[i] for i in missing]) if missing else [], strict=True))
    return np.stack([np.asarray(stored.get(h, found.get(h)), dtype=np.float32)
                     for h in hashes])


def _gap(picked: Picked, scored: list[Scored], config: PickerConfig,
         vectors: bool) -> GapReason | None:
    if not scored:
        return None
    if vectors and config.gap_score is not None and picked.score < config.gap_score:
        return GapReason("no_answer", "no sentence of the closest entries answers the "
                         f"question (answer score {picked.score:.2f} < {config.gap_score})")
    if config.form_gap and picked.form_missing is not None:
        return GapReason("missing_form", f"the question asks for "
                         f"{FORM_NAMES[picked.form_missing]} and none of the best sentences "
                         "of the closest entries states one")
    return None


def _hedge(picked: Picked, config: PickerConfig, vectors: bool) -> str | None:
    """The reason an answer is hedged: not a gap, but its score (which needs the vectors)
    is below ``hedge_score`` (shown cut to two decimals, so never rounded up to it)."""
    if picked.gap is not None or not vectors or config.hedge_score is None \
            or picked.score >= config.hedge_score:
        return None
    return (f"the best sentence scores {math.floor(picked.score * 100) / 100:.2f} as an "
            f"answer, below the {config.hedge_score:g} a sure answer needs")


def _clip(text: str) -> str:
    if len(text) > MAX_SENTENCE_CHARS:
        return text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return text
