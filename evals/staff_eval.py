"""Baseline of ``wiki ask`` and retrieval on the staff-written handbook questions, per half.

For each half of ``evals/questions/handbook-staff.jsonl`` (:mod:`evals.staff_questions`;
``tune`` is for choosing defaults, ``test`` is what gets reported), over the wiki built at
the checkpoint (:func:`evals.datasets.cached_handbook`):

* **answers** (:func:`evals.answers.run_variant` with the product's picker, the same
  definitions as ``answers.md``): support recall, questions with ≥ 1 quote held, gold
  cited, false gaps on answerable, gaps on unanswerable (retrieval rule or answer type,
  whatever ``wiki.answering.ask.ask`` decides), p50 of ``ask`` in process;
* **retrieval** (the ``hybrid`` method of :mod:`evals.methods`, the product's legs and
  fusion, 30 entries deduplicated to pages as in ``handbook.md``): recall@10 and hit@3
  of the gold pages; the abstention features of :mod:`evals.abstain` per question;
* **top-score AUROC** answerable vs unanswerable (:func:`evals.metrics.auroc`) of the
  product's confidence (coverage of the BM25 leg's first hit), the best cosine, and the
  fused score of the first hit; and the gap counts of the current retrieval rule alone
  (``coverage < 0.54 and cosine < 0.45``).

Writes ``staff-questions.md`` / ``.json`` (both halves side by side) and caches the
per-question features in ``evals/.cache/staff-features.json`` for
:mod:`evals.gap_calibration`.

    python -m evals.staff_eval [--data DIR] [--out evals/results] [--split tune|test|all]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from pathlib import Path

from evals import embedcache
from evals.abstain import features
from evals.datasets import CACHE_DIR, cached_handbook, data_dir
from evals.metrics import auroc, dedupe_units, hit_at, recall_at
from evals.report import header, md_table, now, project_commit, write
from evals.staff_questions import PATH, records

FEATURES_CACHE = CACHE_DIR / "staff-features.json"
LIMIT = 30
SCORES = ("coverage", "top_cos", "fused")


def retrieval(wiki, rows: list[dict]) -> list[dict]:
    """Per question: gold page ranks, recall@10, hit@3 and the abstention features."""
    from evals.methods import METHODS, Target
    from evals.run import page_units
    from indexes.retrieval.hybrid import FusionConfig
    from indexes.sqlite.engine import Filters
    from wiki.answering.search import is_gap
    from wiki.config import SearchConfig
    from wiki.store.derived import open_synced

    index = open_synced(wiki).index
    embedcache.embed_index(index)
    units_of = page_units(index)
    retrieve = METHODS["hybrid"](Target("handbook", index, wiki, filters=Filters(),
                                        fusion=FusionConfig()))
    config = SearchConfig()
    out = []
    for r in rows:
        result = retrieve(r["question"], LIMIT)
        pages = dedupe_units(result.keys, units_of)
        feats = features(result)
        gold = set(r["gold"])
        out.append({"id": r["id"], "split": r["split"], "style": r["style"],
                    "answerable": bool(gold), "features": feats,
                    "rule_gap": is_gap(bool(result.keys), feats["bm25_coverage"],
                                       feats["top_cos"], config.gap_threshold,
                                       config.gap_coverage, config.gap_cosine),
                    "recall@10": recall_at(pages, gold, 10) if gold else None,
                    "hit@3": hit_at(pages, gold, 3) if gold else None,
                    "top_pages": pages[:3]})
    index.close()
    return out


def summary(answers: dict, found: list[dict]) -> dict:
    """One half's numbers."""
    asked = [f for f in found if f["answerable"]]
    unans = [f for f in found if not f["answerable"]]
    row = {"answerable": answers["answerable"], "unanswerable": answers["unanswerable"],
           "support_recall": answers["support_recall"], "covered": answers["covered"],
           "gold_cited": answers["gold_cited"], "false_gaps": answers["false_gaps"],
           "gaps": answers["gaps"], "p50_ms": answers["p50_ms"],
           "recall@10": statistics.mean(f["recall@10"] for f in asked),
           "hit@3": statistics.mean(f["hit@3"] for f in asked),
           "rule_gaps": sum(f["rule_gap"] for f in unans),
           "rule_false_gaps": sum(f["rule_gap"] for f in asked)}
    for score in SCORES:
        row[f"auroc_{score}"] = auroc([f["features"][score] for f in asked],
                                      [f["features"][score] for f in unans])
    scores = {r["id"]: r["score"] or 0.0 for r in answers["rows"]}
    row["auroc_answer"] = auroc([scores[f["id"]] for f in asked],
                                [scores[f["id"]] for f in unans])
    styles = sorted({f["style"] for f in asked})
    row["by_style"] = {}
    by_id = {r["id"]: r for r in answers["rows"]}
    for style in styles:
        group = [by_id[f["id"]] for f in asked if f["style"] == style]
        row["by_style"][style] = {"n": len(group),
                                  "support_recall": statistics.mean(g["recall"] for g in group),
                                  "false_gaps": sum(g["gap"] for g in group)}
    return row


def run_half(wiki, split: str) -> tuple[dict, list[dict], dict]:
    """``(summary, retrieval rows, answer rows)`` of one half."""
    from evals.answers import VARIANTS, product_variant, run_variant

    rows = records(split)
    answerable = [r for r in rows if r["support"]]
    unanswerable = [r for r in rows if not r["support"]]
    variant = {v.name: v for v in VARIANTS}[product_variant()]
    answers = run_variant(wiki, variant, answerable, unanswerable)
    found = retrieval(wiki, rows)
    scores = {r["id"]: r["score"] or 0.0 for r in answers["rows"]}
    for f in found:  # the picker's answer score, for evals.gap_calibration
        f["features"]["answer_score"] = scores[f["id"]]
    return summary(answers, found), found, answers


COLUMNS = [("support_recall", "support recall of the extractive answer"),
           ("covered", "answerable with ≥ 1 support quote held"),
           ("gold_cited", "answers citing a gold page"),
           ("gaps", "unanswerable answered as a gap (`wiki ask`)"),
           ("false_gaps", "answerable wrongly refused (`wiki ask`)"),
           ("rule_gaps", "unanswerable: gap by the retrieval rule alone"),
           ("rule_false_gaps", "answerable: false gap by the retrieval rule alone"),
           ("auroc_answer", "top-score AUROC, the picker's answer score (the product's "
                            "gap score)"),
           ("auroc_coverage", "top-score AUROC, coverage (the retrieval confidence)"),
           ("auroc_top_cos", "top-score AUROC, best cosine"),
           ("auroc_fused", "top-score AUROC, fused score of the first hit"),
           ("recall@10", "retrieval recall@10 (gold pages)"),
           ("hit@3", "retrieval hit@3"),
           ("p50_ms", "p50 `ask` in process, ms")]


def cell(result: dict, key: str) -> str:
    value = result[key]
    if key in ("covered", "gold_cited", "false_gaps", "rule_false_gaps"):
        return f"{value}/{result['answerable']} ({value / result['answerable']:.1%})"
    if key in ("gaps", "rule_gaps"):
        return f"{value}/{result['unanswerable']} ({value / result['unanswerable']:.1%})"
    if key == "p50_ms":
        return f"{value:.0f}"
    return f"{value:.3f}"


def rate(result: dict, key: str) -> float:
    """A column as a number comparable across halves (counts as shares)."""
    value = result[key]
    if key in ("covered", "gold_cited", "false_gaps", "rule_false_gaps"):
        return value / result["answerable"]
    if key in ("gaps", "rule_gaps"):
        return value / result["unanswerable"]
    return value


TARGETS = [("support_recall", "support recall ≥ 0.60", lambda v: v >= 0.60),
           ("gaps", "gaps on ≥ 85 % of unanswerable", lambda v: v >= 0.85),
           ("false_gaps", "false gaps ≤ 3 %", lambda v: v <= 0.03),
           ("auroc_answer", "top-score AUROC ≥ 0.90", lambda v: v >= 0.90)]
"""Issue 16's "done when", judged on the test half; and the halves within 0.05."""


RESPLITS = 2000
"""Random re-splits behind :func:`split_noise`."""


def _metric(key: str, answerable: list[dict], unanswerable: list[dict]) -> float:
    """One target's value over per-question answer rows (``recall``, ``gap``, ``score``)."""
    if key == "support_recall":
        return statistics.mean(r["recall"] for r in answerable)
    if key == "gaps":
        return statistics.mean(bool(r["gap"]) for r in unanswerable)
    if key == "false_gaps":
        return statistics.mean(bool(r["gap"]) for r in answerable)
    return auroc([r["score"] or 0.0 for r in answerable],
                 [r["score"] or 0.0 for r in unanswerable])


def split_noise(rows: dict[str, list[dict]], key: str, *, seed: int = 16) -> float:
    """The 95th percentile of ``|tune - test|`` for target ``key`` when the same questions
    (both halves' per-question rows, answerable and unanswerable re-split separately at
    the halves' sizes) are split at random :data:`RESPLITS` times: how far apart two halves
    of this size land by chance alone, with nothing tuned. Uses the test half's rows only
    for this spread, never to choose anything."""
    groups = {flag: {h: [r for r in rows[h] if r["answerable"] is flag] for h in rows}
              for flag in (True, False)}
    pools = {flag: [r for h in rows for r in groups[flag][h]] for flag in groups}
    sizes = {flag: len(groups[flag]["tune"]) for flag in groups}
    generator, spread = random.Random(seed), []
    for _ in range(RESPLITS):
        halves = {}
        for flag, pool in pools.items():
            shuffled = generator.sample(pool, len(pool))
            halves[flag] = (shuffled[:sizes[flag]], shuffled[sizes[flag]:])
        spread.append(abs(_metric(key, halves[True][0], halves[False][0])
                          - _metric(key, halves[True][1], halves[False][1])))
    return sorted(spread)[int(0.95 * RESPLITS)]


def targets(results: dict[str, dict], rows: dict[str, list[dict]] | None = None) -> str:
    """Each target of issue 16 on the test half, met or not, and whether the test half is
    within 0.05 of the tune half (a table that says so when a target is missed); with the
    per-question ``rows`` of both halves, also :func:`split_noise` of each target."""
    table = []
    for key, what, holds in TARGETS:
        test = rate(results["test"], key)
        gap = test - rate(results["tune"], key)
        table.append([what, cell(results["test"], key), "met" if holds(test) else "NOT met",
                      f"{gap:+.3f}", "yes" if abs(gap) <= 0.05 else "NO",
                      *([f"{split_noise(rows, key):.3f}"] if rows else [])])
    return md_table(["target (issue 16)", "test half", "target", "test − tune",
                     "within 0.05", *(["random-split 95 %"] if rows else [])], table)


def markdown(results: dict[str, dict], rows: dict[str, list[dict]] | None = None) -> str:
    """The metrics table (with ``test - tune`` when both halves ran; the issue asks for
    the halves within 0.05) and support recall by style; ``rows`` (per-question answer rows
    of both halves) adds the random-split spread of each target."""
    halves = list(results)
    both = set(halves) == {"tune", "test"}
    table = md_table(
        ["metric", *halves, *(["test − tune"] if both else [])],
        [[what, *(cell(results[h], key) for h in halves),
          *([f"{rate(results['test'], key) - rate(results['tune'], key):+.3f}"
             if key != "p50_ms" else ""] if both else [])]
         for key, what in COLUMNS])
    styles = sorted({s for h in halves for s in results[h]["by_style"]})
    per_style = md_table(
        ["style", *(f"{h}: n / support recall / false gaps" for h in halves)],
        [[s, *(("{n} / {support_recall:.3f} / {false_gaps}".format(**results[h]["by_style"][s])
                if s in results[h]["by_style"] else "") for h in halves)] for s in styles])
    parts = [table, "", "Support recall by answer style:", "", per_style]
    if both:
        parts += ["", "Against issue 16's targets (judged on the test half):", "",
                  targets(results, rows)]
        if rows:
            parts += ["", "random-split 95 %: the 95th percentile of |tune − test| when the "
                      f"same questions are split at random into halves of these sizes "
                      f"({RESPLITS} times, nothing tuned): a difference below it is within "
                      "what the split alone gives; one above it is the defaults fitting "
                      "the tune half."]
    return "\n".join(parts)


def main() -> None:
    """Run the halves; write staff-questions.md/json and the feature cache."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--split", choices=("tune", "test", "all"), default="all")
    args = parser.parse_args()
    path, _ = cached_handbook(data_dir(args.data))
    from wiki.store.workspace import Wiki

    wiki = Wiki(path)
    embedcache.seed_wiki(wiki)
    halves = ("tune", "test") if args.split == "all" else (args.split,)
    results, cache, per_question = {}, {}, {}
    for half in halves:
        results[half], found, answers = run_half(wiki, half)
        cache[half] = found
        per_question[half] = [{**r, "answer": r.get("answer")} for r in answers["rows"]]
    FEATURES_CACHE.parent.mkdir(parents=True, exist_ok=True)
    FEATURES_CACHE.write_text(json.dumps(cache), encoding="utf-8")
    counts = {h: f"{results[h]['answerable']} answerable + {results[h]['unanswerable']} "
                 "unanswerable" for h in halves}
    text = "\n".join([
        header("Staff-written handbook questions: the product per half",
               {"date": now(), "project commit": project_commit(),
                "questions": f"{PATH.name}: " + "; ".join(f"{h} {c}" for h, c in
                                                          counts.items()),
                "rules": "tune on `tune` only; `test` is the reported number",
                "ask": "wiki.answering.ask.ask, product picker, default legs (MiniLM), no LLM, no "
                       "revalidation; definitions as answers.md / ask-gaps.md",
                "retrieval": f"hybrid (evals.methods), {LIMIT} entries → pages"}),
        "", markdown(results, per_question if len(halves) == 2 else None)])
    write(Path(args.out), "staff-questions", text,
          {"results": results, "retrieval": cache, "answers": per_question})
    print(text)


if __name__ == "__main__":
    main()
