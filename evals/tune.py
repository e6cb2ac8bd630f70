"""Fusion tuning on the tuning splits only: SciFact train, handbook dev, LoCoMo tune half.

    python -m evals.tune collect            # run the legs once per query (cached)
    python -m evals.tune sweep              # grid of fusion variants -> results/tuning.md
    python -m evals.tune diagnose           # why RRF loses on LoCoMo -> results/diagnosis.md
    python -m evals.tune collect_scifact_chunks  # SciFact re-chunked (100/300/1000 words)
    python -m evals.tune chunks_scifact     # -> results/tuning-chunks-scifact.md

``collect`` stores, per query, each leg's hits ``(key, score)`` over a wide window (100
documents; 300 LoCoMo turns) plus the gold units, in ``evals/.cache/legs-*.pkl``; the
sweeps then fuse offline (a few ms per query). The held-out sets (SciFact test, LoCoMo
held-out half) are collected too but only reported, never used to choose.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from evals import datasets, embedcache
from evals.metrics import dedupe_units, query_metrics

WIDE = {"scifact": 100, "handbook": 100, "locomo-session": 40, "locomo-turn": 300}
CUT = {"scifact": 100, "handbook": 30, "locomo-session": 40, "locomo-turn": 300}
"""Fused documents kept before mapping to units (as the runner does)."""


def legs_path(name: str) -> Path:
    return datasets.CACHE_DIR / f"legs-{name}.pkl"


def _run(index, queries, window: int, filters_of) -> list[dict]:
    from indexes.retrieval.hybrid import FusionConfig, run_legs

    model = embedcache.embedder()
    vectors = model.encode([q["query"] for q in queries])
    config = FusionConfig(window=window)
    for q, vector in zip(queries, vectors, strict=True):
        legs = run_legs(index, q["query"], config, filters=filters_of(q),
                        query_vector=vector, model=model.name).legs
        q["legs"] = {leg: [(h.key, h.score) for h in hits] for leg, hits in legs.items()}
    return queries


def collect(data: Path) -> None:
    from evals.locomo import locomo_index, questions
    from indexes.sqlite.engine import Filters
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    log = embedcache.stderr
    _collect_scifact(data)
    from evals.run import page_units

    repo, _ = datasets.cached_handbook(data, log=log)
    index = open_synced(Wiki(repo)).index
    embedcache.embed_index(index, log=log)
    answerable, unanswerable = datasets.handbook_questions(data)
    queries = [{"id": q.id, "query": q.question, "gold": set(q.gold), "split": "dev"}
               for q in answerable + unanswerable]
    pickle.dump({"units": page_units(index), "queries": _run(
        index, queries, WIDE["handbook"], lambda q: Filters())},
        legs_path("handbook").open("wb"))
    index.close()
    for unit in ("session", "turn"):
        index, units_of = locomo_index(data, unit, log=log)
        queries = [{"id": q.id, "query": q.question, "gold": q.gold, "split": q.half,
                    "category": q.category, "conversation": q.conversation}
                   for q in questions(data)]
        pickle.dump({"units": units_of, "queries": _run(
            index, queries, WIDE[f"locomo-{unit}"],
            lambda q: Filters(statuses=None, category=q["conversation"]))},
            legs_path(f"locomo-{unit}").open("wb"))
        index.close()


def collect_chunks(data: Path, sizes=(60, 100, 300)) -> None:
    """LoCoMo sessions re-chunked at other sizes: ``legs-locomo-session-w<size>.pkl``."""
    from evals.locomo import locomo_index, questions
    from indexes.sqlite.engine import Filters

    for words in sizes:
        index, units_of = locomo_index(data, "session", chunk_words=words,
                                       log=embedcache.stderr)
        queries = [{"id": q.id, "query": q.question, "gold": q.gold, "split": q.half,
                    "category": q.category, "conversation": q.conversation}
                   for q in questions(data)]
        pickle.dump({"units": units_of, "queries": _run(
            index, queries, WIDE["locomo-session"],
            lambda q: Filters(statuses=None, category=q["conversation"]))},
            legs_path(f"locomo-session-w{words}").open("wb"))
        index.close()


def _collect_scifact(data: Path, words: int | None = None) -> None:
    """SciFact train and test legs (vectors over ``words``-word chunks, default the
    index's): ``legs-scifact-<split>[-w<words>].pkl``."""
    from indexes.sqlite.engine import Filters

    index = datasets.scifact_index(data, chunk_words=words, log=embedcache.stderr)
    embedcache.embed_index(index, log=embedcache.stderr)
    for split in ("train", "test"):
        s = datasets.scifact_split(data, split)
        queries = [{"id": i, "query": t, "gold": s.qrels[i], "split": split}
                   for i, t in s.queries.items()]
        pickle.dump({"units": None, "queries": _run(index, queries, WIDE["scifact"],
                                                    lambda q: Filters(statuses=None))},
                    legs_path(f"scifact-{split}" + (f"-w{words}" if words else "")).open("wb"))
    index.close()


def collect_scifact_chunks(data: Path, sizes=(100, 300, 1000)) -> None:
    """SciFact with vectors over chunks of other sizes (1000 words = each abstract whole
    but for 5): ``legs-scifact-<split>-w<size>.pkl``."""
    for words in sizes:
        _collect_scifact(data, words)


def load(name: str) -> dict:
    return pickle.loads(legs_path(name).read_bytes())


def evaluate(bundle: dict, fuse, *, cut: int, split: str | None = None,
             category: int | None = None) -> dict[str, float]:
    """Mean metrics of ``fuse(legs) -> keys`` over the queries with gold (categories 1-4
    for LoCoMo), restricted to ``split`` / ``category`` when given."""
    rows = []
    for q in bundle["queries"]:
        if not q["gold"] or q.get("category") == 5:
            continue
        if (split and q["split"] != split) or (category and q.get("category") != category):
            continue
        keys = fuse(q["legs"])[:cut]
        ranked = dedupe_units(keys, bundle["units"]) if bundle["units"] else keys
        rows.append(query_metrics(ranked, q["gold"]))
    return {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]} if rows else {}


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "sweep"
    data = datasets.data_dir()
    if command == "collect":
        collect(data)
    elif command == "collect_chunks":
        collect_chunks(data)
    elif command == "collect_scifact_chunks":
        collect_scifact_chunks(data)
    else:
        from evals import sweep

        getattr(sweep, command)(data)
