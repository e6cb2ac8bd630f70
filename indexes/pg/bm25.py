"""The BM25 leg on PostgreSQL: exact top k from the postings without summing every
posting of a common word.

The whole query (:func:`whole_query`) reads every posting of every query lexeme
(``wiki_terms``), sums the scores per document in a hash aggregate and joins the documents:
at 100,000 entries a SciFact claim's common words bring tens of thousands of postings and
the leg took hundreds of milliseconds. :func:`search_bm25` scores from the rare lexemes'
postings first and adds the common lexemes' contributions only to the documents that can
still reach the top k, by MaxScore (:mod:`indexes.retrieval.maxscore`): the result is the
whole query's, proven so or computed by it.

The space's document count and total length are kept by triggers in ``wiki_stats``
(:mod:`indexes.pg.schema`), never aggregated per query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from indexes.documents import Hit, hits_from_rows
from indexes.retrieval.maxscore import K1, B, Split, first_split, fts5_idf

HIT = "d.key, d.doc_id, d.title, d.summary, d.category, d.status"

WHOLE_QUERY = "/* bm25 whole query */"
"""Marks the statement of :func:`whole_query` (tests tell the paths apart by it)."""

CHECKED_FIRST = 4
"""The best ``CHECKED_FIRST * limit`` documents by their rare lexemes' score are checked
against the filter first, to find a k-th score that prunes."""

@dataclass(frozen=True)
class SpaceStats:
    """A space's document count, average length in tokens and the write counter
    (``version``: moves with every statement that writes its documents)."""

    docs: int
    avg_len: float
    version: int


def space_stats(conn, space: str) -> SpaceStats:
    """The space's row of ``wiki_stats`` (zeros when it has no documents yet)."""
    row = conn.execute("SELECT docs, total_len, version FROM wiki_stats WHERE space = %s",
                       (space,)).fetchone()
    if row is None or row[0] <= 0:
        return SpaceStats(0, 0.0, row[2] if row else 0)
    return SpaceStats(int(row[0]), float(row[1]) / float(row[0]), int(row[2]))


def document_frequencies(conn, space: str, terms: list[str]) -> dict[str, int]:
    """``lexeme -> number of documents of the space holding it``: the length of its packed
    postings where the space has them and nothing is stale (:mod:`indexes.pg.postings`:
    one row per lexeme), else counted from ``wiki_terms`` (a common word's 45,000 rows at
    100,000 entries: ms each). One statement either way."""
    if not terms:
        return {}
    found = dict(conn.execute(
        "SELECT t.lexeme, CASE WHEN f.packed THEN coalesce((SELECT length(p.nums) / 4 FROM "
        "wiki_postings p WHERE p.space = %s AND p.lexeme = t.lexeme), 0) ELSE (SELECT "
        "count(*) FROM wiki_terms w WHERE w.space = %s AND w.lexeme = t.lexeme) END "
        "FROM unnest(%s::text[]) AS t(lexeme), (SELECT EXISTS (SELECT 1 FROM "
        "wiki_postings_docs WHERE space = %s) AND NOT EXISTS (SELECT 1 FROM "
        "wiki_postings_stale WHERE space = %s) AS packed) f",
        (space, space, list(dict.fromkeys(terms)), space, space)).fetchall())
    return {t: int(found.get(t, 0)) for t in terms}


class KeptFrequencies:
    """The document frequencies of lexemes in one space, kept while the space's write
    counter (``wiki_stats.version``) stays where it was when they were counted: a question
    asks for a word's df in the BM25 leg and again for the evidence-gap coverage, the next
    question for many of the same words. ``forget("df")`` drops them (a benchmark timing a
    new question; the same call as the SQLite engine's ``memo``)."""

    LIMIT = 100_000
    """Lexemes kept at most; the store starts afresh beyond it."""

    def __init__(self) -> None:
        self.version = -1
        self.values: dict[str, int] = {}

    def lookup(self, conn, space: str, version: int, terms: list[str], *,
               in_write: bool) -> dict[str, int]:
        """``lexeme -> df`` of ``terms`` at write counter ``version``; inside a write
        (``in_write``) counted and never kept, as a rollback would leave them wrong."""
        if in_write:
            return document_frequencies(conn, space, terms)
        if self.version != version:
            self.version, self.values = version, {}
        known = {t: self.values[t] for t in terms if t in self.values}
        missing = [t for t in terms if t not in known]
        if missing:
            known.update(document_frequencies(conn, space, missing))
            if len(self.values) > self.LIMIT:
                self.values = {}
            self.values.update({t: known[t] for t in missing})
        return known

    def forget(self, kind: str) -> None:
        """Drop the kept values of ``kind`` (``"df"``, the only kind kept here)."""
        if kind == "df":
            self.version, self.values = -1, {}


_SCORE = ("i.w * t.f * %s / (t.f + %s * (1 - %s + %s * t.doc_len / %s))")
_POSTINGS = ("SELECT key, lexeme, doc_len, fa * %s + fb * %s + fc * %s + fd * %s AS f "
             "FROM wiki_terms WHERE space = %s AND lexeme = ANY(%s){keys}")


def _scores_sql(keys: bool, *, within: str = "") -> str:
    """Per document the summed BM25 of the given lexemes' postings (``key, score``);
    parameters as :func:`_scores_params` lists them. ``within``: a condition over
    ``wiki_docs d`` the documents must pass before their postings are summed (its
    parameters, the space first, in place of ``keys``)."""
    restrict = (" AND key = ANY(%s)" if keys else "") + (
        f" AND key = ANY(ARRAY(SELECT d.key FROM wiki_docs d WHERE d.space = %s AND {within}))"
        if within else "")
    postings = _POSTINGS.format(keys=restrict)
    return (f"SELECT t.key, sum({_SCORE}) AS score FROM ({postings}) t JOIN "
            "unnest(%s::text[], %s::float8[]) AS i(lex, w) ON i.lex = t.lexeme "
            "GROUP BY t.key")


def _scores_params(stats: SpaceStats, classes, space: str, terms: list[str],
                   idfs: list[float], keys: list[str] | None) -> list:
    return [K1 + 1, K1, B, B, max(stats.avg_len, 1.0), *classes, space, terms,
            *([keys] if keys is not None else []), terms, idfs]


def search_bm25(conn, space: str, terms: list[str], tsquery: str, where: str, params: list,
                *, limit: int, classes: tuple[float, float, float, float],
                stats: SpaceStats, frequencies: Callable[[list[str]], dict[str, int]],
                narrow: bool = False) -> list[Hit]:
    """The ``limit`` best documents of ``space`` holding any of ``terms`` (lexemes) that
    pass ``where`` over ``wiki_docs d`` (with ``params``), by FTS5's bm25() over the weight
    ``classes`` (A, B, C, D), ties by key (code point order, ``COLLATE "C"``, as Python
    sorts); a ``tsquery`` holding a phrase (``<->``) must
    also match. The whole query's list (:func:`whole_query`).

    MaxScore: lexemes held by more than 5 % of the space are common. The documents
    holding a rare one are scored on the rare lexemes (a lower bound of their score;
    ``narrow``: only those passing the filter, all checked in one statement). The best
    ``CHECKED_FIRST * limit`` of them that pass the filter are scored on every lexeme; the
    k-th of those, ``theta``, is a score the top k reaches. Only a document whose rare
    score plus the common lexemes' bound reaches ``theta`` can be in the top k: those are
    scored on every lexeme too. With ``theta`` above that bound no document holding
    common lexemes alone can be either, so the result is exact; otherwise (or with fewer
    than ``limit`` candidates) the whole query runs."""
    df = frequencies(terms)
    idf = {t: fts5_idf(df.get(t, 0), stats.docs) for t in terms}
    split = first_split({t: df.get(t, 0) for t in terms}, stats.docs) \
        if len(terms) > 1 and min(classes) >= 0 else None
    phrase = " AND d.fts @@ %s::tsquery" if "<->" in tsquery else ""
    condition = (where + phrase, [*params, *([tsquery] if phrase else [])])
    if split is not None and stats.docs:
        found = _pruned(conn, space, terms, idf, split, condition, limit=limit,
                        classes=classes, stats=stats, narrow=narrow)
        if found is not None:
            return found
    return whole_query(conn, space, terms, idf, *condition, limit=limit, classes=classes,
                       stats=stats, within=(where, params) if narrow else None)


def _pruned(conn, space: str, terms: list[str], idf: dict[str, float], split: Split,
            condition: tuple[str, list], *, limit: int, classes,
            stats: SpaceStats, narrow: bool) -> list[Hit] | None:
    """:func:`search_bm25`'s MaxScore path; ``None`` when it cannot prove its top k
    (fewer than ``limit`` candidates pass the filter, or ``theta`` is not above the common
    lexemes' bound)."""

    def candidates(rare: list[str]) -> list[tuple[str, float]]:
        """Documents holding a rare lexeme, by their score on the rare ones, best first
        (``narrow``: only those passing the filter, all checked at once)."""
        found = conn.execute(_scores_sql(False) + ' ORDER BY score DESC, key COLLATE "C"',
                             _scores_params(stats, classes, space, rare,
                                            [idf[t] for t in rare], None)).fetchall()
        if narrow:
            kept = passing(conn, space, [k for k, _ in found], condition)
            found = [(k, s) for k, s in found if k in kept]
        return found

    partial = candidates(list(split.rare))
    first = [k for k, _ in partial[:CHECKED_FIRST * limit]]
    if not narrow:
        kept = passing(conn, space, first, condition)
        first = [k for k in first if k in kept]
    scored = full_scores(conn, space, first, terms, idf, stats, classes)
    if len(scored) < limit:
        return None
    theta = sorted(scored.values(), reverse=True)[limit - 1]
    if theta <= split.bound:  # documents holding common lexemes alone could rank
        return None
    needed = [k for k, s in partial if s + split.bound >= theta and k not in scored]
    if needed and not narrow:
        kept = passing(conn, space, needed, condition)
        needed = [k for k in needed if k in kept]
    scored.update(full_scores(conn, space, needed, terms, idf, stats, classes))
    best = sorted(scored.items(), key=lambda item: (-item[1], item[0]))[:limit]
    rows = {r[0]: r for r in conn.execute(
        f"SELECT {HIT} FROM wiki_docs d WHERE d.space = %s AND d.key = ANY(%s)",
        [space, [k for k, _ in best]])}
    # a document deleted meanwhile (each statement reads its own snapshot) is left out
    return hits_from_rows([(*rows[k], score) for k, score in best if k in rows],
                          negate=False)


def passing(conn, space: str, keys: list[str], condition: tuple[str, list]) -> set[str]:
    """The ``keys`` whose documents pass the filter (and the phrase): ``condition`` is
    ``(SQL over wiki_docs d, parameters)``."""
    if not keys:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT d.key FROM wiki_docs d WHERE d.space = %s AND d.key = ANY(%s) AND "
        f"{condition[0]}", [space, keys, *condition[1]])}


def full_scores(conn, space: str, keys: list[str], terms: list[str], idf: dict[str, float],
                 stats: SpaceStats, classes) -> dict[str, float]:
    """``key -> score on every lexeme`` of ``keys`` (those holding none are absent)."""
    if not keys:
        return {}
    return dict(conn.execute(_scores_sql(True), _scores_params(
        stats, classes, space, terms, [idf[t] for t in terms], keys)).fetchall())


def whole_query(conn, space: str, terms: list[str], idf: dict[str, float], where: str,
                params: list, *, limit: int, classes, stats: SpaceStats,
                within: tuple[str, list] | None = None) -> list[Hit]:
    """Every posting of every lexeme summed per document, joined with the documents and
    filtered by ``where`` (with ``params``): the definition :func:`search_bm25` keeps to.
    ``within``: a narrow filter's condition and parameters (a scope: no phrase, nothing
    that reads a document's text), whose documents alone have their postings summed (a
    semi-join before the aggregate, which costs ~3 us per posting)."""
    scores = _scores_sql(False, within=within[0] if within else "")
    postings = _scores_params(stats, classes, space, terms, [idf[t] for t in terms], None)
    if within:  # the semi-join's space and parameters follow the lexemes
        postings = [*postings[:-2], space, *within[1], *postings[-2:]]
    rows = conn.execute(
        f"{WHOLE_QUERY} SELECT {HIT}, s.score FROM ({scores}) s JOIN wiki_docs d "
        f"ON d.space = %s AND d.key = s.key WHERE {where} ORDER BY s.score DESC, "
        'd.key COLLATE "C" LIMIT %s',
        [*postings, space, *params, limit]).fetchall()
    return hits_from_rows(rows, negate=False)
