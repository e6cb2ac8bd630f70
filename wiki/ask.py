"""Extractive answers: the most relevant sentences of the top entries, each cited.

Without a model, an answer is a handful of sentences taken verbatim from the best
entries, scored by how many of the question's (IDF-weighted) words they contain, each
with a citation ``[n]`` to its entry and, through it, to the entry's sources. When the
retrieval confidence is below the threshold the answer is an evidence gap, recorded in
``<git dir>/wiki/gaps.jsonl`` for lint, never a guess (DESIGN.md §5-6).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from indexes.confidence import idf
from indexes.query import query_words
from indexes.text import tokens
from wiki.entry import now_iso
from wiki.markdown_text import sentences
from wiki.search import SearchResult, filters_for, search
from wiki.workspace import Wiki

MAX_ENTRIES = 3
MAX_SENTENCES = 4
MAX_SENTENCE_CHARS = 400
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

    @property
    def gap(self) -> bool:
        return not self.sentences


def ask(wiki: Wiki, question: str, *, include_superseded: bool = False,
        category: str | None = None) -> Answer:
    """Answer ``question`` from the wiki. Raises ``EmptyQueryError`` for an empty question
    and ``NotInitializedError`` without a wiki branch; a gap is a normal return."""
    result = search(wiki, question, limit=10,
                    filters=filters_for(include_superseded=include_superseded,
                                        category=category))
    answer = Answer(question, result.commit, result.confidence, result.threshold)
    if not result.gap:
        _extract(wiki, result, answer)
    if answer.gap:
        _record_gap(wiki, answer)
    return answer


def _extract(wiki: Wiki, result: SearchResult, answer: Answer) -> None:
    snapshot = wiki.snapshot(result.commit)
    query_tokens = {t for w in query_words(result.query) for t in tokens(w)}
    weights = {t: idf(result.document_frequency.get(t, 0), result.n_docs) for t in query_tokens}
    scored: list[tuple[float, int, str, int]] = []
    cited: dict[str, Citation] = {}
    for position, hit in enumerate(result.hits[:MAX_ENTRIES]):
        entry = snapshot.entry(hit.key)
        number = len(cited) + 1
        cited[hit.key] = Citation(number, entry.id, entry.path, entry.title,
                                  [s.uri for s in entry.sources])
        for order, sentence in enumerate(sentences(entry.body)):
            words = set(tokens(sentence))
            overlap = sum(weights[t] for t in query_tokens & words)
            if overlap <= 0 or len(words) < 3:
                continue
            # earlier entries and longer matches first; very long sentences are trimmed
            score = overlap / math.sqrt(1 + position) - 0.01 * order
            text = sentence if len(sentence) <= MAX_SENTENCE_CHARS else \
                sentence[:MAX_SENTENCE_CHARS].rsplit(" ", 1)[0] + " …"
            scored.append((score, position, text, number))
    scored.sort(key=lambda s: (-s[0], s[1]))
    floor = RELATIVE_FLOOR * scored[0][0] if scored else 0.0
    picked: list[tuple[str, int]] = []
    for score, _, text, number in scored:
        if score < floor:
            break
        if text not in {t for t, _ in picked}:
            picked.append((text, number))
        if len(picked) == MAX_SENTENCES:
            break
    used = {n for _, n in picked}
    answer.sentences = picked
    answer.citations = [c for c in cited.values() if c.number in used]


def _record_gap(wiki: Wiki, answer: Answer) -> None:
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    line = {"time": now_iso(), "question": answer.question, "commit": answer.commit,
            "confidence": round(answer.confidence, 4)}
    with open(wiki.state_dir / "gaps.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, ensure_ascii=False) + "\n")
