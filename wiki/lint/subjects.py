"""W013 conflicting-subject: two active entries about the same subject that state
different numbers or dates for it (the heuristic half of contradiction; W003 is the exact
half, over ``facts:`` keys).

* **Values** are the dates (``2024-03-01``, ``March 1, 2024``, ``1 March 2024``) and numbers
  (``$1,250.00`` -> ``1250``, ``75%`` -> ``75%``) in an entry's *summary*, the one sentence
  that states its gist.
* **Subject** is the set of folded words of the title and the summary with the values
  and stopwords taken out; numbers in the *title* (and hyphenated ones such as
  ``SF-1012``) stay in the subject, since there they name things (``Section 508``,
  ``Sprint 12``), and two entries must agree on them.
* Two entries conflict when their subjects are near-identical (Jaccard similarity
  >= :data:`SIMILARITY` for the title words alone and for the whole subject) and each
  states a value the other does not (neither set of values contains the other: saying
  less is not a contradiction).

Candidate pairs come from prefix filtering (rarest words first), so the rule stays far
from quadratic on a large wiki.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter

from indexes.retrieval.names import fold_name
from indexes.retrieval.query import STOPWORDS
from wiki.lint.model import WARNING, Finding, LintContext, rule
from wiki.store.entry import Entry

SIMILARITY = 0.7
_MONTHS = {m: n for n, names in enumerate((
    ("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
    ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
    ("oct", "october"), ("nov", "november"), ("dec", "december")), start=1) for m in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATES = [
    re.compile(r"\b(?P<year>\d{4})-(?P<mon>\d{1,2})-(?P<day>\d{1,2})\b"),
    re.compile(_MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<year>\d{4})\b", re.I),
    re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<year>\d{4})\b",
               re.I),
]
_NUMBER = re.compile(r"(?<![\w.,/-])[$€£]?(?P<num>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?"
                     r"(?P<pct>\s?%)?(?![\w])")


def _date(match: re.Match) -> str | None:
    parts = match.groupdict()
    month = int(parts["mon"]) if parts.get("mon") else _MONTHS[parts["month"].lower()]
    try:
        return dt.date(int(parts["year"]), month, int(parts["day"])).isoformat()
    except ValueError:
        return None


def values_of(text: str) -> tuple[set[str], str]:
    """The normalised dates and numbers stated in ``text``, and the text without them."""
    found: set[str] = set()
    for pattern in _DATES:
        def take(match: re.Match) -> str:
            value = _date(match)
            if value is None:
                return match.group(0)
            found.add(value)
            return " "
        text = pattern.sub(take, text)

    def number(match: re.Match) -> str:
        value = match["num"].replace(",", "")
        frac = (match["frac"] or "").rstrip("0").rstrip(".")
        value = str(int(value)) + frac + ("%" if match["pct"] else "")
        found.add(value)
        return " "
    return found, _NUMBER.sub(number, text)


def _words(text: str) -> set[str]:
    return {w for w in fold_name(text).split() if w not in STOPWORDS}


def subject_and_values(entry: Entry) -> tuple[frozenset[str], frozenset[str], set[str]]:
    """The title words, the subject words and the stated values of ``entry`` (see the
    module docstring)."""
    values, rest = values_of(entry.summary)
    title = frozenset(_words(entry.title))
    return title, title | _words(rest), values


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a | b) and len(a & b) / len(a | b) >= SIMILARITY


def _candidates(items: list[tuple[Entry, frozenset[str], frozenset[str], set[str]]]):
    """Index pairs whose subjects may reach :data:`SIMILARITY` (prefix filtering: two sets
    that similar share a word among the first ``|s| - ceil(t*|s|) + 1`` rarest of each)."""
    frequency = Counter(w for _, _, subject, _ in items for w in subject)
    postings: dict[str, list[int]] = {}
    pairs: set[tuple[int, int]] = set()
    for i, (_, _, subject, _) in enumerate(items):
        ordered = sorted(subject, key=lambda w: (frequency[w], w))
        prefix = ordered[:len(ordered) - math.ceil(SIMILARITY * len(ordered)) + 1]
        for word in prefix:
            for j in postings.setdefault(word, []):
                pairs.add((j, i))
            postings[word].append(i)
    return sorted(pairs)


@rule("W013", "conflicting-subject", WARNING)
def conflicting_subject(ctx: LintContext):
    """Two active entries with near-identical subjects whose summaries state different
    numbers or dates (see the module docstring). Each entry gets a finding naming the
    other; decide which is right, then edit or supersede the other."""
    items = []
    for entry in ctx.active:
        title, subject, values = subject_and_values(entry)
        if values and len(subject) >= 2:
            items.append((entry, title, subject, values))
    for i, j in _candidates(items):
        (a, ta, sa, va), (b, tb, sb, vb) = items[i], items[j]
        if not (_similar(ta, tb) and _similar(sa, sb)) or va <= vb or vb <= va or \
                {w for w in sa if w.isdigit()} != {w for w in sb if w.isdigit()}:
            continue  # not the same subject, or one only says less
        for one, other, mine, theirs in ((a, b, va, vb), (b, a, vb, va)):
            yield Finding("W013", WARNING, one.path, f"same subject as {other.path} "
                          f"({other.title!r}) but states {', '.join(sorted(mine - theirs))} "
                          f"where it states {', '.join(sorted(theirs - mine))}", one.id)
