"""Run retrieval methods over the evaluation datasets and write result tables.

    python -m evals.run --dataset handbook|scifact|locomo|all [--method bm25 --method grep]
                        [--split test|train|both] [--data DIR] [--out evals/results]
                        [--rrf-k 60] [--window 50] [--weights alias=1,bm25=1,vector=1]
                        [--chunk-words 180] [--locomo-unit session|turn|both]

Markdown tables go to stdout and to ``<out>/<dataset>.md``; the numbers also go to
``<out>/<dataset>.json``. See evals/README.md for what each column means.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from evals import datasets, embedcache
from evals.abstain import features
from evals.methods import METHODS, Retriever, Target
from evals.metrics import KS, aggregate, dedupe_units, first_rank, gap_sweep, query_metrics
from evals.metrics import recall_at as recall
from evals.report import header, md_table, now, project_commit, write
from indexes.retrieval.hybrid import FusionConfig

HANDBOOK_LIMIT = 30
"""Entries retrieved per handbook question (pages are split into several entries, so
this leaves about 10 distinct pages for the @10 metrics)."""

SCIFACT_LIMIT = 100
FIELDS = {"flat": "title + text in the body column, as BEIR/Anserini flat",
          "multifield": "title in the title column, text in the body, default weights"}
METRIC_COLUMNS = ([f"recall@{k}" for k in KS] + [f"hit@{k}" for k in KS]
                  + ["mrr@10", "ndcg@10", "missed@10", "non_gold@10", "p50_ms", "p95_ms"])


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def timed(retrieve: Retriever, query: str, limit: int, **kwargs):
    start = time.perf_counter()
    result = retrieve(query, limit, **kwargs)
    return result, (time.perf_counter() - start) * 1000.0


# -- handbook ------------------------------------------------------------------------------

def run_handbook(data: Path, methods: list[str], out: Path, fusion: FusionConfig,
                 chunk_words: int | None = None) -> str:
    from indexes.sqlite.engine import Filters
    from wiki.store.derived import indexed_config, open_synced
    from wiki.store.workspace import Wiki

    answerable, unanswerable = datasets.handbook_questions(data)
    repo, _ = datasets.cached_handbook(data, log=log)
    wiki = Wiki(repo)
    index = open_synced(wiki).index
    if chunk_words and chunk_words != index.chunk_words:
        index = embedcache.rechunked(index, chunk_words)
    if {"vector", "hybrid"} & set(methods):
        embedcache.embed_index(index, log=log)
    threshold = indexed_config(index).search.gap_threshold
    units_of = page_units(index)
    target = Target("handbook", index, wiki, filters=Filters(), fusion=fusion,
                    gap_threshold=threshold)
    summaries, per_question, sweeps = {}, {}, {}
    for method in methods:
        retrieve = METHODS[method](target)
        rows, latencies, details = [], [], []
        for q in answerable + unanswerable:
            result, ms = timed(retrieve, q.question, HANDBOOK_LIMIT)
            latencies.append(ms)
            pages = dedupe_units(result.keys, units_of)
            gold = set(q.gold)
            if gold:
                rows.append(query_metrics(pages, gold))
            entry_rank = next((r for r, k in enumerate(result.keys, 1)
                               if gold.intersection(units_of.get(k, ()))), None)
            details.append({"id": q.id, "style": q.style, "question": q.question,
                            "gold": q.gold, "page_rank": first_rank(pages, gold),
                            "entry_rank": entry_rank, "confidence": result.confidence,
                            "gap": result.gap, "top": result.keys[0] if result.keys else None,
                            **({"features": features(result)} if result.legs else {})})
        summary = aggregate(rows, latencies)
        if details[0]["gap"] is not None:
            summary["gaps_unanswerable"] = sum(d["gap"] for d in details if not d["gold"])
            summary["false_gaps_answerable"] = sum(d["gap"] for d in details if d["gold"])
            sweeps[method] = gap_sweep(
                [d["confidence"] or 0.0 for d in details if d["gold"]],
                [d["confidence"] or 0.0 for d in details if not d["gold"]],
                sorted({round(t * 0.05, 2) for t in range(21)} | {threshold}))
        summaries[method], per_question[method] = summary, details
    index.close()

    facts = {"date": now(), "project commit": project_commit(),
             "checkpoint": datasets.CHECKPOINT[:12],
             "sizes": f"{len(set(sum(units_of.values(), [])))} pages, {len(units_of)} entries, "
                      f"{len(answerable)} answerable + {len(unanswerable)} unanswerable questions",
             "parameters": f"{HANDBOOK_LIMIT} entries retrieved per question, deduplicated to "
                           f"source pages in rank order; gap_threshold {threshold} (wiki.toml); "
                           f"{describe_fusion(fusion)}; chunk_words {index.chunk_words}"}
    text = [header("Handbook (18F) dev questions", facts), "", "## Retrieval (answerable)", "",
            summary_table(summaries, [*METRIC_COLUMNS, "gaps_unanswerable",
                                      "false_gaps_answerable"]),
            "", f"gaps_unanswerable is out of {len(unanswerable)}, false_gaps_answerable "
                f"out of {len(answerable)}. Gap rule: bm25, vector and hybrid-z: coverage < "
                f"{threshold}; hybrid (the product): coverage < 0.54 and best cosine < 0.45 "
                "(`wiki.answering.search.is_gap`)."]
    for method, sweep in sweeps.items():
        details = per_question[method]
        text += ["", f"## Confidence ({method})", "",
                 "answerable: " + confidences(d for d in details if d["gold"]),
                 "", "unanswerable: " + confidences(d for d in details if not d["gold"]),
                 "", f"## Threshold sweep ({method})", "",
                 md_table(["threshold", f"gaps on unanswerable (/{len(unanswerable)})",
                           f"false gaps on answerable (/{len(answerable)})"],
                          [[f"{s['threshold']:.2f}" + (" (current)" if
                            s["threshold"] == threshold else ""),
                            s["gaps_unanswerable"], s["false_gaps_answerable"]]
                           for s in sweep])]
    markdown = "\n".join(text)
    write(out, "handbook", markdown, {"dataset": "handbook", **facts,
                                      "threshold": threshold, "results": summaries,
                                      "sweep": sweeps, "questions": per_question})
    write(out, "handbook-questions", questions_markdown(per_question, facts))
    return markdown


def page_units(index) -> dict[str, list[str]]:
    """Entry key -> the repository paths of its ``git:`` sources."""
    import json

    units: dict[str, list[str]] = {}
    for key, extra in index.conn.execute("SELECT key, extra FROM docs WHERE status = 'active'"):
        uris = [s.get("uri", "") for s in json.loads(extra).get("sources", [])]
        units[key] = [u[4:] for u in uris if u.startswith("git:")]
    return units


def confidences(details) -> str:
    return ", ".join(f"{d['id']} {d['confidence']:.2f}" for d in
                     sorted(details, key=lambda d: d["confidence"] or 0.0))


def questions_markdown(per_question: dict, facts: dict) -> str:
    text = [header("Handbook dev questions, one row each", facts)]
    for method, details in per_question.items():
        text += ["", f"## {method}", "",
                 "page rank / entry rank: first gold page in the deduplicated page list / "
                 "first entry citing a gold page (blank: not in the top "
                 f"{HANDBOOK_LIMIT} entries).", "",
                 md_table(["id", "style", "page rank", "entry rank", "confidence", "gap",
                           "top entry", "question"],
                          [[d["id"], d["style"], d["page_rank"], d["entry_rank"],
                            d["confidence"], d["gap"], d["top"], d["question"]]
                           for d in details])]
    return "\n".join(text)


def summary_table(summaries: dict[str, dict], columns: list[str]) -> str:
    present = [c for c in columns if any(c in s for s in summaries.values())]
    return md_table(["method", *present],
                    [[m, *(s.get(c) for c in present)] for m, s in summaries.items()])


# -- SciFact -------------------------------------------------------------------------------

def run_scifact(data: Path, methods: list[str], splits: list[str], out: Path,
                fields: str, fusion: FusionConfig, chunk_words: int | None = None) -> str:
    index = datasets.scifact_index(data, fields=fields, chunk_words=chunk_words, log=log)
    if {"vector", "hybrid"} & set(methods):
        embedcache.embed_index(index, log=log)
    target = Target("scifact", index, fusion=fusion)
    n_docs = index.count()
    facts = {"date": now(), "project commit": project_commit(),
             "sizes": f"{n_docs} documents; " + ", ".join(
                 f"{s}: {len(datasets.scifact_split(data, s).queries)} queries" for s in splits),
             "parameters": f"fields={fields} ({FIELDS[fields]}), "
                           f"{SCIFACT_LIMIT} documents retrieved per query; "
                           f"{describe_fusion(fusion)}; chunk_words {index.chunk_words}"}
    text, results = [header("BEIR SciFact", facts)], {}
    retrievers = {m: METHODS[m](target) for m in methods}
    for split_name in splits:
        split = datasets.scifact_split(data, split_name)
        summaries = {}
        for method, retrieve in retrievers.items():
            rows, latencies = [], []
            for qid, query in split.queries.items():
                result, ms = timed(retrieve, query, SCIFACT_LIMIT)
                latencies.append(ms)
                row = query_metrics(result.keys, split.qrels[qid])
                row["recall@100"] = recall(result.keys, split.qrels[qid], 100)
                rows.append(row)
            summaries[method] = aggregate(rows, latencies)
        results[split_name] = summaries
        label = "test" if split_name == "test" else f"{split_name} (tuning split, not the test)"
        text += ["", f"## {label}: {len(split.queries)} queries", "",
                 summary_table(summaries, [*METRIC_COLUMNS, "recall@100"])]
    text += ["", "Reference (test, nDCG@10): BM25 Anserini flat 0.679, BEIR paper BM25 0.665, "
                 "all-MiniLM-L6-v2 0.645 (see the dataset's README)."]
    index.close()
    markdown = "\n".join(text)
    write(out, "scifact", markdown, {"dataset": "scifact", **facts, "fields": fields,
                                     "results": results})
    return markdown


def describe_fusion(fusion: FusionConfig) -> str:
    weights = ",".join(f"{leg}={fusion.weights.get(leg, 1.0):g}" for leg in fusion.legs)
    method = getattr(fusion, "method", "rrf")
    return (f"hybrid: {method}" + (f" k={fusion.k}" if method == "rrf" else "")
            + f", window={fusion.window}, weights {weights}")


def parse_weights(text: str) -> dict[str, float]:
    """``alias=1,bm25=1.5`` -> ``{"alias": 1.0, "bm25": 1.5}``."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        leg, _, value = part.partition("=")
        out[leg.strip()] = float(value)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from wiki.config import SearchConfig

    defaults = SearchConfig()
    parser.add_argument("--dataset", choices=["handbook", "scifact", "locomo", "all"],
                        default="all")
    parser.add_argument("--method", action="append", choices=[*METHODS, "all"],
                        help="repeatable; default: all registered methods")
    parser.add_argument("--split", choices=["test", "train", "both"], default="both",
                        help="SciFact split(s) (default both; train is for tuning)")
    parser.add_argument("--fields", choices=["flat", "multifield"], default="flat",
                        help="SciFact: title+text in one column (flat) or title weighted")
    parser.add_argument("--fusion", choices=["rrf", "zscore"],
                        default=getattr(defaults, "fusion", "rrf"),
                        help="hybrid's fusion (where indexes.retrieval.hybrid offers a choice)")
    parser.add_argument("--rrf-k", type=int, default=defaults.rrf_k)
    parser.add_argument("--window", type=int, default=defaults.window)
    parser.add_argument("--weights", default=",".join(
        f"{leg}={w:g}" for leg, w in defaults.leg_weights.items()))
    parser.add_argument("--chunk-words", type=int, default=None,
                        help="vector chunk size (default: the index's, 180)")
    parser.add_argument("--locomo-unit", choices=["session", "turn", "both"], default="both")
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA or "
                                       "../shared/data)")
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    args = parser.parse_args(argv)
    methods = list(METHODS) if not args.method or "all" in args.method else \
        list(dict.fromkeys(args.method))
    try:
        data = datasets.data_dir(args.data)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    out = Path(args.out)
    fusion = FusionConfig(defaults.legs, args.rrf_k, args.window, parse_weights(args.weights))
    if "method" in FusionConfig.__dataclass_fields__:
        fusion = replace(fusion, method=args.fusion)
    if args.dataset in ("handbook", "all"):
        print(run_handbook(data, methods, out, fusion, args.chunk_words), end="\n\n")
    if args.dataset in ("scifact", "all"):
        splits = ["test", "train"] if args.split == "both" else [args.split]
        print(run_scifact(data, methods, splits, out, args.fields, fusion, args.chunk_words),
              end="\n\n")
    if args.dataset in ("locomo", "all"):
        from evals.locomo import run_locomo

        units = ["session", "turn"] if args.locomo_unit == "both" else [args.locomo_unit]
        print(run_locomo(data, methods, out, fusion=fusion, units=units,
                         chunk_words=args.chunk_words), end="\n\n")
    log(f"results written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
