"""Evidence that fits a token budget (``wiki ask --budget N``).

The candidates are the sentences of the top :data:`MAX_ENTRIES` hits, each cited ``[n]``
to its entry, plus one citation line per cited entry (``[n] title — path``); both count
against the budget, so the returned text, as rendered, never exceeds it. Sentences are
whole or absent: trimming drops sentences, never cuts one, and a citation is never split
from its sentence.

Selection is greedy. The ``lead`` sentences come first, in their order: the answer the
picker chose (:func:`wiki.answering.picker.pick_answer`, the unbudgeted answer's sentences),
so a budget shortens the answer and never changes what it opens with. Then the best
sentence of each entry in rank order (so the evidence still covers the entries the
unbudgeted answer would cite), then the remaining sentences by relevance (BM25 against the
question, discounted by ``1 / sqrt(1 + entry position)`` as in :mod:`wiki.answering.ask`);
a sentence sharing none of the question's words is never filler. A sentence that does not
fit is skipped and smaller ones are still tried, except the first: when the sentence the
answer opens with does not fit with its citation line, the evidence is empty and
:attr:`Evidence.needed` says how many tokens it needs (``wiki ask`` reports that, exit 3,
instead of answering from a lesser sentence of another entry; docs/decisions.md). The
whole-entry context (title and body of the same entries plus their citation lines) is
counted too, to report what was saved.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from indexes.retrieval.passages import rank_passages
from indexes.retrieval.tokens import TokenCounter
from wiki.store.entry import Entry
from wiki.store.markdown_text import plain_text, sentences, word_count

MAX_ENTRIES = 5
MIN_WORDS = 3
_REFERENCE = re.compile(r"^\[[^\]]+\]:")


@dataclass
class Evidence:
    """Sentences ``(text, citation number)`` in citation then document order, the cited
    entries ``cited`` (positions in the ranked list, by citation number), ``used`` tokens,
    the ``budget``, ``whole`` (tokens of the whole-entry context), the ``counter``, and
    ``needed``: when the opening sentence does not fit (no sentences then), the tokens it
    needs with its citation line, else 0."""

    sentences: list[tuple[str, int]] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    used: int = 0
    budget: int = 0
    whole: int = 0
    counter: str = ""
    needed: int = 0


def citation_line(number: int, entry: Entry) -> str:
    """The line that resolves ``[number]``, as rendered and counted."""
    return f"[{number}] {entry.title} — {entry.path}"


def fit(question: str, entries: list[Entry], budget: int, counter: TokenCounter,
        lead: Sequence[tuple[str, int]] = ()) -> Evidence:
    """The best evidence from ``entries`` (ranked, best first) within ``budget`` tokens
    (see the module docstring). ``lead``: ``(text, entry position)`` sentences that open
    the evidence, in order (the picked answer). When the opening sentence does not fit,
    the evidence is empty and ``needed`` is set."""
    entries = entries[:MAX_ENTRIES]
    candidates: list[tuple[int, int, str]] = []  # (entry position, order in entry, text)
    for position, entry in enumerate(entries):
        found = [s for s in sentences(entry.body)
                 if word_count(s) >= MIN_WORDS and not _REFERENCE.match(s)]
        if not found and (entry.summary or entry.title):
            found = [entry.summary or entry.title]
        candidates += [(position, order, text) for order, text in enumerate(found)]
    leading = _leading(candidates, [(t, p) for t, p in lead if p < len(entries)])
    relevance = {i: score for i, score in rank_passages(
        question, [c[2] for c in candidates], limit=max(len(candidates), 1))}
    score = {i: relevance.get(i, 0.0) / math.sqrt(1 + candidates[i][0])
             for i in range(len(candidates)) if relevance.get(i, 0.0) > 0}
    ranked = sorted(score, key=lambda i: (-score[i], i))
    best_of: dict[int, int] = {}
    for i in ranked:
        best_of.setdefault(candidates[i][0], i)
    order = list(leading)
    order += [best_of[p] for p in sorted(best_of) if best_of[p] not in order]
    order += [i for i in ranked if i not in order]
    numbers: dict[int, int] = {}
    taken: list[int] = []
    used = 0
    for i in order:
        position, _, text = candidates[i]
        number = numbers.get(position, len(numbers) + 1)
        cost = counter.count(f"{text} [{number}]") + 1
        if position not in numbers:
            cost += counter.count(citation_line(number, entries[position])) + 1
        if used + cost > budget:
            if not taken:  # the opening sentence: without it the evidence would mislead
                return Evidence([], [], 0, budget, _whole(entries, counter), counter.name,
                                needed=cost)
            continue
        used += cost
        numbers[position] = number
        taken.append(i)
    opening = [i for i in leading if i in taken]
    taken = opening + sorted((i for i in taken if i not in opening),
                             key=lambda i: (numbers[candidates[i][0]], candidates[i][1]))
    return Evidence([(candidates[i][2], numbers[candidates[i][0]]) for i in taken],
                    sorted(numbers, key=numbers.get), used, budget,
                    _whole(entries, counter), counter.name)


def _leading(candidates: list[tuple[int, int, str]],
             lead: list[tuple[str, int]]) -> list[int]:
    """The indexes into ``candidates`` of the ``lead`` sentences, in order; a lead sentence
    that is not a candidate as written (the picker clips a long one) is appended as one."""
    at = {(position, text): i for i, (position, _, text) in enumerate(candidates)}
    out: list[int] = []
    for text, position in lead:
        i = at.get((position, text))
        if i is None:
            i = next((j for j, (p, _, t) in enumerate(candidates) if p == position
                      and text.endswith(" …") and t.startswith(text[:-2])), None)
        if i is None:
            candidates.append((position, len(candidates), text))
            i = at[(position, text)] = len(candidates) - 1
        else:
            candidates[i] = (position, candidates[i][1], text)  # as the answer shows it
        if i not in out:
            out.append(i)
    return out


def _whole(entries: list[Entry], counter: TokenCounter) -> int:
    """Tokens of the whole-entry context: each entry's title, body and citation line."""
    return sum(counter.count(f"{e.title}\n{plain_text(e.body)}") + 1
               + counter.count(citation_line(n, e)) + 1
               for n, e in enumerate(entries, start=1))
