"""A space's postings packed into one row per lexeme, for the BM25 leg of a large space:
scored in numpy (:mod:`indexes.retrieval.bm25_arrays`) instead of summed per posting in
SQL.

``wiki_terms`` holds one row per (document, lexeme); a SciFact claim's common words bring
tens of thousands of them, and at 100,000 entries the SQL leg took 30 ms p50 and 310 ms
p95 even with MaxScore. Packed, a lexeme is one ``bytea`` of document numbers and one of
weighted frequencies (a word in 45,000 documents: 360 KB, one row read).

What is stored (schema 4):

- ``wiki_postings``: per (space, lexeme), the documents holding it as numbers (big-endian
  int4, ascending) and its occurrences in each, weighted by class (big-endian float4);
- ``wiki_postings_docs``: per space, the ``build`` (a new uuid each build), the class
  weights summed with, the documents' keys by number (``COLLATE "C"`` order, so a lower
  number is the lower key: the SQL leg's tie order) and their lengths (int4);
- ``wiki_postings_keys``: the same numbers and keys as rows of the build, so a search maps
  only the numbers it returns to keys, and only the keys it filters to numbers, in SQL:
  a process that searches once (a ``wiki search`` command) no longer reads every key of
  the build (49 ms of a 70 ms first search at 100,000 entries). The array stays written
  for processes of the code before, which read it;
- ``wiki_postings_stale``: keys written since the build (noted by the engine's writes).
  A search scores them from their rows of ``wiki_terms`` with the same arithmetic, so
  results stay the SQL leg's between builds; ``settle()`` builds again when more than
  :data:`REBUILD_STALE` of the space is stale.

A build runs inside PostgreSQL (one ``INSERT ... SELECT`` over ``wiki_terms``: 14.8 s at
100,000 entries, evals/results/bench-scale.md); the process keeps each build's lengths
(400 KB at 100,000 entries) and filters (:data:`KEPT_BUILDS`), so a query reads its
lexemes' rows and the stale documents in one statement. Only class weights that sum
exactly are used (:func:`indexes.retrieval.maxscore.exact_weights`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from indexes.documents import Hit, hits_from_rows
from indexes.pg.filters import MaskFilter, can_expire_keys, expired_keys
from indexes.retrieval.maxscore import exact_weights

if TYPE_CHECKING:
    import numpy as np

POSTINGS_FROM = 20_000
"""Documents of a space from which ``settle()`` keeps its packed postings (as SQLite's
:data:`indexes.sqlite.postings.POSTINGS_FROM`)."""

REBUILD_STALE = 0.05
"""A build is due once more than this fraction of the space's documents is stale."""

FEW_LEFT_OUT = 4096
"""A filter that leaves out fewer documents is held as those (the default filter: the
superseded ones), else as the documents it keeps."""

DDL = """
CREATE TABLE IF NOT EXISTS wiki_postings (
    space TEXT NOT NULL, lexeme TEXT NOT NULL, nums BYTEA NOT NULL, freqs BYTEA NOT NULL,
    PRIMARY KEY (space, lexeme));
CREATE TABLE IF NOT EXISTS wiki_postings_docs (
    space TEXT PRIMARY KEY, build TEXT NOT NULL, weights TEXT NOT NULL, keys TEXT[] NOT NULL,
    lengths BYTEA NOT NULL);
CREATE TABLE IF NOT EXISTS wiki_postings_stale (
    space TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (space, key));
CREATE TABLE IF NOT EXISTS wiki_postings_keys (
    space TEXT NOT NULL, build TEXT NOT NULL, num INT4 NOT NULL, key TEXT NOT NULL,
    PRIMARY KEY (space, build, num), UNIQUE (space, build, key) INCLUDE (num));
"""
"""Schema 4's tables (part of :data:`indexes.pg.schema.DDL`); the key index of
``wiki_postings_keys`` is a constraint of its ``CREATE TABLE IF NOT EXISTS``, which takes
no lock once the table exists (a ``CREATE INDEX IF NOT EXISTS`` waits for any
transaction that wrote the table: a new process's open waited out a 15 s build,
helper-34). ``wiki_postings_keys`` came
later without a new version: code before it ignores it, and a build it makes has no rows
there, which this code treats as no build (it searches by SQL and ``settle`` builds
again). Its rows carry their build, so rows a build of that older code left behind never
name another build's documents."""

TABLES = ("wiki_postings", "wiki_postings_docs", "wiki_postings_stale", "wiki_postings_keys")

_BUILD = """
WITH numbered AS (
    SELECT key, (row_number() OVER (ORDER BY key COLLATE "C") - 1)::int4 AS n
    FROM wiki_docs WHERE space = %(space)s)
INSERT INTO wiki_postings (space, lexeme, nums, freqs)
SELECT %(space)s, t.lexeme, string_agg(int4send(n.n), ''::bytea ORDER BY n.n),
       string_agg(float4send((t.fa * %(a)s + t.fb * %(b)s + t.fc * %(c)s
                              + t.fd * %(d)s)::float4), ''::bytea ORDER BY n.n)
FROM wiki_terms t JOIN numbered n ON n.key = t.key
WHERE t.space = %(space)s GROUP BY t.lexeme
"""

_DOCS = """
INSERT INTO wiki_postings_docs (space, build, weights, keys, lengths)
SELECT %(space)s, gen_random_uuid()::text, %(weights)s,
       coalesce(array_agg(key ORDER BY key COLLATE "C"), '{}'),
       coalesce(string_agg(int4send(doc_len), ''::bytea ORDER BY key COLLATE "C"), ''::bytea)
FROM wiki_docs WHERE space = %(space)s
"""

_KEYS = """
INSERT INTO wiki_postings_keys (space, build, num, key)
SELECT d.space, d.build, (u.n - 1)::int4, u.key
FROM wiki_postings_docs d, unnest(d.keys) WITH ORDINALITY AS u(key, n)
WHERE d.space = %(space)s
"""


def note_stale(cur, space: str, keys: list[str]) -> None:
    """Note ``keys`` of ``space`` as written since the build (inside the write; nothing
    when the space has no postings)."""
    if keys:
        cur.execute("INSERT INTO wiki_postings_stale (space, key) SELECT %s, unnest(%s::text[]) "
                    "WHERE EXISTS (SELECT 1 FROM wiki_postings_docs WHERE space = %s) "
                    "ON CONFLICT DO NOTHING", (space, keys, space))


def drop(conn, space: str) -> None:
    """Delete the space's postings."""
    for table in TABLES:
        conn.execute(f"DELETE FROM {table} WHERE space = %s", (space,))


def _weights_text(classes: tuple[float, float, float, float]) -> str:
    return json.dumps([float(c) for c in classes])


def settle(conn, space: str, classes: tuple[float, float, float, float], n_docs: int, *,
           postings_from: int = POSTINGS_FROM) -> bool:
    """Build the space's postings when due (call inside a write transaction): at least
    ``postings_from`` documents and none built, built with other class weights, or more
    than :data:`REBUILD_STALE` stale; drop them below that size or when the weights do
    not sum exactly (:func:`~indexes.retrieval.maxscore.exact_weights`). Returns
    whether it built."""
    row = conn.execute(
        "SELECT weights, (SELECT count(*) FROM wiki_postings_stale WHERE space = %s), "
        "EXISTS (SELECT 1 FROM wiki_postings_keys k WHERE k.space = d.space AND "
        "k.build = d.build) FROM wiki_postings_docs d WHERE space = %s",
        (space, space)).fetchone()
    if n_docs < postings_from or not exact_weights(classes):
        if row is not None:
            drop(conn, space)
        return False
    if row is not None and row[0] == _weights_text(classes) and \
            row[1] <= REBUILD_STALE * n_docs and (row[2] or n_docs == 0):
        return False
    drop(conn, space)
    a, b, c, d = classes
    conn.execute(_BUILD, {"space": space, "a": a, "b": b, "c": c, "d": d})
    conn.execute(_DOCS, {"space": space, "weights": _weights_text(classes)})
    conn.execute(_KEYS, {"space": space})
    # planned without statistics, a lookup of 10 numbers read all 100,000 rows (42 ms)
    conn.execute("ANALYZE wiki_postings_keys")
    return True


@dataclass
class Build:
    """One build's documents as this process keeps them: its ``name``, ``lengths``
    (float64 tokens by number) and filters read for it (``(where, params, version) ->
    (keep, numbers)``). Keys and numbers are mapped in SQL (``wiki_postings_keys``)."""

    name: str
    lengths: np.ndarray
    filters: dict = field(default_factory=dict)


KEPT_BUILDS = 4
"""Builds whose documents the process keeps (one per space searched, most recent)."""
_BUILDS: dict[str, Build] = {}
_BUILDS_LOCK = threading.Lock()


def _build(conn, space: str, build: str) -> Build | None:
    """The documents of ``build`` (read once per process; ``None``: no longer stored, or
    built by code that kept no ``wiki_postings_keys`` rows)."""
    with _BUILDS_LOCK:
        found = _BUILDS.get(build)
    if found is not None:
        return found
    import numpy as np

    row = conn.execute("SELECT lengths FROM wiki_postings_docs d WHERE space = %s AND "
                       "build = %s AND EXISTS (SELECT 1 FROM wiki_postings_keys k WHERE "
                       "k.space = d.space AND k.build = d.build)", (space, build),
                       binary=True).fetchone()
    if row is None:
        return None
    found = Build(build, np.frombuffer(row[0], dtype=">i4").astype(np.float64))
    with _BUILDS_LOCK:
        if len(_BUILDS) >= KEPT_BUILDS:
            _BUILDS.pop(next(iter(_BUILDS)))
        _BUILDS[build] = found
    return found


def _filter(conn, space: str, build: Build, mask: MaskFilter, version: int,
            idle: bool) -> tuple[bool, np.ndarray] | None:
    """The documents ``mask`` keeps, as ``(keep, numbers)``: the numbers kept, or (when
    fewer than :data:`FEW_LEFT_OUT` are left out) those left out; ``None``: none left
    out. The part without expiry is kept per build, condition and write counter when read
    outside a write (a search's ``valid_at``, the current second, would never hit a cache
    keyed by it); the documents expired now are taken out each search, looked for among
    those that can expire."""
    import numpy as np

    key = (mask.where, repr(mask.params), version)
    if idle and key in build.filters:
        found = build.filters[key]
    else:
        found = _timeless(conn, space, build, mask)
        if idle:
            if len(build.filters) > 256:
                build.filters.clear()
            build.filters[key] = found
    if mask.expiry is None:
        return found
    can = build.filters.get(("can expire", mask.expiring_types, version)) if idle else None
    if can is None:
        can = can_expire_keys(conn, space, mask.expiring_types)
        if idle:
            build.filters[("can expire", mask.expiring_types, version)] = can
    expired = _numbers(conn, space, build, sorted(expired_keys(conn, space, mask.expiry, can)))
    if not len(expired):
        return found
    dropped = np.sort(expired)  # distinct: distinct keys of one build
    if found is None:
        return False, dropped
    if found[0]:
        return True, np.setdiff1d(found[1], dropped)
    return False, np.union1d(found[1], dropped)


def _numbers(conn, space: str, build: Build, keys: list[str]) -> np.ndarray:
    """The numbers of those of ``keys`` in ``build`` (int64, in no particular order)."""
    import numpy as np

    if not keys:
        return np.zeros(0, dtype=np.int64)
    return np.array([r[0] for r in conn.execute(
        "SELECT num FROM wiki_postings_keys WHERE space = %s AND build = %s AND "
        "key = ANY(%s)", (space, build.name, keys))], dtype=np.int64)


_NUMBERED = ("SELECT k.num FROM wiki_docs d JOIN wiki_postings_keys k ON k.space = d.space "
             "AND k.build = %s AND k.key = d.key WHERE d.space = %s AND ")


def _timeless(conn, space: str, build: Build, mask: MaskFilter) -> tuple[bool, np.ndarray] | None:
    import numpy as np

    left_out = [r[0] for r in conn.execute(
        f"SELECT d.key FROM wiki_docs d WHERE d.space = %s AND "
        f"NOT coalesce(({mask.where}), false) LIMIT %s", [space, *mask.params, FEW_LEFT_OUT])]
    if len(left_out) < FEW_LEFT_OUT:
        numbers = np.sort(_numbers(conn, space, build, left_out))
        return (False, numbers) if len(numbers) else None
    return True, np.array(sorted(r[0] for r in conn.execute(
        _NUMBERED + f"({mask.where})", [build.name, space, *mask.params])), dtype=np.int64)


def _rows_of(conn, space: str, build: Build, numbers: list[int]) -> dict[int, tuple] | None:
    """``number -> (key, doc_id, title, summary, category, status)`` of ``numbers`` in
    ``build``, numbers mapped to keys in the same statement; ``None`` when any has no row
    (the build is no longer stored: see :func:`_keys`)."""
    rows = conn.execute(
        "SELECT k.num, d.key, d.doc_id, d.title, d.summary, d.category, d.status FROM "
        "wiki_postings_docs b JOIN wiki_postings_keys k ON k.space = b.space AND "
        "k.build = b.build AND k.num = ANY(%s) JOIN wiki_docs d ON d.space = k.space AND "
        "d.key = k.key WHERE b.space = %s AND b.build = %s",
        (numbers, space, build.name)).fetchall()
    found = {r[0]: r[1:] for r in rows}
    return found if len(found) == len(set(numbers)) else None


def _keys(conn, space: str, build: Build, numbers: list[int]) -> dict[int, str] | None:
    """``number -> key`` of ``numbers`` in ``build``; ``None`` when the build is no longer
    stored (built again since this search read it: what it read since may be of another
    build, so the caller answers by SQL instead)."""
    rows = conn.execute(  # one row with NULLs when the build holds none of them
        "SELECT k.num, k.key FROM wiki_postings_docs b LEFT JOIN wiki_postings_keys k ON "
        "k.space = b.space AND k.build = b.build AND k.num = ANY(%s) WHERE b.space = %s "
        "AND b.build = %s", (numbers, space, build.name)).fetchall()
    found = {num: key for num, key in rows if num is not None}
    return found if rows and len(found) == len(set(numbers)) else None


def _stale_scores(conn, space: str, keys: list[str], terms: list[str],
                  classes: tuple[float, float, float, float], df: dict[str, int],
                  stats) -> dict[str, float]:
    """``key -> score`` of the stale ``keys`` holding any of ``terms``, from their rows of
    ``wiki_terms`` now, summed in ``terms`` order with the packed documents' arithmetic
    (:func:`~indexes.retrieval.bm25_arrays.phrase_scores`): the SQL leg's expression
    orders its operations otherwise, and two documents tied to the last bit came out
    stale ones first (helper-32)."""
    import numpy as np

    from indexes.retrieval.bm25_arrays import ScoreBoard, TermPostings, phrase_scores

    a, b, c, d = classes
    rows = conn.execute(
        "SELECT key, lexeme, (fa * %s + fb * %s + fc * %s + fd * %s)::float4, doc_len "
        "FROM wiki_terms WHERE space = %s AND key = ANY(%s) AND lexeme = ANY(%s)",
        (a, b, c, d, space, keys, terms)).fetchall()
    numbers = {key: n for n, key in enumerate(sorted({r[0] for r in rows}))}
    if not numbers:
        return {}
    lengths = np.zeros(len(numbers), dtype=np.float64)
    by_term: dict[str, list[tuple[int, float]]] = {}
    for key, lexeme, freq, length in rows:
        lengths[numbers[key]] = length
        by_term.setdefault(lexeme, []).append((numbers[key], freq))
    board = ScoreBoard(len(numbers))
    for term in terms:
        found = sorted(by_term.get(term, ()))
        if found:
            postings = TermPostings(np.array([n for n, _ in found], dtype=np.int64),
                                    np.array([f for _, f in found], dtype=np.float32))
            board.add(postings.rowids, phrase_scores(
                postings, df=df.get(term, 0), n_rows=stats.docs,
                avgdl=max(stats.avg_len, 1.0), lengths=lengths))
    return {key: float(board.scores[n]) for key, n in numbers.items()}


def search(conn, space: str, terms: list[str], tsquery: str, where: str, params: list, *,
           limit: int, classes: tuple[float, float, float, float], stats,
           frequencies: Callable[[list[str]], dict[str, int]],
           passing: Callable[[list[str], tuple[str, list]], set[str]],
           idle: bool, mask: MaskFilter | None = None) -> list[Hit] | None:
    """The ``limit`` best documents of ``space`` holding any of ``terms`` (lexemes) that
    pass ``where`` (and the phrase of ``tsquery``, when it holds ``<->``), by the BM25 of
    :func:`indexes.pg.bm25.search_bm25`, ties by key; ``None`` when the space has no
    usable postings (none built, other weights, too stale) or the phrase check would read
    too many documents: the caller runs the SQL leg.

    Stale keys are scored from their rows of ``wiki_terms`` (:func:`_stale_scores`) and
    checked by ``passing(keys, condition)`` (the SQL leg's own statement); the documents'
    frequencies then come from ``frequencies`` (counted from ``wiki_terms``). ``idle``:
    outside a write (what is read may be kept). ``mask``: the same filter split for the
    kept mask (:class:`~indexes.pg.filters.MaskFilter`; default: ``where`` as it is)."""
    if limit <= 0 or not terms or stats.docs <= 0 or not exact_weights(classes):
        return None
    # one statement, one snapshot: the build, its stale keys and the lexemes' postings
    row = conn.execute(
        "SELECT d.build, d.weights, ARRAY(SELECT key FROM wiki_postings_stale s WHERE "
        "s.space = d.space), ARRAY(SELECT k.num FROM wiki_postings_stale s JOIN "
        "wiki_postings_keys k ON k.space = s.space AND k.build = d.build AND k.key = s.key "
        "WHERE s.space = d.space), ARRAY(SELECT p.lexeme FROM wiki_postings p WHERE p.space = "
        "d.space AND p.lexeme = ANY(%s) ORDER BY p.lexeme), ARRAY(SELECT p.nums FROM "
        "wiki_postings p WHERE p.space = d.space AND p.lexeme = ANY(%s) ORDER BY p.lexeme), "
        "ARRAY(SELECT p.freqs FROM wiki_postings p WHERE p.space = d.space AND p.lexeme = "
        "ANY(%s) ORDER BY p.lexeme) FROM wiki_postings_docs d WHERE d.space = %s",
        (terms, terms, terms, space), binary=True).fetchone()  # bytea as bytes, not hex
    if row is None or row[1] != _weights_text(classes) or \
            len(row[2]) > REBUILD_STALE * stats.docs:
        return None
    import numpy as np

    from indexes.retrieval.bm25_arrays import ScoreBoard, TermPostings, phrase_scores

    build, stale = _build(conn, space, row[0]), list(row[2])
    if build is None:  # built again since the statement above
        return None
    stored = {lexeme: TermPostings(np.frombuffer(nums, dtype=">i4").astype(np.int64),
                                   np.frombuffer(freqs, dtype=">f4").astype(np.float32))
              for lexeme, nums, freqs in zip(row[4], row[5], row[6], strict=True)}
    df = frequencies(terms) if stale else {t: len(p.rowids) for t, p in stored.items()}
    board = ScoreBoard(len(build.lengths))
    for term in terms:
        if term in stored:
            board.add(stored[term].rowids, phrase_scores(
                stored[term], df=df.get(term, 0), n_rows=stats.docs,
                avgdl=max(stats.avg_len, 1.0), lengths=build.lengths))
    # distinct (one stale row per key); np.unique's first call imports 17 ms of numpy
    stale_numbers = np.array(row[3], dtype=np.int64)
    if len(stale_numbers):
        board.drop(stale_numbers)
    chosen = _filter(conn, space, build, mask or MaskFilter(where, params), stats.version,
                     idle)
    if chosen is not None and chosen[0]:
        board.keep_only(chosen[1])
    elif chosen is not None:
        board.drop(chosen[1])
    phrase = "<->" in tsquery
    condition = (where + (" AND d.fts @@ %s::tsquery" if phrase else ""),
                 [*params, *([tsquery] if phrase else [])])
    top = board.top(limit * 4 if phrase else limit)
    if top and not phrase and not stale:  # the usual search: one statement from here
        found = _rows_of(conn, space, build, [n for n, _ in top])
        if found is None:  # built again meanwhile
            return None
        return hits_from_rows([(*found[n], s) for n, s in top], negate=False)
    keys = _keys(conn, space, build, [n for n, _ in top])
    if keys is None:  # built again meanwhile
        return None
    ranked = [(keys[n], s) for n, s in top]
    if phrase:
        kept = passing([k for k, _ in ranked], condition)
        if len(kept) < limit and len(ranked) == limit * 4:
            return None  # more candidates to check than is worth it here
        ranked = [(k, s) for k, s in ranked if k in kept]
    if stale:  # scored by the same arithmetic, so ties with packed documents are exact
        scored = _stale_scores(conn, space, stale, terms, classes, df, stats)
        kept = passing(list(scored), condition)
        ranked += [(k, s) for k, s in scored.items() if k in kept]
    best = sorted(ranked, key=lambda item: (-item[1], item[0]))[:limit]
    rows = {r[0]: r for r in conn.execute(
        "SELECT d.key, d.doc_id, d.title, d.summary, d.category, d.status FROM wiki_docs d "
        "WHERE d.space = %s AND d.key = ANY(%s)", [space, [k for k, _ in best]])}
    if len(rows) < len(best):  # deleted by another process meanwhile: not a short list
        return None
    return hits_from_rows([(*rows[k], s) for k, s in best], negate=False)
