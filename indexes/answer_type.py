"""Expected answer type: does the evidence state the kind of value the question asks for?

A question such as "what percentage does GSA match on TSP contributions?" can match an
entry on every word (TSP, contributions, GSA) while the entry never states a percentage:
retrieval scores cannot tell that apart from an answer, reading for the answer's *type*
can. This is the answer-type check of classic question answering (Li & Roth, "Learning
Question Classifiers", COLING 2002; Moldovan et al., "The Structure and Performance of an
Open-Domain Question Answering System", ACL 2000), cut down to the two types whose value
a text must *state* and a pattern recognises reliably in English:

* ``percent``: "what percentage/percent/proportion ..." — the evidence needs ``12%``,
  ``12 percent``;
* ``money``: "how much ... pay/cost/fee/salary/..." — the evidence needs ``$1,200``,
  ``1,200 dollars``, or a percentage (an amount can be a share of pay: "up to 5%").

Every other question has no expected type and is never judged here. Durations, years and
counts were measured and left out (docs/decisions.md): their answers are often *derived*
("since I was 17", two dated sessions, three separate mentions of a trip), so a text can
hold the answer without stating a value: on LoCoMo's gold evidence turns the check would
have failed 17 of 38 duration, 24 of 37 count and all 6 year questions
(evals/results/ask-gaps.md). The evidence side is
lenient (any mention of the type counts, whatever it is about), so the check only fires
when the text cannot hold the answer. English only: a question in another language has
no expected type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

QUESTION_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("percent", re.compile(
        r"\b(?:what|which)\s+(?:percentage|percent|proportion|fraction|share)\b"
        r"|\bhow\s+many\s+percent\b|\bwhat\s+%", re.I)),
    ("money", re.compile(
        r"\bhow\s+much\b[^?.!]*\b(?:pay|pays|paid|cost|costs|money|reimburs\w*|worth|"
        r"salary|fee|fees|charge|charges|spend|price|dollars?|allowance|stipend|bonus)\b"
        r"|\bhow\s+many\s+dollars\b", re.I)),
)
"""``(type, question pattern)`` in priority order: the first match decides."""

EVIDENCE: dict[str, re.Pattern[str]] = {
    "percent": re.compile(r"\d\s*(?:%|percent\b|per\s+cent\b)", re.I),
    "money": re.compile(r"[$€£]\s?\d|\b\d[\d,.]*\s*(?:dollars|usd|euros?|pounds)\b"
                        r"|\d\s*(?:%|percent\b)", re.I),
}
"""The pattern an evidence text must match to state a value of each type."""

TYPE_NAMES = {"percent": "a percentage", "money": "an amount of money"}
"""How a type reads in a sentence ("the question asks for a percentage")."""


def expected_type(question: str) -> str | None:
    """The answer type ``question`` asks for (a key of :data:`EVIDENCE`), or ``None``."""
    for name, pattern in QUESTION_TYPES:
        if pattern.search(question):
            return name
    return None


def states_type(text: str, kind: str) -> bool:
    """Whether ``text`` contains a value of answer type ``kind``. Raises ``KeyError`` for
    an unknown type."""
    return EVIDENCE[kind].search(text) is not None


def missing_type(question: str, evidence: Iterable[str]) -> str | None:
    """The answer type ``question`` asks for when none of the ``evidence`` texts states a
    value of that type (the evidence cannot hold the answer); ``None`` when the question
    has no expected type or some text states one."""
    kind = expected_type(question)
    if kind is None:
        return None
    return None if any(states_type(text, kind) for text in evidence) else kind
