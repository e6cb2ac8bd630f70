"""Evidence that fits a token budget (``wiki ask --budget N``).

The candidates are the sentences of the top :data:`MAX_ENTRIES` hits, each cited ``[n]``
to its entry, plus one citation line per cited entry (``[n] title — path``); both count
against the budget, so the returned text, as rendered, never exceeds it. Sentences are
whole or absent: trimming drops sentences, never cuts one, and a citation is never split
from its sentence.

Selection is greedy in two passes: first the best sentence of each entry in rank order
(so the evidence still covers the entries the unbudgeted answer would cite), then the
remaining sentences by relevance (BM25 against the question, discounted by
``1 / sqrt(1 + entry position)`` as in :mod:`wiki.answering.ask`). A sentence that does not fit is
skipped and smaller ones are still tried. The whole-entry context (title and body of the
same entries plus their citation lines) is counted too, to report what was saved.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from indexes.passages import rank_passages
from indexes.tokens import TokenCounter
from wiki.store.entry import Entry
from wiki.store.markdown_text import plain_text, sentences, word_count

MAX_ENTRIES = 5
MIN_WORDS = 3
_REFERENCE = re.compile(r"^\[[^\]]+\]:")


@dataclass
class Evidence:
    """Sentences ``(text, citation number)`` in citation then document order, the cited
    entries ``cited`` (positions in the ranked list, by citation number), ``used`` tokens,
    the ``budget``, ``whole`` (tokens of the whole-entry context) and the ``counter``."""

    sentences: list[tuple[str, int]] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)
    used: int = 0
    budget: int = 0
    whole: int = 0
    counter: str = ""


def citation_line(number: int, entry: Entry) -> str:
    """The line that resolves ``[number]``, as rendered and counted."""
    return f"[{number}] {entry.title} — {entry.path}"


def fit(question: str, entries: list[Entry], budget: int, counter: TokenCounter) -> Evidence:
    """The best evidence from ``entries`` (ranked, best first) within ``budget`` tokens
    (see the module docstring). A budget too small for any sentence gives no evidence."""
    entries = entries[:MAX_ENTRIES]
    candidates: list[tuple[int, int, str]] = []  # (entry position, order in entry, text)
    for position, entry in enumerate(entries):
        found = [s for s in sentences(entry.body)
                 if word_count(s) >= MIN_WORDS and not _REFERENCE.match(s)]
        if not found and (entry.summary or entry.title):
            found = [entry.summary or entry.title]
        candidates += [(position, order, text) for order, text in enumerate(found)]
    relevance = {i: score for i, score in rank_passages(
        question, [c[2] for c in candidates], limit=max(len(candidates), 1))}
    score = {i: relevance.get(i, 0.0) / math.sqrt(1 + candidates[i][0])
             for i in range(len(candidates))}
    best_of: dict[int, int] = {}
    for i in sorted(score, key=lambda i: (-score[i], i)):
        best_of.setdefault(candidates[i][0], i)
    order = [best_of[p] for p in sorted(best_of)]
    order += [i for i in sorted(score, key=lambda i: (-score[i], i)) if i not in order]
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
            continue
        used += cost
        numbers[position] = number
        taken.append(i)
    taken.sort(key=lambda i: (numbers[candidates[i][0]], candidates[i][1]))
    whole = sum(counter.count(f"{e.title}\n{plain_text(e.body)}") + 1
                + counter.count(citation_line(n, e)) + 1
                for n, e in enumerate(entries, start=1))
    return Evidence([(candidates[i][2], numbers[candidates[i][0]]) for i in taken],
                    sorted(numbers, key=numbers.get), used, budget, whole, counter.name)
