"""Text as the PostgreSQL full-text columns hold it, and queries that are never a syntax
error: the same words :mod:`indexes.retrieval.query` gives FTS5, each a quoted phrase for
``websearch_to_tsquery`` (which never raises), OR-combined."""

from __future__ import annotations

import re
import unicodedata

from indexes.retrieval.query import query_words
from indexes.retrieval.text import code_tokens

TS_CONFIG = "english"
"""Snowball English stemming and stopwords: the nearest PostgreSQL has to FTS5's porter."""
_WORD = re.compile(r"\w+")


def fts_input(text: str) -> str:
    """A column value as indexed: code-like names spelled out (``C++`` -> ``c cplusplus``)
    and accents removed (FTS5's ``remove_diacritics 2``)."""
    decomposed = unicodedata.normalize("NFKD", code_tokens(text))
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", plain)


def word_count(*texts: str) -> int:
    """Number of word tokens in ``texts`` (the document length BM25 normalises by)."""
    return sum(len(_WORD.findall(t)) for t in texts)


def websearch_text(query: str) -> str:
    """The query's words as quoted phrases joined by ``or`` (``websearch_to_tsquery``
    input); raises ``EmptyQueryError`` like :func:`indexes.retrieval.query.query_words`."""
    phrases = []
    for word in query_words(query):
        phrases.append(fts_input(word))
        if "/" in word and code_tokens(word) != word:
            phrases.extend(fts_input(part) for part in word.split("/") if part)
    cleaned = [" ".join(_WORD.findall(p)) for p in phrases]
    return " or ".join(f'"{p}"' for p in dict.fromkeys(cleaned) if p)
