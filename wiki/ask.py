"""Extractive answers: the most relevant sentences of the top entries, each cited.

Without a model, an answer is a handful of sentences taken verbatim from the best
entries, ranked by BM25 against the question with the index's own tokenizer
(:func:`indexes.passages.rank_passages`) and discounted by the rank of their entry, each
with a citation ``[n]`` to its entry and, through it, to the entry's sources. When the
retrieval confidence is below the threshold the answer is an evidence gap, recorded in
``<git dir>/wiki/gaps.jsonl`` for lint, never a guess (DESIGN.md §5-6).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field

from indexes.passages import rank_passages
from indexes.vectors import Progress
from wiki.entry import now_iso
from wiki.markdown_text import sentences, word_count
from wiki.search import SearchResult, filters_for, search
from wiki.workspace import Wiki

MAX_ENTRIES = 3
MAX_SENTENCES = 4
MAX_SENTENCE_CHARS = 400
MIN_SENTENCE_WORDS = 4
RELATIVE_FLOOR = 0.4
"""A sentence scoring below this share of the best sentence is left out."""


@dataclass
class Citation:
    """A cited entry: ``number`` as used in ``[n]``, its id, path, title and source uris."""

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
    llm: dict | None = None
    """What the model did and cost, when the ``llm`` leg or the rerank ran."""

    @property
    def gap(self) -> bool:
        return not self.sentences


def ask(wiki: Wiki, question: str, *, include_superseded: bool = False,
        category: str | None = None, legs: tuple[str, ...] | None = None,
        progress: Progress | None = None, as_of: dt.datetime | None = None,
        rerank: bool = False) -> Answer:
    """Answer ``question`` from the wiki. Raises ``EmptyQueryError`` for an empty question
    and ``NotInitializedError`` without a wiki branch; a gap is a normal return."""
    result = search(wiki, question, limit=10, legs=legs, progress=progress, as_of=as_of,
                    rerank=rerank,
                    filters=filters_for(include_superseded=include_superseded,
                                        category=category))
    answer = Answer(question, result.commit, result.confidence, result.threshold,
                    top_cosine=result.top_cosine, llm=result.llm)
    if not result.gap:
        _extract(wiki, result, answer)
    if answer.gap:
        _record_gap(wiki, answer)
    return answer


def _extract(wiki: Wiki, result: SearchResult, answer: Answer) -> None:
    snapshot = wiki.snapshot(result.commit)
    candidates: list[tuple[int, str]] = []  # (entry position, sentence)
    entries = []
    for position, hit in enumerate(result.hits[:MAX_ENTRIES]):
        entry = snapshot.entry(hit.key)
        entries.append(entry)
        candidates += [(position, s) for s in sentences(entry.body)
                       if word_count(s) >= MIN_SENTENCE_WORDS]
    ranked = rank_passages(result.query, [s for _, s in candidates], limit=50)
    scored = sorted(((score / math.sqrt(1 + candidates[i][0]), i) for i, score in ranked),
                    key=lambda pair: (-pair[0], pair[1]))
    floor = RELATIVE_FLOOR * scored[0][0] if scored else 0.0
    numbers: dict[int, int] = {}
    picked: list[tuple[str, int]] = []
    for score, i in scored:
        if score < floor or len(picked) == MAX_SENTENCES:
            break
        position, text = candidates[i]
        if len(text) > MAX_SENTENCE_CHARS:
            text = text[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
        if any(text == t for t, _ in picked):
            continue
        number = numbers.setdefault(position, len(numbers) + 1)
        picked.append((text, number))
    if not picked and entries:  # confident retrieval, no sentence matched: the summary
        picked.append((entries[0].summary or entries[0].title, 1))
        numbers[0] = 1
    answer.sentences = picked
    answer.citations = [Citation(number, entries[position].id, entries[position].path,
                                 entries[position].title,
                                 [s.uri for s in entries[position].sources],
                                 [m["uri"] for m in result.marks.get(entries[position].path, [])])
                        for position, number in sorted(numbers.items(), key=lambda p: p[1])]


def _record_gap(wiki: Wiki, answer: Answer) -> None:
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    line = {"time": now_iso(), "question": answer.question, "commit": answer.commit,
            "confidence": round(answer.confidence, 4)}
    with open(wiki.state_dir / "gaps.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
