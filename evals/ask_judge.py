"""The local model as a gap judge of ``wiki ask`` (:mod:`wiki.answering.gap_judge`), on the
staff handbook questions.

1. Every question of the half is asked once with the product's picker and its gaps off
   (as :mod:`evals.picker_tune` does), so each has its answer's sentences (with their
   entries' titles), its answer score and its support recall.
2. For each judge variant (an instruction of :data:`wiki.answering.gap_judge.PROMPTS` ×
   the number of sentences shown), the model judges every question's answer once, a new
   question per call as in the product (the system prompt is the only prefix reused),
   with no response cache, so the seconds are real. P(yes) and seconds are kept.
3. Gap rules are applied offline (a gap does not change which sentences are picked): the
   picker's rule alone (``answer score < 0.52``; the baseline), the judge alone
   (``P(yes) < t``), either (``score < 0.52 or P(yes) < t``) and a weighted sum
   (``score + w × P(yes) < t``); the answer-type check always on, as in the product. The
   best rule of a variant has the most gaps on unanswerable questions with at most 3 % false
   gaps on answerable ones (ties: higher support recall, then the simpler rule).

``--split tune`` chooses (writes ``ask-judge-tune.md/json``); ``--split test`` (or
``dev``: the handbook dev questions) re-applies the setting chosen on tune (the product's
``PROMPT``, ``SHOWN``, ``[llm] gap_judge_below``) and writes ``ask-judge-<split>.md``.

    python -m evals.ask_judge [--split tune|test|dev] [--model local/qwen2.5-coder-1.5b]

Needs the local model (``make setup-llm``); without it the script says so and stops.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from evals import embedcache
from evals.datasets import CACHE_DIR, QUESTIONS, cached_handbook, data_dir, read_jsonl
from evals.keywords import holds
from evals.metrics import auroc, percentile
from evals.report import header, md_table, now, project_commit, write

MODEL = "local/qwen2.5-coder-1.5b"
FALSE_GAP_BOUND = 0.03
PICKER_GAP = 0.52
THRESHOLDS = [round(0.02 * i, 2) for i in range(1, 50)]
SUM_WEIGHTS = (0.1, 0.2, 0.3, 0.5)
SUM_THRESHOLDS = [round(0.40 + 0.01 * i, 2) for i in range(60)]
TUNE_VARIANTS = [("answers", 1), ("answers", 2), ("answers", 4), ("states", 2),
                 ("helps", 2)]


def questions(split: str, data: Path) -> tuple[list[dict], list[dict]]:
    """``(answerable, unanswerable)`` question records of ``split`` (``dev``: the handbook
    dev questions under ``data``)."""
    if split == "dev":
        answerable = read_jsonl(data / QUESTIONS / "answerable.jsonl")
        unanswerable = read_jsonl(data / QUESTIONS / "unanswerable.jsonl")
        return ([{**q, "support": q.get("support") or []} for q in answerable],
                [{**q, "support": []} for q in unanswerable])
    from evals.staff_questions import records

    rows = records(split)
    return [r for r in rows if r["support"]], [r for r in rows if not r["support"]]


def answers(wiki, answerable: list[dict], unanswerable: list[dict]) -> list[dict]:
    """Each question asked once with the product picker, its gaps off."""
    from wiki.answering.ask import ask_for
    from wiki.answering.picker import DEFAULT

    config = replace(DEFAULT, retrieval_gap=False, gap_score=None, form_gap=False)
    rows = []
    for question in [*answerable, *unanswerable]:
        started = time.perf_counter()
        answer = ask_for(wiki, question["question"], synthesize=False, revalidate=False,
                     picker=config)
        titles = {c.number: c.title for c in answer.citations}
        text = " ".join(t for t, _ in answer.sentences)
        held = [holds(s["quote"], text) for s in question["support"]]
        rows.append({"id": question["id"], "question": question["question"],
                     "answerable": bool(question["support"]),
                     "type_gap": answer.gap, "score": answer.answer_score,
                     "recall": sum(held) / len(held) if held else None,
                     "sentences": [[titles.get(n, ""), t] for t, n in answer.sentences],
                     "ask_seconds": time.perf_counter() - started})
    return rows


def judged(client, rows: list[dict], prompt: str, shown: int) -> list[dict]:
    """``{id, p_yes, seconds, note}`` per row (a new question per call)."""
    from wiki.answering.gap_judge import judge

    out = []
    for row in rows:
        if not row["sentences"]:
            out.append({"id": row["id"], "p_yes": None, "seconds": 0.0, "note": "no sentence"})
            continue
        verdict = judge(client, row["question"], [tuple(s) for s in row["sentences"]],
                        shown=shown, prompt=prompt)
        out.append({"id": row["id"], "p_yes": verdict.p_yes, "seconds": verdict.seconds,
                    "note": verdict.note})
        print(f"  {row['id']} {'A' if row['answerable'] else 'U'} score "
              f"{row['score'] or 0:.3f} p_yes {verdict.p_yes} {verdict.seconds:.2f}s",
              file=sys.stderr, flush=True)
    return out


def gapped(row: dict, p_yes: float | None, rule: dict) -> bool:
    """Whether ``rule`` makes ``row`` a gap (a failed judgement leaves the picker's rule)."""
    score = row["score"] or 0.0
    if row["type_gap"] or not row["sentences"]:
        return True
    kind = rule["kind"]
    if kind == "picker" or p_yes is None:
        return score < PICKER_GAP
    if kind == "judge":
        return p_yes < rule["t"]
    if kind == "either":
        return score < PICKER_GAP or p_yes < rule["t"]
    return score + rule["w"] * p_yes < rule["t"]


def all_rules() -> list[dict]:
    """Every rule tried, the simplest first."""
    rules = [{"kind": "picker"}]
    rules += [{"kind": "judge", "t": t} for t in THRESHOLDS]
    rules += [{"kind": "either", "t": t} for t in THRESHOLDS]
    rules += [{"kind": "sum", "w": w, "t": t} for w in SUM_WEIGHTS for t in SUM_THRESHOLDS]
    return rules


def apply(rows: list[dict], verdicts: dict, rule: dict) -> dict:
    """Gaps, false gaps and support recall of one rule."""
    asked = [r for r in rows if r["answerable"]]
    unans = [r for r in rows if not r["answerable"]]
    gap = {r["id"]: gapped(r, verdicts.get(r["id"]), rule) for r in rows}
    return {**rule, "gaps": sum(gap[r["id"]] for r in unans), "unanswerable": len(unans),
            "false_gaps": sum(gap[r["id"]] for r in asked), "answerable": len(asked),
            "support_recall": statistics.mean(0.0 if gap[r["id"]] else r["recall"]
                                              for r in asked)}


def best(found: list[dict]) -> dict:
    """The most gaps under the false-gap bound (ties: support recall, simpler rule)."""
    order = {"picker": 0, "judge": 1, "either": 2, "sum": 3}
    allowed = [r for r in found if r["false_gaps"] <= FALSE_GAP_BOUND * r["answerable"]]
    return max(allowed, key=lambda r: (r["gaps"], r["support_recall"], -order[r["kind"]]))


def describe(rule: dict) -> str:
    """A rule in words."""
    if rule["kind"] == "picker":
        return f"score < {PICKER_GAP}"
    if rule["kind"] == "judge":
        return f"P(yes) < {rule['t']}"
    if rule["kind"] == "either":
        return f"score < {PICKER_GAP} or P(yes) < {rule['t']}"
    return f"score + {rule['w']} × P(yes) < {rule['t']}"


def summary(rows: list[dict], verdict_rows: list[dict], rules: list[dict]) -> dict:
    """A variant's AUROC, seconds, and each rule applied."""
    verdicts = {v["id"]: v["p_yes"] for v in verdict_rows}
    judged_rows = [r for r in rows if verdicts.get(r["id"]) is not None]
    seconds = [v["seconds"] for v in verdict_rows if v["p_yes"] is not None]
    return {
        "auroc_judge": auroc([verdicts[r["id"]] for r in judged_rows if r["answerable"]],
                             [verdicts[r["id"]] for r in judged_rows if not r["answerable"]]),
        "auroc_score": auroc([r["score"] or 0.0 for r in rows if r["answerable"]],
                             [r["score"] or 0.0 for r in rows if not r["answerable"]]),
        "p50_s": percentile(seconds, 50) if seconds else None,
        "p95_s": percentile(seconds, 95) if seconds else None,
        "failed": sum(v["p_yes"] is None and v["note"] != "no sentence"
                      for v in verdict_rows),
        "rules": [apply(rows, verdicts, rule) for rule in rules]}


def main() -> None:
    """Run the split; write ask-judge-<split>.md / .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--split", choices=("tune", "test", "dev"), default="tune")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--only", nargs="*", default=None,
                        help="variants as PROMPT:SHOWN (tune only)")
    args = parser.parse_args()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        sys.exit("evals.ask_judge: llama-cpp-python is not installed (make setup-llm)")
    path, _ = cached_handbook(data_dir(args.data))
    from wiki.answering import gap_judge
    from wiki.config import LLMConfig
    from wiki.llm.client import LLMClient
    from wiki.store.workspace import Wiki

    wiki = Wiki(path)
    embedcache.seed_wiki(wiki)
    answerable, unanswerable = questions(args.split, data_dir(args.data))
    rows = answers(wiki, answerable, unanswerable)
    client = LLMClient(args.model, cache=None, timeout=60.0)
    started = time.perf_counter()
    client.judge("warm-up", "warm-up")  # imports litellm and loads the model
    load_seconds = time.perf_counter() - started
    if args.split == "tune":
        variants = [(p, int(n)) for p, n in (v.split(":") for v in args.only)] \
            if args.only else TUNE_VARIANTS
        rules = all_rules()
    else:
        variants = [(gap_judge.PROMPT, gap_judge.SHOWN)]
        threshold = LLMConfig().gap_judge_below
        rules = [{"kind": "picker"}, {"kind": "either", "t": threshold}]  # the product's
    results = []
    for prompt, shown in variants:
        print(f"variant {prompt}:{shown}", file=sys.stderr, flush=True)
        verdict_rows = judged(client, rows, prompt, shown)
        found = summary(rows, verdict_rows, rules)
        chosen = best(found["rules"]) if args.split == "tune" else found["rules"][-1]
        results.append({"prompt": prompt, "shown": shown, **found, "best": chosen,
                        "by_kind": {kind: best([r for r in found["rules"]
                                                if r["kind"] == kind])
                                    for kind in ("picker", "judge", "either", "sum")
                                    if any(r["kind"] == kind for r in found["rules"])}
                        if args.split == "tune" else  # the setting chosen on tune, as is
                        {r["kind"]: r for r in found["rules"]},
                        "verdicts": verdict_rows})
    table = md_table(
        ["judge (prompt, sentences shown)", "AUROC P(yes)", "AUROC answer score",
         "p50 / p95 s per question", "best rule (≤ 3 % false gaps)" if args.split == "tune"
         else "rule chosen on tune", "gaps", "false gaps",
         "support recall"],
        [[f"{r['prompt']}, {r['shown']}", r["auroc_judge"], r["auroc_score"],
          f"{r['p50_s']:.2f} / {r['p95_s']:.2f}", describe(r["best"]),
          f"{r['best']['gaps']}/{r['best']['unanswerable']}",
          f"{r['best']['false_gaps']}/{r['best']['answerable']}",
          r["best"]["support_recall"]] for r in results])
    kinds = md_table(
        ["judge", "rule kind", "best rule" if args.split == "tune" else "rule", "gaps",
         "false gaps", "support recall"],
        [[f"{r['prompt']}, {r['shown']}", kind, describe(b), f"{b['gaps']}/{b['unanswerable']}",
          f"{b['false_gaps']}/{b['answerable']}", b["support_recall"]]
         for r in results for kind, b in r["by_kind"].items()])
    text = "\n".join([
        header(f"The local model as a gap judge, staff questions ({args.split})"
               if args.split != "dev" else "The local model as a gap judge, handbook dev "
               "questions", {
                   "date": now(), "project commit": project_commit(),
                   "model": args.model, "questions": f"{len(answerable)} answerable, "
                   f"{len(unanswerable)} unanswerable",
                   "first call (litellm import + model load)": f"{load_seconds:.1f} s",
                   "p50 ask in process (picker, no judge)":
                       f"{1000 * percentile([r['ask_seconds'] for r in rows], 50):.0f} ms",
                   "method": "evals/ask_judge.py docstring; one judge call per question, "
                             "no response cache"}),
        "", table, "",
        "Best rule of each kind:" if args.split == "tune" else
        "The picker's rule alone and with the judge (chosen on tune):", "", kinds])
    # the whole rule sweep is recomputed by a run, not committed (the best of each kind is)
    write(Path(args.out), f"ask-judge-{args.split}", text,
          {"results": [{k: v for k, v in r.items() if k != "rules"} for r in results],
           "rows": rows, "load_seconds": load_seconds})
    (CACHE_DIR / f"ask-judge-{args.split}-rows.json").write_text(
        json.dumps({"rows": rows, "results": results}), encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
