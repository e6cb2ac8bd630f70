"""Routing on the handbook dev questions: does scoping the search to the question's
category folder(s) help?

    python -m evals.routing [--model local/qwen2.5-coder-1.5b | --model none]
                            [--margin 0.02] [--data DIR] [--out evals/results]

Methods (all: alias + bm25 + vector fused as the product fuses, ``[search]`` defaults):
``hybrid`` (no routing), ``hybrid+route`` (hard scope: every leg searches only the routed
folders), ``hybrid+route-boost`` (soft prior: a ``route`` leg of weight 1 fused with the
others), ``hybrid+route-llm`` / ``hybrid+route-boost-llm`` (the same, ambiguous routes
tie-broken by the model; only when the model is installed). Besides the retrieval
metrics: routing accuracy (share of answerable questions with a gold page's folder among
the routed ones), how many routes were ambiguous, and the product's evidence-gap counts.
Writes ``routing.md`` / ``.json``.
LoCoMo is not categorised and is not run. The margin and TOP_K were calibrated on these
same dev questions (there is no held-out categorised set); say so when quoting them.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from evals import datasets, embedcache
from evals.methods import METHODS, Retrieved, Target, _product_gap
from evals.metrics import aggregate, dedupe_units, first_rank, query_metrics
from evals.report import header, md_table, now, project_commit, write
from evals.run import HANDBOOK_LIMIT, describe_fusion, page_units
from indexes.retrieval import routing
from indexes.retrieval.hybrid import fuse, run_legs
from indexes.sqlite.engine import Filters

COLUMNS = ["recall@3", "recall@5", "recall@10", "hit@3", "mrr@10", "ndcg@10", "p50_ms",
           "p95_ms", "route_accuracy", "ambiguous", "tie_breaks", "mean_folders",
           "gaps_unanswerable", "false_gaps_answerable"]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def routed(target: Target, mode: str, *, margin: float, client=None):
    """``hybrid`` with routing in ``mode`` (``filter`` or ``boost``) through the product's
    :mod:`wiki.answering.routing`; ``client`` tie-breaks ambiguous routes."""
    from evals.embedcache import embedder
    from wiki.answering.routing import apply, boost, decide

    model = embedder()

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        config = replace(target.fusion, window=max(target.fusion.window, limit),
                         weights={**target.fusion.weights, "route": 1.0})
        filters = filters or target.filters
        vector = model.encode([query])[0]
        found = decide(target.index, query, vector, model.name, filters=filters,
                       margin=margin, client=client)
        legs = run_legs(target.index, query, config, filters=apply(found, mode, filters),
                        query_vector=vector, model=model.name).legs
        legs = boost(legs, found, mode)
        keys = [h.key for h in fuse(legs, config, limit=limit)]
        return Retrieved(keys, *_product_gap(target, query, legs, keys), legs=legs,
                         extra={"route": found})

    return retrieve


def main(argv: list[str] | None = None) -> int:
    from wiki.config import SearchConfig
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    parser = argparse.ArgumentParser(prog="python -m evals.routing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b",
                        help="tie-break model ('none': skip hybrid+route-llm)")
    parser.add_argument("--margin", type=float, default=routing.MARGIN)
    parser.add_argument("--data")
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    args = parser.parse_args(argv)
    data = datasets.data_dir(args.data)
    answerable, unanswerable = datasets.handbook_questions(data)
    repo, _ = datasets.cached_handbook(data, log=log)
    index = open_synced(Wiki(repo)).index
    embedcache.embed_index(index, log=log)
    search = SearchConfig()
    fusion = replace(Target("h", index).fusion, legs=search.legs, window=search.window,
                     weights=search.leg_weights, method=search.fusion)
    target = Target("handbook", index, Wiki(repo), filters=Filters(), fusion=fusion,
                    gap_threshold=search.gap_threshold)
    methods = {"hybrid": METHODS["hybrid"](target),
               "hybrid+route": routed(target, "filter", margin=args.margin),
               "hybrid+route-boost": routed(target, "boost", margin=args.margin)}
    client = None if args.model == "none" else _client(args.model)
    if client is not None:
        methods["hybrid+route-llm"] = routed(target, "filter", margin=args.margin,
                                             client=client)
        methods["hybrid+route-boost-llm"] = routed(target, "boost", margin=args.margin,
                                                   client=client)
    branch = routing.branch_folder(c for (c,) in index.conn.execute(
        "SELECT category FROM docs WHERE status = 'active'"))
    units_of = page_units(index)
    summaries, per_question = {}, {}
    for name, retrieve in methods.items():
        summaries[name], per_question[name] = _evaluate(
            retrieve, answerable, unanswerable, units_of, branch)
        log(f"{name}: {summaries[name]}")
    index.close()
    facts = {"date": now(), "project commit": project_commit(),
             "checkpoint": datasets.CHECKPOINT[:12],
             "questions": f"{len(answerable)} answerable + {len(unanswerable)} unanswerable "
                          "dev questions (the margin and TOP_K were calibrated on them)",
             "routing": f"method {routing.DEFAULT_METHOD} (mean cosine of a folder's "
                        f"{routing.TOP_K} nearest entries), margin {args.margin}, at most "
                        f"{routing.MAX_FOLDERS} folders, below '{branch}/'",
             "tie-break model": args.model if client is not None else "none",
             "parameters": f"{HANDBOOK_LIMIT} entries per question, deduplicated to pages; "
                           f"{describe_fusion(fusion)}; boost: route leg weight 1"}
    markdown = _report(facts, summaries, per_question, answerable)
    write(Path(args.out), "routing", markdown,
          {"dataset": "handbook", **facts, "results": summaries, "questions": per_question})
    print(markdown)  # noqa: T201 - a script's report
    return 0


def _evaluate(retrieve, answerable, unanswerable, units_of, branch) -> tuple[dict, list]:
    rows, latencies, details = [], [], []
    for q in answerable + unanswerable:
        start = time.perf_counter()
        result = retrieve(q.question, HANDBOOK_LIMIT)
        latencies.append((time.perf_counter() - start) * 1000.0)
        pages, gold = dedupe_units(result.keys, units_of), set(q.gold)
        found = result.extra.get("route")
        folders = found.folders if found else []
        golden = {routing.folder_of(g.rpartition("/")[0], branch) for g in gold}
        if gold:
            rows.append(query_metrics(pages, gold))
        details.append({"id": q.id, "gold": sorted(gold), "page_rank": first_rank(pages, gold),
                        "gap": result.gap, "folders": folders,
                        "gold_folders": sorted(f for f in golden if f),
                        "routed_right": bool(golden & set(folders)) if gold else None,
                        "ambiguous": bool(found and found.ambiguous),
                        "by": found.by if found else None,
                        "scores": found.scores[:4] if found else []})
    summary = aggregate(rows, latencies)
    scored = [d for d in details if d["gold"]]
    summary["gaps_unanswerable"] = sum(d["gap"] for d in details if not d["gold"])
    summary["false_gaps_answerable"] = sum(d["gap"] for d in scored)
    if any(d["by"] for d in details):
        summary["route_accuracy"] = sum(d["routed_right"] for d in scored) / len(scored)
        summary["ambiguous"] = sum(d["ambiguous"] for d in details)
        summary["tie_breaks"] = sum(d["by"] == "llm" for d in details)
        summary["mean_folders"] = sum(len(d["folders"]) for d in details) / len(details)
    return summary, details


def _client(model: str):
    from evals.llm_eval import _client as make
    from wiki.config import LLMConfig

    return make(model, LLMConfig())


def _report(facts: dict, summaries: dict, per_question: dict, answerable) -> str:
    present = [c for c in COLUMNS if any(c in s for s in summaries.values())]
    table = md_table(["method", *present],
                     [[m, *(s.get(c) for c in present)] for m, s in summaries.items()])
    routed_methods = [m for m in summaries if m != "hybrid"]
    ids = [q.id for q in answerable]
    rows = []
    for i, qid in enumerate(ids):
        first = per_question[routed_methods[0]][i]
        rows.append([qid, ", ".join(f.rpartition("/")[2] for f in first["gold_folders"]),
                     ", ".join(f"{f.rpartition('/')[2]} {s:.3f}" for f, s in first["scores"]),
                     *(("+" if per_question[m][i]["routed_right"] else "MISS") + " "
                       + ",".join(f.rpartition("/")[2] for f in per_question[m][i]["folders"])
                       for m in routed_methods if "boost" not in m),
                     *(per_question[m][i]["page_rank"] for m in summaries)])
    heads = ["id", "gold folder", "best folder scores",
             *(f"route ({m})" for m in routed_methods if "boost" not in m),
             *(f"page rank {m}" for m in summaries)]
    return "\n".join([
        header("Routing on the handbook dev questions", facts), "", "## Retrieval", "", table,
        "", "route_accuracy: share of the 35 answerable questions with a gold page's folder "
        "among the routed folders. ambiguous: routes with several folders within the margin "
        "(over all 41 questions); tie_breaks: of those, narrowed by the model. Gaps: the "
        "product's rule (coverage < 0.54 and best cosine < 0.45) on the routed legs; "
        "gaps_unanswerable out of 6 (good), false_gaps_answerable out of 35 (bad).", "",
        "## Per question", "", md_table(heads, rows)])


if __name__ == "__main__":
    raise SystemExit(main())
