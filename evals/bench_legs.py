"""Per-leg latency, build throughput (embedding included) and peak memory, for
:mod:`evals.bench`, on an index of any size (handbook ~818 entries, SciFact 5,183).

Latency: every dev/test question, ``repeat`` passes, after one warm-up pass: the query
encoding (MiniLM, in process), each leg alone (``alias`` = ``search_names``, ``bm25`` =
``SearchIndex.search`` (BM25 + trigram path), ``vector`` = ``search_vector`` with the
query vector precomputed), ``fused`` = run_legs + fuse with a precomputed vector, and
``confidence`` = lexical coverage of the top fused hit (the gap decision), ``hybrid`` =
what one query costs in process as ``wiki.answering.search`` runs it: the encoding started on a
worker thread, the lexical legs meanwhile, then the vector leg, fusion and confidence.
Limit 10 throughout.

Build throughput: the BM25/FTS index of all documents (measured in full, into a temporary
file) plus the embedding of their chunks, timed on a sample of ``sample`` chunks (not
cached) and extrapolated to all chunks: entries/s = entries / (index_s + chunks / rate).
"""

from __future__ import annotations

import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evals.metrics import percentile
from indexes.retrieval.filters import Filters
from indexes.retrieval.hybrid import FusionConfig, encode_in_background, fuse, run_legs


def _stats(samples: list[float]) -> dict:
    return {"n": len(samples), "p50_ms": percentile(samples, 50),
            "p95_ms": percentile(samples, 95)}


def fresh_question(index) -> None:
    """Forget the words' document frequencies both engines keep while the index is
    unchanged (``index.memo``: :class:`indexes.sqlite.memo.StateMemo`,
    :class:`indexes.pg.bm25.KeptFrequencies`), so each timed call pays for its question's
    words as a new question would; what does not depend on the question (a filter's
    rowids, the document count, the vector matrix) stays warm, as in a server."""
    index.memo.forget("df")


def leg_latency(index, queries: list[str], filters, *, repeat: int = 3,
                fusion: FusionConfig | None = None, embedder=None) -> dict:
    """``name -> {n, p50_ms, p95_ms}`` for encode, alias, bm25, vector, fused, confidence,
    hybrid; every timed call starts as a new question would (:func:`fresh_question`).
    ``filters``: a :class:`~indexes.retrieval.filters.Filters`, ``None``, or a call that
    makes each question's filters (as `wiki search` does: validity checked at the
    current second, :func:`as_searched`). ``embedder``: the model that encodes the
    queries (default: the in-process one, :func:`evals.embedcache.embedder`); one with
    ``encode_query`` (the embedding server's client) encodes through it, so the server
    may rank the vector leg as it does for a `wiki search` command."""
    from evals.embedcache import embedder as in_process

    model = embedder or in_process()
    encode_one = getattr(model, "encode_query", None) or (lambda text: model.encode([text])[0])
    fusion = fusion or FusionConfig()
    config = FusionConfig(fusion.legs, fusion.k, max(fusion.window, 10), fusion.weights)
    from indexes.retrieval.coverage import coverage

    times: dict[str, list[float]] = {n: [] for n in ("encode", "alias", "bm25", "vector",
                                                     "fused", "confidence", "hybrid")}
    make = filters if callable(filters) else (lambda: filters)
    filters = None
    calls = {
        "alias": lambda q, v: index.search_names(q, limit=10, filters=filters),
        "bm25": lambda q, v: index.search_lexical(q, limit=10, filters=filters),
        "vector": lambda q, v: index.search_vector(v, model.name, limit=10, filters=filters),
        "fused": lambda q, v: fuse(run_legs(index, q, config, filters=filters,
                                            query_vector=v, model=model.name).legs, config,
                                   limit=10),
    }
    for number in range(repeat + 1):
        for q in queries:
            start = time.perf_counter()
            vector = encode_one(q)
            encode = (time.perf_counter() - start) * 1000
            filters = make()
            spent = {}
            for name, call in calls.items():
                fresh_question(index)
                start = time.perf_counter()
                found = call(q, vector)
                spent[name] = (time.perf_counter() - start) * 1000
            start = time.perf_counter()
            if found:
                coverage(index, q, found[0].key)
            spent["confidence"] = (time.perf_counter() - start) * 1000
            fresh_question(index)
            start = time.perf_counter()
            pending = encode_in_background(encode_one, q)
            legs = run_legs(index, q, config, filters=filters, query_vector=pending,
                            model=model.name).legs
            hits = fuse(legs, config, limit=10)
            lexical = legs.get("bm25") or hits
            if lexical:
                coverage(index, q, lexical[0].key)
            spent["hybrid"] = (time.perf_counter() - start) * 1000
            if number:  # pass 0 warms caches (vector matrix, sqlite pages)
                times["encode"].append(encode)
                for name, ms in spent.items():
                    times[name].append(ms)
    return {name: _stats(values) for name, values in times.items()}


def as_searched(**fields) -> Callable[[], Filters]:
    """Filters as `wiki search` makes them for each question: ``fields`` (a scope...),
    active entries valid at the current second, with the default lifetimes of
    ``wiki.toml`` (``[lifetimes]``: episodes expire after 90 days)."""
    import datetime as dt

    from wiki.config import LifetimesConfig
    from wiki.store.lifetimes import iso, lifetimes

    days = tuple(sorted(lifetimes(LifetimesConfig()).items()))

    def make() -> Filters:
        return Filters(**fields, valid_at=iso(dt.datetime.now(dt.UTC)), lifetimes=days)

    return make


def build_throughput(documents: list, *, chunk_words: int | None = None,
                     sample: int = 256) -> dict:
    """Index ``documents`` into a temporary SearchIndex; time the BM25 build and the
    embedding of a ``sample`` of the texts a build embeds (its chunks: answer sentences
    are embedded by the answers that read them; uncached); extrapolate."""
    from evals.embedcache import embedder
    from indexes.sqlite.engine import SearchIndex
    from indexes.sqlite.vectors import CHUNK_WORDS

    model = embedder()
    with tempfile.TemporaryDirectory() as tmp, SearchIndex(Path(tmp) / "bench.sqlite",
                     chunk_words=chunk_words or CHUNK_WORDS) as index:
        start = time.perf_counter()
        with index.transaction():
            index.upsert(documents)
        index_s = time.perf_counter() - start
        texts = [t for _, t in index.vectors.pending(model.name)]
    model.encode(texts[:8])  # warm-up
    step = max(len(texts) // sample, 1)
    picked = texts[::step][:sample]
    start = time.perf_counter()
    model.encode(picked)
    rate = len(picked) / (time.perf_counter() - start)
    embed_s = len(texts) / rate
    return {"entries": len(documents), "chunks": len(texts), "index_s": index_s,
            "embed_chunks_per_s": rate, "embed_s_extrapolated": embed_s,
            "entries_per_s": len(documents) / (index_s + embed_s),
            "entries_per_s_without_embedding": len(documents) / index_s}


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (ru_maxrss, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
