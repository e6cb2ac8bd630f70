"""Key words of a quote, to judge whether an extractive answer holds it.

A *key word* is a lower-case word token (``cloud.gov`` and ``$25`` stay one token) that is
not a stop word nor a link fragment (``http...``, ``www.``, ``.html``). Bold and code marks
are dropped first, so a markdown quote and the answer's plain sentence compare equal.
Used by :mod:`evals.changed` (new and removed key words of a changed quote) and
:mod:`evals.answers` (support quotes found in an answer).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9][a-z0-9.$]*[a-z0-9]|[a-z0-9]")
STOP = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "do", "for", "from",
                  "if", "in", "is", "it", "its", "it's", "of", "on", "or", "that",
                  "the", "this", "to", "we", "with", "who", "your", "you", "may",
                  "not", "can", "use"})


def words(text: str) -> set[str]:
    """Lower-case word tokens (``cloud.gov`` and ``$25`` stay one token)."""
    return set(_WORD.findall(text.lower().replace("**", "").replace("`", "")))


def keys(words_: set[str]) -> set[str]:
    """``words_`` less stop words and link fragments."""
    return {w for w in words_ if w not in STOP and not w.startswith(("http", "www."))
            and not w.endswith((".htm", ".html"))}


def squash(text: str) -> str:
    """Lower-case words of ``text`` joined by single spaces (markup dropped)."""
    return " ".join(_WORD.findall(text.lower().replace("**", "").replace("`", "")))


def holds(quote: str, text: str) -> bool:
    """Whether ``text`` holds at least half of the key words of ``quote`` (a quote
    without key words is never held)."""
    wanted = keys(words(quote))
    return bool(wanted) and 2 * len(wanted & words(text)) >= len(wanted)
