"""The lexical legs on PostgreSQL: full-text ranking over the weighted ``tsvector``
(title A, aliases B, tags and summary C, body D), the alias/title leg and the substring
path. Every statement is restricted to one space and to the filter condition over
``wiki_docs d``.

Ranking (``rank``): ``bm25`` (default) computes FTS5's bm25() in SQL from the tsvector's
positions and weight labels, as FTS5 does it: a term's frequency is the sum of its
occurrences' column weights, the length is the whole document's (tokens) against the
space's average, FTS5's idf ``log((N - df + 0.5) / (df + 0.5))`` (at least 1e-6),
``k1 = 1.2``, ``b = 0.75``;
``ts_rank:N`` and ``ts_rank_cd:N`` are PostgreSQL's own functions with normalisation
flags ``N``. The choice is measured in evals/results/backends.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from indexes.documents import Hit, hits_from_rows, in_order
from indexes.pg import bm25 as pg_bm25
from indexes.pg import postings as pg_postings
from indexes.pg.text import TS_CONFIG, fts_input, websearch_text
from indexes.retrieval.names import fold_name, spans
from indexes.retrieval.query import substring_terms

HIT = "d.key, d.doc_id, d.title, d.summary, d.category, d.status"


def class_weights(weights: tuple[float, ...]) -> tuple[float, float, float, float]:
    """Column weights (title, aliases, tags, summary, body) as the four tsvector weight
    classes ``(A, B, C, D)``; tags and summary share C (their larger weight)."""
    title, aliases, tags, summary, body = (list(weights) + [1.0] * 5)[:5]
    return float(title), float(aliases), float(max(tags, summary)), float(body)


def lexemes(conn, query: str) -> tuple[str, list[str]]:
    """``(tsquery text, distinct query lexemes)`` of ``query`` (as the index stems it)."""
    text = websearch_text(query)
    row = conn.execute(
        "SELECT q::text, coalesce((SELECT array_agg(DISTINCT lexeme ORDER BY lexeme) FROM "
        "unnest(to_tsvector(%s::regconfig, %s))), '{}') FROM "
        "websearch_to_tsquery(%s::regconfig, %s) q",
        (TS_CONFIG, text.replace('"', " ").replace(" or ", " "), TS_CONFIG, text)).fetchone()
    return row[0], list(row[1])


def search_fulltext(conn, space: str, query: str, where: str, params: list, *, limit: int,
                    weights: tuple[float, ...], rank: str = "bm25",
                    frequencies: Callable[[int], Callable[[list[str]], dict[str, int]]]
                    | None = None, narrow: bool = False, idle: bool = True,
                    mask=None) -> list[Hit]:
    """Documents matching any query word, best first (raises ``EmptyQueryError``).

    ``bm25`` (:func:`indexes.pg.bm25.search_bm25`) reads the postings of the query's
    lexemes (``wiki_terms``) and sums ``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len /
    avg_len))`` per document, ``f`` the weighted occurrences, with the space's count and
    average length from ``wiki_stats``; a query holding a phrase (two words as one,
    ``<->``) also requires the document to match the phrase, as FTS5's MATCH does.
    ``frequencies(version)``: the lexemes' document frequencies at the space's write
    counter (the engine keeps them); default: counted for each query. ``narrow``: the
    filter keeps a small part of the space (:attr:`Filters.narrow`). A space with packed
    postings (:mod:`indexes.pg.postings`) is scored from them, the same list; ``idle``:
    outside a write, so what is read for that may be kept; ``mask``: the filter split for
    the mask it keeps (:class:`indexes.pg.filters.MaskFilter`)."""
    tsquery, terms = lexemes(conn, query)
    if not tsquery:
        return []
    a, b, c, d = class_weights(weights)
    if rank == "bm25":
        stats = pg_bm25.space_stats(conn, space)
        lookup = frequencies(stats.version) if frequencies else \
            (lambda words: pg_bm25.document_frequencies(conn, space, words))
        classes = (a, b, c, d)
        packed = pg_postings.search(
            conn, space, terms, tsquery, where, params, limit=limit, classes=classes,
            stats=stats, frequencies=lookup, idle=idle, mask=mask,
            passing=lambda keys, condition: pg_bm25.passing(conn, space, keys, condition))
        if packed is not None:
            return packed
        return pg_bm25.search_bm25(conn, space, terms, tsquery, where, params, limit=limit,
                                   classes=(a, b, c, d), stats=stats, frequencies=lookup,
                                   narrow=narrow)
    function, _, flags = rank.partition(":")
    if function not in ("ts_rank", "ts_rank_cd"):
        raise ValueError(f"unknown full-text ranking {rank!r}")
    top = max(a, b, c, d, 1e-9)  # ts_rank takes weights in [0, 1]
    rows = conn.execute(
        f"SELECT {HIT}, {function}(%s::float4[], d.fts, %s::tsquery, %s) AS s FROM wiki_docs "
        f"d WHERE d.space = %s AND d.fts @@ %s::tsquery AND {where} ORDER BY s DESC, d.key "
        "LIMIT %s",
        [[d / top, c / top, b / top, a / top], tsquery, int(flags or 0), space, tsquery,
         *params, limit]).fetchall()
    return hits_from_rows(rows, negate=False)


def search_names(conn, space: str, query: str, where: str, params: list, *,
                 limit: int) -> list[Hit]:
    """The alias/title leg (:func:`indexes.retrieval.names.search_names`' ranking)."""
    candidates = spans(query)
    if not candidates:
        return []
    total = max(len(fold_name(query).split()), 1)
    rows = conn.execute(
        f"SELECT {HIT}, n.name, n.kind FROM wiki_names n JOIN wiki_docs d ON "
        f"d.space = n.space AND d.key = n.key WHERE n.space = %s AND n.name = ANY(%s) "
        f"AND {where}", [space, list(candidates), *params]).fetchall()
    best: dict[str, tuple[float, int, Hit]] = {}
    for key, doc_id, title, summary, category, status, name, kind in rows:
        score = candidates[name] / total
        order = 0 if kind == "title" else 1
        if key not in best or (score, -order) > (best[key][0], -best[key][1]):
            best[key] = (score, order, Hit(key, doc_id, title, summary, category, status,
                                           score))
    ranked = sorted(best.values(), key=lambda item: (-item[0], item[1], item[2].key))
    return in_order([hit for _, _, hit in ranked[:limit]])


def search_substrings(conn, space: str, query: str, where: str, params: list, *,
                      limit: int, include_latin: bool) -> list[Hit]:
    """Documents containing the query's substring terms (case-insensitive), ranked by how
    many terms they hold, then by key; empty when no term qualifies."""
    terms = substring_terms(query, include_latin=include_latin)
    if not terms:
        return []
    found = " + ".join("(strpos(lower(d.title || ' ' || d.aliases || ' ' || d.summary || "
                       "' ' || d.body), lower(%s)) > 0)::int" for _ in terms)
    rows = conn.execute(
        f"SELECT * FROM (SELECT {HIT}, ({found})::float8 AS s FROM wiki_docs d WHERE "
        f"d.space = %s AND {where}) m WHERE s > 0 ORDER BY s DESC, key LIMIT %s",
        [*terms, space, *params, limit]).fetchall()
    return hits_from_rows(rows, negate=False)


_ONE_LEXEME = re.compile(r"'((?:[^']|'')*)'")


def word_matches(conn, space: str, word: str, key: str | None,
                 frequencies: Callable[[list[str]], dict[str, int]] | None = None
                 ) -> tuple[int, bool]:
    """``(documents of the space holding word, whether document key does)``. A word that
    is one lexeme is looked up in the postings (its df from ``frequencies`` when given,
    the engine's kept counts; whether ``key`` holds it by the postings' primary key); a
    word of several (``state-of-the-art``) is matched as a phrase over the documents."""
    tsquery = conn.execute("SELECT phraseto_tsquery(%s::regconfig, %s)::text",
                           (TS_CONFIG, fts_input(word))).fetchone()[0]
    single = _ONE_LEXEME.fullmatch(tsquery or "")
    if single:
        lexeme = single.group(1).replace("''", "'")
        df = (frequencies or (lambda t: pg_bm25.document_frequencies(conn, space, t)))(
            [lexeme])[lexeme]
        found = key is not None and df > 0 and conn.execute(
            "SELECT EXISTS (SELECT 1 FROM wiki_terms WHERE space = %s AND lexeme = %s AND "
            "key = %s)", (space, lexeme, key)).fetchone()[0]
        return int(df), bool(found)
    row = conn.execute(
        "SELECT count(*), coalesce(bool_or(key = %s), false) FROM wiki_docs WHERE space = %s "
        "AND fts @@ phraseto_tsquery(%s::regconfig, %s)",
        (key or "", space, TS_CONFIG, fts_input(word))).fetchone()
    return int(row[0]), bool(row[1]) and key is not None


def words_matched(conn, space: str, words: list[str], key: str | None,
                  frequencies: Callable[[list[str]], dict[str, int]] | None = None
                  ) -> list[tuple[int, bool]]:
    """:func:`word_matches` of each of ``words``, in order, in three statements for the
    words that are one lexeme each (their tsqueries; their document frequencies, from
    ``frequencies`` where it keeps them; which ``key`` holds) rather than three per word:
    a ten-word question's coverage made ~30 round trips (p50 15 ms at 100,000 entries). A
    word of several lexemes is matched as a phrase, one statement each."""
    if not words:
        return []
    parsed = [r[0] for r in conn.execute(
        "SELECT phraseto_tsquery(%s::regconfig, u.w)::text FROM unnest(%s::text[]) WITH "
        "ORDINALITY AS u(w, i) ORDER BY u.i", (TS_CONFIG, [fts_input(w) for w in words]))]
    singles = {i: m.group(1).replace("''", "'") for i, q in enumerate(parsed)
               if (m := _ONE_LEXEME.fullmatch(q or ""))}
    lexemes = sorted(set(singles.values()))
    df = (frequencies or (lambda t: pg_bm25.document_frequencies(conn, space, t)))(
        lexemes) if lexemes else {}
    held: set[str] = set()
    if key is not None and lexemes:
        held = {r[0] for r in conn.execute(
            "SELECT lexeme FROM wiki_terms WHERE space = %s AND key = %s AND "
            "lexeme = ANY(%s)", (space, key, lexemes))}
    return [(int(df.get(singles[i], 0)), singles[i] in held) if i in singles
            else (0, False) if not parsed[i]  # a stopword: no lexeme, nothing matches it
            else word_matches(conn, space, word, key, frequencies)
            for i, word in enumerate(words)]


def edges(conn_space, keys, kinds) -> dict[str, list[tuple[str, str]]]:
    """:func:`indexes.retrieval.graph.edges` for ``(conn, space)``."""
    conn, space = conn_space
    keys, kinds = list(dict.fromkeys(keys)), list(kinds)
    if not keys or not kinds:
        return {}
    rows = conn.execute(
        "SELECT d.key, r.key, j.value FROM wiki_docs d, jsonb_each(CASE jsonb_typeof("
        "d.extra->'relations') WHEN 'object' THEN d.extra->'relations' ELSE '{}' END) r, "
        "jsonb_array_elements_text(CASE jsonb_typeof(r.value) WHEN 'array' THEN r.value "
        "ELSE jsonb_build_array(r.value) END) j WHERE d.space = %s AND d.key = ANY(%s) "
        "AND r.key = ANY(%s)", (space, keys, kinds)).fetchall()
    ids = sorted({str(target) for _, _, target in rows})
    by_id: dict[str, list[str]] = {}
    for doc_id, key in conn.execute(
            "SELECT doc_id, key FROM wiki_docs WHERE space = %s AND doc_id = ANY(%s)",
            (space, ids)):
        by_id.setdefault(doc_id, []).append(key)
    out: dict[str, list[tuple[str, str]]] = {}
    for key, kind, target in rows:
        for target_key in by_id.get(str(target), []):
            out.setdefault(key, []).append((kind, target_key))
    return out


def dumps(value) -> str:
    """JSON text for a ``jsonb`` parameter."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
