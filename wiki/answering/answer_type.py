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
* ``money``: "how much does it cost/pay ...", "how much salary/allowance ..." (not "how
  much time/leave ...": an amount of that noun) — the evidence needs ``$1,200``,
  ``1,200 dollars``, ``65.5 cents``, "free of charge", or a percentage (an amount can be a
  share of pay: "up to 5%").

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
from itertools import takewhile

_NUMBER_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                r"fifteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
                r"thousand|million)")
QUESTION_TYPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("percent", re.compile(
        r"\b(?:what|which)\s+(?:percentage|percent|proportion|fraction)\b"
        r"|\b(?:what|which)\s+share\s+of\b|\bhow\s+many\s+percent\b|\bwhat\s+%", re.I)),
    ("money", re.compile(r"\bhow\s+many\s+dollars\b", re.I)),
)
"""``(type, question pattern)`` in priority order: the first match decides. "share" is a
proportion only before "of" ("what share drive", "which share do I mount" name a folder);
"how much" questions are judged by :func:`_asks_money`."""

_HOW_MUCH = re.compile(r"\bhow\s+much\b([^?.!]*)", re.I)
_MONEY_WORDS = re.compile(
    r"^(?:pay|pays|paid|cost|costs|money|reimburs\w*|worth|salary|fee|fees|charge|charges|"
    r"spend|price|dollars?|allowance|stipend|bonus)$")
"""Words after "how much" + a verb that make it a question about money."""
_MONEY_NOUNS = re.compile(
    r"^(?:money|cash|salary|salaries|pay|wages?|fees?|charges?|allowances?|stipends?|"
    r"bonus(?:es)?|dollars?|funding|funds|reimbursements?|compensation|rent|tuition|"
    r"deposits?|diem|budget|price)$")
"""Head nouns of "how much NOUN ..." that are amounts of money ("how much per diem")."""
_NOT_NOUN = frozenset({
    "do", "does", "did", "is", "are", "was", "were", "will", "would", "can", "could",
    "should", "shall", "may", "might", "must", "has", "have", "had", "i", "we", "you",
    "they", "he", "she", "it", "my", "our", "your", "their", "his", "her", "its", "the",
    "a", "an", "of", "this", "that", "these", "those", "for", "to", "in", "on", "at",
    "more", "less", "extra"})
"""Words that end the noun phrase after "how much" (a verb, pronoun, article, "of")."""


def _asks_money(question: str) -> bool:
    """ "how much" + a noun asks for an amount of that noun: money only when the noun is
    one ("how much travel allowance", not "how much paid leave", "how much time ... pay");
    "how much" + a verb asks for money when a money word follows ("how much does it
    cost", "how much of my salary")."""
    found = _HOW_MUCH.search(question)
    if found is None:
        return False
    words = re.findall(r"[^\W\d_]+", found[1].casefold())
    phrase = list(takewhile(lambda w: w not in _NOT_NOUN, words))
    if phrase:
        return _MONEY_NOUNS.match(phrase[-1]) is not None
    return any(_MONEY_WORDS.match(w) for w in words)


_AMOUNT = r"\d[\d,.]*\s*(?:(?:k|m|bn|thousand|million|billion)\b\s*)?"
EVIDENCE: dict[str, re.Pattern[str]] = {
    "percent": re.compile(
        rf"(?:\d|\b{_NUMBER_WORD})\s*(?:%|percent\b|per\s+cent\b)"
        rf"|\b(?:a|one|two|three|four|{_NUMBER_WORD})[\s-]+(?:half|halves|thirds?|quarters?|"
        r"fifths?|tenths?)\s+of\b|\bhalf\s+of\b|\b\d+\s*(?:in|out\s+of)\s+\d+\b"
        r"|\b\d+\s*/\s*\d+\b", re.I),
    "money": re.compile(
        r"[$€£¥₹]\s?\d|\d\s?[$€£¥₹¢]|\b(?:usd|eur|gbp|chf|cad|aud|jpy)\s?\d"
        rf"|{_AMOUNT}(?:dollars|usd|eur|euros?|pounds|gbp|chf|yen|cents?)\b"
        rf"|\b{_NUMBER_WORD}\s+(?:dollars|euros?|pounds|cents)\b"
        r"|\bfree\s+of\s+charge\b|\b(?:at\s+)?no\s+(?:cost|charge|fee)\b|\bcosts?\s+nothing\b"
        r"|\d\s*(?:%|percent\b)", re.I),
}
"""The pattern an evidence text must match to state a value of each type: digits or number
words with a percent sign or word, a fraction or ratio ("one third of", "3 in 10", "1/4");
a currency symbol, code or word next to an amount ("65.5 cents", "USD 50", "1.2 million
dollars", "300 €"), "free of charge" / "no cost" (an amount of nothing), or a percentage."""

TYPE_NAMES = {"percent": "a percentage", "money": "an amount of money"}
"""How a type reads in a sentence ("the question asks for a percentage")."""


def expected_type(question: str) -> str | None:
    """The answer type ``question`` asks for (a key of :data:`EVIDENCE`), or ``None``."""
    for name, pattern in QUESTION_TYPES:
        if pattern.search(question):
            return name
    return "money" if _asks_money(question) else None


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
