"""The LLM retrieval methods on the handbook dev questions, beside bm25/vector/hybrid.

    python -m evals.llm_eval [--model local/qwen2.5-coder-1.5b] [--method llm ...]
                             [--max-calls 12] [--max-seconds 90] [--folders 2]
                             [--entries 20] [--deep-read 3] [--weight 1.0] [--limit N]

Writes ``evals/results/handbook-llm.md`` (and ``.json``). Only the answerable questions
are run (the metrics are over them; the LLM does not change the evidence-gap rule).
Responses and walks are cached in ``evals/.cache/llm-responses.sqlite``, keyed by prompt
and model (walks also by commit and settings), so a re-run costs only what changed; the
per-question costs in the table count only questions whose walk was not cached. Without
the local extra (or another model) it says so and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from evals import datasets, embedcache
from evals.llm_methods import LLM_METHODS
from evals.methods import METHODS, Target
from evals.metrics import aggregate, dedupe_units, first_rank, query_metrics
from evals.report import header, md_table, now, project_commit, write
from evals.run import HANDBOOK_LIMIT, METRIC_COLUMNS, describe_fusion, page_units

DEFAULT_MODEL = "local/qwen2.5-coder-1.5b"
BASELINES = ("bm25", "vector", "hybrid")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    from wiki.config import LLMConfig, SearchConfig

    defaults = LLMConfig()
    parser = argparse.ArgumentParser(prog="python -m evals.llm_eval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--method", action="append",
                        choices=[*BASELINES, *LLM_METHODS])
    parser.add_argument("--max-calls", type=int, default=defaults.max_calls)
    parser.add_argument("--max-tokens", type=int, default=defaults.max_tokens)
    parser.add_argument("--max-seconds", type=float, default=defaults.max_seconds)
    parser.add_argument("--folders", type=int, default=defaults.walk_folders)
    parser.add_argument("--entries", type=int, default=defaults.walk_entries)
    parser.add_argument("--deep-read", type=int, default=defaults.deep_read)
    parser.add_argument("--rerank-top", type=int, default=defaults.rerank_top)
    parser.add_argument("--weight", type=float, default=1.0, help="the llm leg's weight")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="only re-render the tables of earlier runs' JSON files into one")
    parser.add_argument("--data")
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    args = parser.parse_args(argv)
    methods = args.method or [*BASELINES, "llm", "hybrid+llm"]
    config = replace(defaults, max_calls=args.max_calls, max_tokens=args.max_tokens,
                     max_seconds=args.max_seconds, walk_folders=args.folders,
                     walk_entries=args.entries, deep_read=args.deep_read,
                     rerank_top=args.rerank_top)
    if args.merge:
        return _merge([Path(p) for p in args.merge], Path(args.out), config, args)
    try:
        data = datasets.data_dir(args.data)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    client = _client(args.model, config)
    if client is None:
        return 0
    answerable, _ = datasets.handbook_questions(data)
    questions = answerable[:args.limit] if args.limit else answerable
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    repo, _ = datasets.cached_handbook(data, log=log)
    wiki = Wiki(repo)
    index = open_synced(wiki).index
    embedcache.embed_index(index, log=log)
    units_of = page_units(index)
    search = SearchConfig()
    fusion = replace(Target("h", index).fusion, legs=search.legs, window=search.window,
                     weights=search.leg_weights, method=search.fusion)
    target = Target("handbook", index, wiki, fusion=fusion)
    summaries, per_question = {}, {}
    for method in methods:
        if method in LLM_METHODS:
            kwargs = {"weight": args.weight} if method == "hybrid+llm" else {}
            retrieve = LLM_METHODS[method](target, client, config, **kwargs)
        else:
            retrieve = METHODS[method](target)
        rows, latencies, details = [], [], []
        for number, q in enumerate(questions, 1):
            start = time.perf_counter()
            result = retrieve(q.question, HANDBOOK_LIMIT)
            latencies.append((time.perf_counter() - start) * 1000.0)
            pages = dedupe_units(result.keys, units_of)
            rows.append(query_metrics(pages, set(q.gold)))
            usage = result.extra.get("usage") or {}
            details.append({"id": q.id, "page_rank": first_rank(pages, set(q.gold)),
                            "usage": usage, "stopped": result.extra.get("stopped"),
                            "cached": result.extra.get("cached")})
            if method in LLM_METHODS:
                log(f"{method} {number}/{len(questions)} {q.id}: page rank "
                    f"{details[-1]['page_rank']}, {usage.get('calls')} calls, "
                    f"{usage.get('tokens')} tokens, {latencies[-1] / 1000:.1f} s")
        summary = aggregate(rows, latencies)
        if method in LLM_METHODS:
            summary.update(_costs(details))
        summaries[method], per_question[method] = summary, details
    index.close()
    markdown = _report(summaries, per_question, [q.id for q in questions], config, args,
                       describe_fusion(fusion), client.usage.to_dict())
    write(Path(args.out), "handbook-llm", markdown,
          {"dataset": "handbook", "model": args.model, "results": summaries,
           "questions": per_question, "config": vars(config),
           "fusion": describe_fusion(fusion)})
    print(markdown)
    return 0


def _merge(paths: list[Path], out: Path, config, args) -> int:
    """One table from earlier runs (later files win for a method seen twice)."""
    import json

    summaries, per_question, fusion, questions = {}, {}, "", []
    for path in paths:
        payload = json.loads(path.read_text(encoding="utf-8"))
        for method, summary in payload["results"].items():
            details = payload["questions"][method]
            summary = {k: v for k, v in summary.items()
                       if k not in ("calls_per_q", "tokens_per_q", "llm_s_per_q",
                                    "cut_by_budget", "questions_walked")}
            if method in LLM_METHODS:
                summary.update(_costs(details))
            summaries[method], per_question[method] = summary, details
            questions = [d["id"] for d in details]
        fusion = payload.get("fusion", fusion)
    if not fusion:  # runs from before the JSON named it: the defaults
        from indexes.retrieval.hybrid import FusionConfig
        from wiki.config import SearchConfig

        search = SearchConfig()
        fusion = describe_fusion(FusionConfig(search.legs, search.rrf_k, search.window,
                                              search.leg_weights, search.fusion))
    markdown = _report(summaries, per_question, questions, config, args, fusion, "see the "
                       "JSON files of the runs merged")
    write(out, "handbook-llm", markdown, {"dataset": "handbook", "model": args.model,
                                          "results": summaries, "questions": per_question,
                                          "fusion": fusion, "merged": [str(p) for p in paths]})
    print(markdown)
    return 0


def _client(model: str, config):
    from wiki.llm.client import LLMClient
    from wiki.llm.errors import ModelFileError
    from wiki.llm.settings import limits_of

    if model.startswith("local/"):
        from wiki.llm.modelfile import model_path

        try:
            model_path()
        except ModelFileError as exc:
            log(f"skipping the LLM evaluation: {exc}")
            return None
    from wiki.llm.cache import ResponseCache

    cache = ResponseCache(datasets.CACHE_DIR / "llm-responses.sqlite")
    return LLMClient(model, cache=cache, timeout=config.timeout, limits=limits_of(config))


def _costs(details: list[dict]) -> dict:
    """Per-question means of what the model cost, over the questions that made provider
    calls (walks or responses from the cache cost nothing and are left out)."""
    fresh = [d["usage"] for d in details if d["usage"] and d["usage"].get("calls")]
    if not fresh:
        return {"questions_walked": 0}
    return {"calls_per_q": statistics.fmean(u["calls"] for u in fresh),
            "tokens_per_q": statistics.fmean(u["tokens"] for u in fresh),
            "llm_s_per_q": statistics.fmean(u["seconds"] for u in fresh),
            "cut_by_budget": sum(1 for d in details if d["stopped"]),
            "questions_walked": len(fresh)}


def _report(summaries, per_question, questions, config, args, fusion: str, usage) -> str:
    facts = {"date": now(), "project commit": project_commit(),
             "checkpoint": datasets.CHECKPOINT[:12], "model": args.model,
             "questions": f"{len(questions)} answerable dev questions",
             "walk": f"folders {config.walk_folders}, entries {config.walk_entries}, "
                     f"deep_read {config.deep_read}; budget per question: "
                     f"{config.max_calls} calls, {config.max_tokens} tokens, "
                     f"{config.max_seconds:g} s",
             "fusion": f"{fusion}, llm weight {args.weight:g}",
             "parameters": f"{HANDBOOK_LIMIT} entries retrieved per question, deduplicated "
                           "to source pages in rank order"}
    columns = [*METRIC_COLUMNS, "calls_per_q", "tokens_per_q", "llm_s_per_q",
               "cut_by_budget"]
    present = [c for c in columns if any(c in s for s in summaries.values())]
    table = md_table(["method", *present],
                     [[m, *(s.get(c) for c in present)] for m, s in summaries.items()])
    ranks = md_table(["id", *summaries], [[q, *(per_question[m][i]["page_rank"]
                                                for m in summaries)]
                                          for i, q in enumerate(questions)])
    return "\n".join([header("Handbook dev questions: the LLM walk", facts), "",
                      "## Retrieval (answerable)", "", table, "",
                      "calls/tokens/llm_s per question: means over the questions that made "
                      "provider calls (a walk from the cache costs nothing; `hybrid+llm` "
                      "reuses the `llm` walks, so its cost is the `llm` row's). "
                      f"LLM usage of this run: {usage}", "",
                      "## First gold page rank per question", "", ranks])


if __name__ == "__main__":
    raise SystemExit(main())
