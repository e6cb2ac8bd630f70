"""Which characters make words, and which scripts are written without spaces.

The index's tokenizer is SQLite's ``porter unicode61 remove_diacritics 2``: tokens are runs
of Unicode letters and digits, case folded, diacritics removed, Porter-stemmed. Matching
is always left to SQLite itself (queries are quoted strings that FTS5 tokenises), so this
module only answers two questions the query builder needs before SQLite sees the text.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]")
# Han, Hiragana, Katakana, Hangul (syllables and jamo), Thai, Lao, Khmer, Myanmar: written
# without word spaces (or, for Korean, with particles glued to the word). Jamo and the
# half-width forms stay in the set for text NFKC cannot compose (old Hangul).
_NO_SPACE_SCRIPT = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1100-\u11ff\u1780-\u17ff\u3040-\u30ff\u3130-\u318f"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff"
    "\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003134f]+"
)


def has_token(word: str) -> bool:
    """True when ``word`` holds at least one letter or digit (so FTS5 sees a token)."""
    return _TOKEN.search(word) is not None


def no_space_runs(text: str) -> list[str]:
    """Runs of characters from scripts written without spaces (CJK, Thai, ...)."""
    return _NO_SPACE_SCRIPT.findall(text)


_CODE_TOKEN = re.compile(
    r"(?<![\w.+#-])(?P<word>[^\W\d_][^\W_]{0,15})(?P<op>\+\+|#)(?![+#])"
    r"|(?<![\w.+#*-])(?P<short>[^\W\d_])(?P<sop>--|\*)(?![\w+#*-])"
    r"|(?<![\w.])(?P<dot>\.)(?P<net>net)(?![\w])", re.IGNORECASE)
_SPELLED = {"++": "plusplus", "#": "sharp", "--": "minusminus", "*": "star"}


def code_tokens(text: str) -> str:
    """``text`` with a spelled-out token after each code-like name whose symbols the
    unicode61 tokenizer drops: ``C++`` -> ``C++ cplusplus``, ``C#`` -> ``C# csharp``,
    ``F#`` -> ``F# fsharp``, ``g++`` -> ``g++ gplusplus``, ``.NET`` -> ``.NET dotnet``.

    Applied identically to indexed text (the FTS column values, through the SQLite
    function ``wiki_fts``) and to each query word before it is quoted, so the phrase a
    query word becomes is exactly the token run the index holds: ``C++`` is the phrase
    ``c cplusplus``, which "appendix C" or "vitamin C" never match, while the letter ``c``
    still matches every text naming C++ (the original tokens are kept). ``#`` counts only
    after a name of one or two letters (``C#``, ``F#``, ``J#``), so a URL fragment such
    as ``docs#install`` is left alone; ``++`` after a name of up to 16 characters
    (``Notepad++``, ``i++``). ``--`` and ``*`` count only after a single letter standing
    alone (``C--`` -> ``C-- cminusminus``, ``A*`` -> ``A* astar``, ``D*``), so prose
    dashes (``well--``), options (``--help``) and globs (``*.md``, ``src/*``) are left
    alone. ``node.js`` needs nothing: it is the phrase ``node js`` on
    both sides already.
    """
    if not any(c in text for c in "+#.-*"):
        return text
    return _spelled(text)


@lru_cache(maxsize=8192)
def _spelled(text: str) -> str:
    """:func:`code_tokens`' substitution, kept per text: an answer ranks the same entries'
    sentences on every ask (6 % of a served ask's CPU, measured with py-spy)."""
    return _CODE_TOKEN.sub(_spell, text)


def _spell(match: re.Match) -> str:
    if match.group("dot"):
        return f"{match.group(0)} dot{match.group('net')} "
    if match.group("short"):
        return f"{match.group(0)} {match.group('short')}{_SPELLED[match.group('sop')]} "
    word, op = match.group("word"), match.group("op")
    if op == "#" and len(word) > 2:
        return match.group(0)
    return f"{match.group(0)} {word}{_SPELLED[op]} "  # the space keeps ``C++17``'s 17 apart
