"""Tokenisation that mirrors SQLite FTS5's ``unicode61 remove_diacritics 2`` tokenizer.

The query side and the confidence estimate must see the same tokens as the index, so this
module is the single Python description of that tokenizer: case folded, diacritics
removed, tokens are maximal runs of Unicode letters and digits (``_`` and every other
punctuation or symbol separates tokens). Scripts written without spaces (CJK, Thai) come
out as one long token per run, which is why a trigram path exists for them.
"""

from __future__ import annotations

import re
import unicodedata

_TOKEN = re.compile(r"[^\W_]+")
# Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar: written without word spaces.
_NO_SPACE_SCRIPT = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)


def fold(text: str) -> str:
    """Return ``text`` case folded with diacritics removed (NFKD, combining marks dropped)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokens(text: str) -> list[str]:
    """Split ``text`` into index tokens, in order, duplicates kept."""
    return _TOKEN.findall(fold(text))


def has_token(word: str) -> bool:
    """True when ``word`` would yield at least one index token."""
    return _TOKEN.search(word) is not None


def no_space_runs(text: str) -> list[str]:
    """Runs of characters from scripts written without spaces (CJK, Thai, ...)."""
    return _NO_SPACE_SCRIPT.findall(text)
