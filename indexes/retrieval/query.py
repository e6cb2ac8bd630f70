"""Build FTS5 MATCH expressions that can never be a syntax error.

Each whitespace-separated word of the query becomes one FTS5 string (double quoted, inner
quotes doubled). FTS5 runs the table's own tokenizer over a quoted string, so the query is
tokenised exactly like the index: ``DEC-0054`` becomes the phrase ``dec 0054`` and matches
that literal, never ``dec NOT 0054``. Words are OR-combined, so a missing word lowers the
BM25 score instead of emptying the result (docs/robustness.md, Q1-Q4). Operators such as ``OR``,
``NEAR``, ``*``, ``-`` or ``:`` are therefore plain text.
"""

from __future__ import annotations

import re
import unicodedata

from indexes.errors import EmptyQueryError
from indexes.retrieval.text import code_tokens, has_token, no_space_runs

MAX_WORDS = 64
"""Words kept from a query; the rest are ignored (a 20,000-character query stays cheap),
and the CLI says so (:func:`truncation`)."""

MAX_WORD_CHARS = 256
"""Longer words are cut; no index token is that long in practice."""

STOPWORDS = frozenset("""
a an and are as at be but by for if in into is it no not of on or such that the their
then there these they this to was will with what which who whom whose when where why how
do does did doing done can could should would may might must shall i me my we our us you
your he she him her his its them am been being have has had having about any some from
so than too very just also there's what's
""".split())  # noqa: SIM905
"""Lucene's English stop set (also Anserini's, behind BEIR's BM25 baseline) plus the
question and pronoun words people type into a search box. Dropped from a query unless
the query has nothing else, so "how do I file a voucher" searches "file voucher"."""


_GET_FORMS = frozenset({"get", "gets", "got", "getting", "gotten"})
_PARTICIPLE = re.compile(r"\w{2,}ed|paid|made|done|set|sent|built|kept|told|sold|bought|put|cut|"
                         r"hit|lost|found|held|left|met|shut|spent|hurt|won|written|taken|given|"
                         r"chosen|broken|stolen|seen|known|shown|forgotten")
"""A past participle after a form of "get": a regular ``-ed`` one or a common irregular one."""


def _passive_get(word: str, following: str | None) -> bool:
    """Whether ``word`` is "get" used as the passive auxiliary ("how does a proposal *get*
    approved", "when do I *get* paid"): a function word like "do" or "be", dropped as a
    stopword. Elsewhere "get" stays a query word (an HTTP method, an MCP tool, "get a PIV card")."""
    if word.casefold() not in _GET_FORMS or following is None:
        return False
    return bool(_PARTICIPLE.fullmatch(following.casefold().strip(_EDGE_PUNCTUATION)))


_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s?(?=\W*$)")
"""An English possessive ending (``TTS's``, ``teams'``, ``GSA’s``) before any trailing
punctuation."""


def query_words(query: str) -> list[str]:
    """The distinct searchable words of ``query``, in order, without :data:`STOPWORDS`
    (unless nothing else is left), bounded by :data:`MAX_WORDS` (:func:`truncation` says
    how many were left out). The query is NFKC normalised (full-width ``ｔｒａｖｅｌ`` is
    ``travel``), as indexed text is.

    A possessive ending is dropped (``TTS's`` searches ``TTS``): quoted, ``TTS's`` would
    be the two-token phrase ``tts s``, which only a page spelling ``TTS's`` matches, so
    the word was lost for every page that names TTS otherwise (chg-09 of the handbook's
    changed questions). Any text holding ``TTS's`` also holds the token ``tts``.

    Raises :class:`EmptyQueryError` when no word carries a token.
    """
    return _all_words(query)[:MAX_WORDS]


def truncation(query: str) -> dict[str, int] | None:
    """``{"kept": MAX_WORDS, "dropped": N}`` when ``query`` has more than
    :data:`MAX_WORDS` searchable words (counted as :func:`query_words` counts them:
    distinct, stopwords left out), so that the ``N`` words past the limit are ignored;
    ``None`` otherwise (and for a query without words)."""
    try:
        words = _all_words(query)
    except EmptyQueryError:
        return None
    if len(words) <= MAX_WORDS:
        return None
    return {"kept": MAX_WORDS, "dropped": len(words) - MAX_WORDS}


def searched_text(query: str) -> str:
    """``query`` itself, or, when it has more than :data:`MAX_WORDS` searchable words, its
    (normalised) text up to the last word kept, stopwords between them included: what
    every leg (alias, vector, LLM) is given, so that a word the truncation note says was
    ignored is searched by none of them."""
    if truncation(query) is None:
        return query
    kept = {w.casefold() for w in query_words(query)}
    text = normalize(query)
    end = 0
    for match in re.finditer(r"\S+", text):
        raw = match.group()
        word = _POSSESSIVE.sub("", raw[:MAX_WORD_CHARS]) or raw[:MAX_WORD_CHARS]
        if word.casefold() in kept:
            kept.discard(word.casefold())
            end = match.end()
            if not kept:
                break
    return text[:end]


def truncation_note(query: str) -> str | None:
    """A one-line notice for :func:`truncation`, or ``None`` when nothing was left out."""
    cut = truncation(query)
    if cut is None:
        return None
    return (f"note: the query has {cut['kept'] + cut['dropped']} words; only the first "
            f"{cut['kept']} were searched ({cut['dropped']} ignored)")


def normalize(text: str) -> str:
    """``text`` in the Unicode form the index stores (NFKC: composed Hangul syllables,
    full-width katakana, Thai SARA AM as NIKHAHIT + SARA AA, ``ｔｅｘｔ`` as ``text``)."""
    return unicodedata.normalize("NFKC", text)


def _all_words(query: str) -> list[str]:
    seen: set[str] = set()
    words: list[str] = []
    auxiliary: set[str] = set()
    raw = normalize(query).split()
    for i, word in enumerate(raw):
        word = _POSSESSIVE.sub("", word[:MAX_WORD_CHARS]) or word[:MAX_WORD_CHARS]
        # one word once, whatever punctuation ends it: "cells" and "cells." are one FTS5
        # token, and as two phrases BM25 counted it twice (and read its postings twice)
        key = word.casefold().strip(_EDGE_PUNCTUATION) or word.casefold()
        if not has_token(word) or key in seen:
            continue
        seen.add(key)
        words.append(word)
        if _passive_get(word, raw[i + 1] if i + 1 < len(raw) else None):
            auxiliary.add(key)
    if not words:
        raise EmptyQueryError("the query has no searchable words")
    content = [w for w in words if w.casefold().strip(_EDGE_PUNCTUATION) not in STOPWORDS
               and w.casefold() not in auxiliary]
    return content or words


_EDGE_PUNCTUATION = "\"'`.,;:!?()[]{}<>"


def quote(text: str) -> str:
    """Quote ``text`` as one FTS5 string (a phrase of its tokens). NUL characters are
    dropped: FTS5 ends a string at one ("unterminated string"); they are never tokens."""
    return '"' + text.replace("\x00", "").replace('"', '""') + '"'


def phrase(word: str) -> str:
    """One query word as the FTS5 string the unicode61 table matches: the word with its
    code-like names spelled out exactly as indexed text is (``C++`` -> the phrase
    ``c cplusplus``; :func:`indexes.retrieval.text.code_tokens`), quoted."""
    return quote(code_tokens(word))


def match_phrases(query: str) -> list[str]:
    """The distinct FTS5 phrases of ``query``'s words, in query order. A slashed word
    holding a code-like name (``C/C++``, ``C#/F#``) also gives each of its parts: as one
    phrase (``c c cplusplus``) it matches only pages that spell the pair the same way, so
    a page about C++ alone was not found at all."""
    phrases: list[str] = []
    for word in query_words(query):
        phrases.append(phrase(word))
        if "/" in word and code_tokens(word) != word:
            phrases += [phrase(part) for part in word.split("/") if has_token(part)]
    return list(dict.fromkeys(phrases))


def match_expression(query: str) -> str:
    """FTS5 MATCH expression for the unicode61 table: :func:`match_phrases` joined by
    ``OR``."""
    return " OR ".join(match_phrases(query))


def substring_terms(query: str, *, include_latin: bool) -> list[str]:
    """Terms for the trigram path: runs of space-less scripts, and with ``include_latin``
    every word of three or more characters. Terms shorter than three characters cannot be
    matched by a trigram index and are returned for a LIKE scan instead. The query is
    NFKC normalised first, like the stored text the terms are looked for in: a Korean word
    typed as conjoining jamo (NFD, as macOS file names and some input methods give it),
    half-width katakana or Thai with SARA AM is otherwise never found inside unspaced text.
    Terms come from the words :func:`query_words` keeps (stopwords left out, at most
    :data:`MAX_WORDS`), so a query's truncation note is true of this path too.
    """
    try:  # the words the other legs search: a word past MAX_WORDS is searched by none
        kept = query_words(query)
    except EmptyQueryError:
        kept = []
    query = " ".join(kept)
    terms = list(dict.fromkeys(no_space_runs(query)))
    if include_latin:
        for word in kept:
            word = word.strip("\"'()[]{},.;:!?")[:MAX_WORD_CHARS]
            if len(word) >= 3 and word not in terms:
                terms.append(word)
    return terms[:MAX_WORDS]
