"""Choosing the answer picker's defaults and its gap rule on the staff *tune* half.

Each picker variant (a :class:`wiki.answering.sentence_scoring.PickerConfig`) is asked every
question of the half once with its gaps turned off (``retrieval_gap=False``,
``gap_score=None``, ``form_gap=False``), through :func:`evals.answers.run_variant`, so
each question's answer, **answer score** (:func:`wiki.answering.sentence_scoring.answer_score`),
missing form and the retrieval rule's verdict are known. Gap rules are then applied to
those rows offline (a gap does not change which sentences are picked, so this is exact):
the answer-type check (percent / money, always on as in the product), optionally the
retrieval rule (``coverage < 0.54 and cosine < 0.45``), optionally ``answer score < t``
over a grid of ``t``, optionally the missing form. A gapped answerable question counts 0
support recall. Reported per variant: support recall without gaps and with the chosen
rule, top-score AUROC of the answer score (answerable vs unanswerable,
:func:`evals.metrics.auroc`), and the best rule under the issue's bound (false gaps ≤ 3 %
of the answerable questions).

    python -m evals.picker_tune [--split tune] [--out evals/results]

Tune only on ``tune``; ``--split test`` re-applies the rules chosen on tune to the test
half (no choice is made on it) and writes ``picker-test.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import asdict, replace
from pathlib import Path

from evals import embedcache
from evals.answers import Variant, run_variant
from evals.datasets import cached_handbook, data_dir
from evals.metrics import auroc
from evals.report import header, md_table, now, project_commit, write
from wiki.answering.sentence_scoring import PickerConfig

OFF = {"retrieval_gap": False, "gap_score": None, "form_gap": False}
BASE = PickerConfig(**OFF)
GRID: list[tuple[str, PickerConfig]] = [
    ("best", replace(BASE, score_by="best")),
    ("lex-0.5", replace(BASE, lexical=0.5)),
    ("lex-0.25", replace(BASE, lexical=0.25)),
    ("lex-0.1", replace(BASE, lexical=0.1)),
    ("lex-0", replace(BASE, lexical=0.0)),
    ("lex-0.25-form-0.3", replace(BASE, lexical=0.25, form=0.3)),
    ("lex-0.25-floor-0.6", replace(BASE, lexical=0.25, floor=0.6)),
    ("lex-0.25-floor-0.4", replace(BASE, lexical=0.25, floor=0.4)),
    ("lex-0.25-discount-0.25", replace(BASE, lexical=0.25, rank_discount=0.25)),
    ("lex-0.25-discount-1", replace(BASE, lexical=0.25, rank_discount=1.0)),
    ("lex-0.25-fragment-1", replace(BASE, lexical=0.25, fragment_weight=1.0)),
    ("lex-0.25-places-4", replace(BASE, lexical=0.25, entry_places=4)),
    ("bm25-only", replace(BASE, lexical=1.0, cosine=0.0, form=0.0, fragment_weight=1.0,
                          floor=0.4)),
    ("default", BASE),
    ("no-form", replace(BASE, form=0.0)),
    ("no-cosine", replace(BASE, cosine=0.0)),
    ("form-0.3", replace(BASE, form=0.3)),
    ("form-0.05", replace(BASE, form=0.05)),
    ("lex-1.0", replace(BASE, lexical=1.0)),
    ("floor-0.4", replace(BASE, floor=0.4)),
    ("floor-0.6", replace(BASE, floor=0.6)),
    ("fragment-1.0", replace(BASE, fragment_weight=1.0)),
    ("fragment-0.4", replace(BASE, fragment_weight=0.4)),
    ("discount-0", replace(BASE, rank_discount=0.0)),
    ("discount-1", replace(BASE, rank_discount=1.0)),
    ("places-4", replace(BASE, entry_places=4)),
    ("sentences-3", replace(BASE, max_sentences=3)),
    ("sentences-5", replace(BASE, max_sentences=5)),
    ("anaphor-none", replace(BASE, anaphor="none")),
    ("anaphor-penalty-0.7", replace(BASE, anaphor="penalty")),
    ("anaphor-penalty-0.5", replace(BASE, anaphor="penalty", anaphor_weight=0.5)),
    ("anaphor-context", replace(BASE, anaphor="context")),
    ("anaphor-relevant-context-0.5", replace(BASE, anaphor_weight=0.5)),
    ("row-key-0.5", replace(BASE, row_weight=0.5)),
    ("row-key-0.3", replace(BASE, row_weight=0.3)),
]
THRESHOLDS = [round(0.30 + 0.02 * i, 2) for i in range(50)]
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
"""``score_coverage`` values tried: answer score = best sentence cosine + w × coverage."""
FALSE_GAP_BOUND = 0.03


def answer_score(row: dict, weight: float) -> float:
    """The answer score of one row for ``score_coverage = weight``."""
    return (row["cosine"] or 0.0) + weight * (row["coverage"] or 0.0)


def rules(rows: list[dict]) -> list[dict]:
    """Every gap rule applied to one variant's rows: ``(retrieval, weight, threshold,
    form)``."""
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    out = []
    for retrieval in (False, True):
        for weight in WEIGHTS:
            for threshold in [None, *THRESHOLDS]:
                for form in (False, True):
                    def gap(r, retrieval=retrieval, weight=weight, threshold=threshold,
                            form=form) -> bool:
                        return bool(r["gap"] or (retrieval and r["retrieval_gap"])
                                    or (threshold is not None
                                        and answer_score(r, weight) < threshold)
                                    or (form and r["form_missing"]))
                    out.append({"retrieval": retrieval, "weight": weight,
                                "threshold": threshold, "form": form,
                                "gaps": sum(gap(r) for r in unanswerable),
                                "unanswerable": len(unanswerable),
                                "false_gaps": sum(gap(r) for r in answerable),
                                "answerable": len(answerable),
                                "support_recall": statistics.mean(
                                    0.0 if gap(r) else r["recall"] for r in answerable)})
    return out


def best_rule(found: list[dict]) -> dict:
    """The rule with the most gaps on unanswerable questions under the false-gap bound
    (ties: higher support recall, then the simpler rule)."""
    allowed = [r for r in found if r["false_gaps"] <= FALSE_GAP_BOUND * r["answerable"]]
    return max(allowed, key=lambda r: (r["gaps"], r["support_recall"], not r["retrieval"],
                                       not r["form"], -(r["threshold"] or 0)))


def score_auroc(rows: list[dict], weight: float) -> float:
    """AUROC of the answer score, answerable (positive) vs unanswerable."""
    pos = [answer_score(r, weight) for r in rows if r["answerable"]]
    neg = [answer_score(r, weight) for r in rows if not r["answerable"]]
    return auroc(pos, neg)


def main() -> None:
    """Run the grid on ``--split``; write picker-<split>.md / .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--split", choices=("tune", "test"), default="tune")
    parser.add_argument("--only", nargs="*", default=None, help="variant names to run")
    args = parser.parse_args()
    path, _ = cached_handbook(data_dir(args.data))
    from evals.staff_questions import records
    from wiki.store.workspace import Wiki

    wiki = Wiki(path)
    embedcache.seed_wiki(wiki)
    rows = records(args.split)
    answerable = [r for r in rows if r["support"]]
    unanswerable = [r for r in rows if not r["support"]]
    grid = [(n, c) for n, c in GRID if args.only is None or n in args.only]
    results = []
    for name, config in grid:
        run = run_variant(wiki, Variant(name, "", config), answerable, unanswerable)
        found = rules(run["rows"])
        chosen = best_rule(found)
        results.append({"variant": name, "config": asdict(config),
                        "support_recall": run["support_recall"], "p50_ms": run["p50_ms"],
                        "auroc": {w: score_auroc(run["rows"], w) for w in WEIGHTS},
                        "best_rule": chosen,
                        "rules": found, "rows": run["rows"]})
        print(f"{name}: recall {run['support_recall']:.3f} auroc "
              f"{json.dumps(results[-1]['auroc'])} rule {json.dumps(chosen)}", flush=True)
    table = md_table(
        ["variant", "support recall (no gaps)", "AUROC answer score (w = 0 / 0.5 / 1)",
         "best rule (≤ 3 % false)",
         "gaps", "false gaps", "support recall with the rule", "p50 ask ms"],
        [[r["variant"], r["support_recall"],
          " / ".join(f"{r['auroc'][w]:.3f}" for w in (0.0, 0.5, 1.0)),
          f"retrieval {'on' if r['best_rule']['retrieval'] else 'off'}, cosine + "
          f"{r['best_rule']['weight']} × coverage < {r['best_rule']['threshold']}, form "
          f"{'on' if r['best_rule']['form'] else 'off'}",
          f"{r['best_rule']['gaps']}/{r['best_rule']['unanswerable']}",
          f"{r['best_rule']['false_gaps']}/{r['best_rule']['answerable']}",
          r["best_rule"]["support_recall"], f"{r['p50_ms']:.0f}"] for r in results])
    text = "\n".join([header(f"Answer picker variants, staff questions ({args.split} half)", {
        "date": now(), "project commit": project_commit(),
        "questions": f"{len(answerable)} answerable, {len(unanswerable)} unanswerable",
        "method": "each variant asked once with gaps off; gap rules applied offline "
                  "(evals/picker_tune.py docstring)"}), "", table])
    # the summary per variant; the per-question rows and the whole rule sweep (11 MB for
    # the tune grid) are recomputed by a run, not committed
    summary = [{k: v for k, v in r.items() if k not in ("rules", "rows")} for r in results]
    write(Path(args.out), f"picker-{args.split}", text, {"variants": summary})
    print(text)


if __name__ == "__main__":
    main()
