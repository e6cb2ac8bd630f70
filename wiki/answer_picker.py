"""The extractive answer: the sentence that answers first, then its support, each cited.

The candidates are the :func:`wiki.markdown_text.answer_sentences` of the top entries
(their current source text for a stale one). Each is scored by
:func:`indexes.sentence_scoring.score_sentences`: its words (BM25), its meaning (the cosine
of its vector, embedded at index time and handed over by the search, to the question's)
and whether it states what the question's form asks for. The answer opens with the best
sentence; the others above the floor follow, entry by entry.

The answer is also where a gap gets its reason (:class:`GapReason`): the retrieval rule
(no entry shares the question's words or meaning), the answer type (a percentage or money
that no cited entry states, :mod:`indexes.answer_type`), or, new here, no candidate
sentence answering well enough (``no_answer``) or none stating the number, person or place
asked for (``missing_form``). DESIGN.md §5-6: a gap, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from indexes.sentence_scoring import (
    PickerConfig,
    Scored,
    answer_score,
    form_missing,
    pick,
    score_sentences,
)
from indexes.vectors import text_hash
from wiki.markdown_text import answer_sentences

DEFAULT = PickerConfig()
"""The product's picker (chosen on the staff tune half; docs/decisions.md)."""
MAX_SENTENCE_CHARS = 400

FORM_NAMES = {"amount": "a number or an amount", "who": "a person or a team",
              "where": "a place, a channel or a link", "percent": "a percentage",
              "money": "an amount of money"}


@dataclass(frozen=True)
class GapReason:
    """Why an answer is an evidence gap: ``code`` (``no_match``: the retrieval rule;
    ``missing_type``: a percentage or money no cited entry states; ``no_answer``: no
    sentence answers well enough; ``missing_form``: none states the number, person or
    place asked for) and ``sentence``, one line for people."""

    code: str
    sentence: str


@dataclass
class Picked:
    """The picker's outcome: ``sentences`` as ``(text, entry position)`` (the best first),
    the answer ``score`` (:func:`indexes.sentence_scoring.answer_score`) and the ``gap``
    reason when no sentence answers."""

    sentences: list[tuple[str, int]]
    score: float
    gap: GapReason | None = None
    form_missing: str | None = None
    """The form the question asks for (``amount``, ``who``, ``where``, ...) when none of
    the best sentences states one (:func:`indexes.sentence_scoring.form_missing`)."""


def pick_answer(question: str, bodies: list[str], stored: dict, query_vector,
                config: PickerConfig = DEFAULT, *, stale: frozenset[int] = frozenset(),
                embed=None) -> Picked:
    """Pick the answer's sentences from the entry ``bodies`` (markdown, in rank order).
    ``stored``: ``sentence hash -> vector`` from the index; a sentence without one is
    encoded by ``embed(texts) -> (n, dim)`` when given, else scored without its cosine
    (as is every sentence when ``query_vector`` is ``None``). An entry at a ``stale``
    position also gets its best sentence, so a changed value is shown, flagged."""
    texts: list[str] = []
    entries: list[int] = []
    for position, body in enumerate(bodies):
        for sentence in answer_sentences(body):
            texts.append(sentence)
            entries.append(position)
    vectors = _vectors(texts, stored, query_vector, embed)
    scored = score_sentences(question, texts, entries, vectors, query_vector, config)
    chosen = pick(scored, config)
    for position in sorted(stale):
        if not any(s.entry == position for s in chosen):
            chosen += [s for s in scored if s.entry == position and s.score > 0][:1]
    score = answer_score(scored, config) if vectors is not None else 1.0
    picked = Picked([(_clip(texts[s.index]), s.entry) for s in chosen], score,
                    form_missing=form_missing(question, scored, config))
    picked.gap = _gap(picked, scored, config, vectors is not None)
    return picked


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


def _clip(text: str) -> str:
    if len(text) > MAX_SENTENCE_CHARS:
        return text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
    return text
