"""The SQLite BM25 leg's MaxScore top k (indexes/sqlite/bm25.py) returns exactly what
the whole OR query returns: same documents, same order, same scores, under every filter.

One real SQLite index of 700 documents whose words follow a Zipf law, so queries mix
phrases held by most documents (idf clamped), by more than 5 % (common) and by a few."""

from __future__ import annotations

import random
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zipf_corpus import FILTERS, VOCABULARY, corpus, whole_query

from indexes.retrieval.filters import Filters
from indexes.retrieval.maxscore import (
    K1,
    first_split,
    fts5_idf,
    largest_contribution,
    split_under,
)
from indexes.sqlite.bm25 import MAXSCORE_FROM
from indexes.sqlite.engine import SearchIndex

_FOLDER = tempfile.mkdtemp(prefix="wiki-bm25-topk-")
_INDEX: list[SearchIndex] = []


def _index() -> SearchIndex:
    """One index for the module, built once (hypothesis runs many examples)."""
    if not _INDEX:
        index = SearchIndex(Path(_FOLDER) / "topk.sqlite")
        index.maxscore_from = 0  # prune at any size: the paths are what is tested
        with index.transaction():
            index.upsert(corpus())
        _INDEX.append(index)
    return _INDEX[0]


def _pruned(index: SearchIndex, query: str, limit: int,
            filters: Filters) -> list[tuple[str, float]]:
    return [(h.key, round(h.score, 9))
            for h in index.search_bm25(query, limit=limit, filters=filters)]


@settings(max_examples=150)
@given(st.lists(st.integers(0, len(VOCABULARY) - 1), min_size=1, max_size=9),
       st.sampled_from([1, 3, 10, 50]), st.sampled_from(FILTERS))
def test_the_top_k_is_the_whole_querys(ranks: list[int], limit: int,
                                       filters: Filters) -> None:
    query = " ".join(VOCABULARY[r] for r in ranks)
    index = _index()
    assert _pruned(index, query, limit, filters) == whole_query(index, query, limit, filters)


def test_every_path_runs_and_agrees() -> None:
    """Over 300 seeded queries each path runs (first split proven, second split, whole
    query) and every answer equals the definition's; the statements are read from
    SQLite's own trace."""
    index = _index()
    statements: list[str] = []
    index.conn.set_trace_callback(statements.append)
    rng = random.Random(3)
    paths = {"split": 0, "second split": 0, "whole": 0}
    try:
        for _ in range(300):
            words = rng.choice([VOCABULARY[:40], VOCABULARY, VOCABULARY[100:]])
            query = " ".join(rng.choice(words) for _ in range(rng.randint(2, 8)))
            filters, limit = rng.choice(FILTERS), rng.choice([3, 10, 50])
            statements.clear()
            pruned = _pruned(index, query, limit, filters)
            splits = {m for s in statements for m in re.findall(r"'\(([^']*)\) NOT \(", s)}
            paths[["whole", "split", "second split"][len(splits)]] += 1
            assert pruned == whole_query(index, query, limit, filters), query
    finally:
        index.conn.set_trace_callback(None)
    assert min(paths.values()) >= 10, paths


def test_a_split_moves_the_most_frequent_phrases_while_allowed() -> None:
    frequencies = {'"a"': 600, '"b"': 90, '"c"': 40, '"d"': 3}
    split = first_split(frequencies, 1000, fraction=0.05)
    assert split.common == ('"a"', '"b"') and split.rare == ('"c"', '"d"')
    assert split.bound == pytest.approx((fts5_idf(600, 1000) + fts5_idf(90, 1000)) * (K1 + 1))
    assert fts5_idf(600, 1000) == 1e-6  # held by most documents: FTS5's floor
    # under a threshold: only what fits below it, most frequent first
    assert split_under(frequencies, 1000, largest_contribution(90, 1000)).common == ('"a"',)
    assert split_under(frequencies, 1000, 1e-7) is None
    # one phrase always stays rare
    assert first_split({'"a"': 900, '"b"': 800}, 1000).rare == ('"b"',)
    assert first_split({'"a"': 900}, 1000) is None


def test_a_small_index_runs_the_whole_query_once(tmp_path: Path) -> None:
    """Below :data:`MAXSCORE_FROM` documents one statement ranks the whole OR query (no
    df counts, no split): faster at the handbook's and SciFact's sizes."""
    index = SearchIndex(tmp_path / "small.sqlite")
    with index.transaction():
        index.upsert(corpus(size=300))
    statements: list[str] = []
    index.conn.set_trace_callback(statements.append)
    try:
        hits = _pruned(index, "w000 w001 w150", 10, Filters())
    finally:
        index.conn.set_trace_callback(None)
    assert hits == whole_query(index, "w000 w001 w150", 10, Filters())
    assert index.maxscore_from == MAXSCORE_FROM > 300
    ranked = [s for s in statements if "bm25(" in s]
    assert len(ranked) == 1 and " NOT " not in ranked[0], statements
    assert not [s for s in statements if "count(*) FROM docs_fts WHERE" in s], statements
