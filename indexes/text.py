"""Which characters make words, and which scripts are written without spaces.

The index's tokenizer is SQLite's ``porter unicode61 remove_diacritics 2``: tokens are runs
of Unicode letters and digits, case folded, diacritics removed, Porter-stemmed. Matching
is always left to SQLite itself (queries are quoted strings that FTS5 tokenises), so this
module only answers two questions the query builder needs before SQLite sees the text.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]")
# Han, Hiragana, Katakana, Hangul, Thai, Lao, Khmer, Myanmar: written without word spaces.
_NO_SPACE_SCRIPT = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+"
)


def has_token(word: str) -> bool:
    """True when ``word`` holds at least one letter or digit (so FTS5 sees a token)."""
    return _TOKEN.search(word) is not None


def no_space_runs(text: str) -> list[str]:
    """Runs of characters from scripts written without spaces (CJK, Thai, ...)."""
    return _NO_SPACE_SCRIPT.findall(text)
