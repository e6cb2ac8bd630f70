"""How-to answers with and without the discount of sentences about a failure (issue 28.6).

``wiki ask "how do I send a test page?"`` opened with "If a test page fails to arrive, ...
troubleshoot ..." on a runbook; :attr:`wiki.answering.sentence_scoring.PickerConfig.failure_weight`
(0.7, set by hand) now discounts such a sentence for a how-to question that is not itself
about a failure. This asks every staff question (both halves: nothing is chosen on them
here) whose form is ``howto`` with the product's picker and with ``failure_weight=1.0``
(the picker before), and reports support recall, quotes held, gaps and the questions whose
answers differ. Other forms are scored alike by construction
(tests/test_answer_openings.py).

    python -m evals.howto_failures [--repo DIR] [--out evals/results]

``--repo``: an already built handbook wiki (default: :func:`evals.datasets.cached_handbook`).
Writes ``howto-failures.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from evals.answers import Variant, run_variant
from evals.report import header, md_table, now, project_commit, write


def main(argv: list[str] | None = None) -> int:
    """Ask the how-to staff questions with both pickers; write the results files."""
    from evals import embedcache
    from evals.datasets import cached_handbook, data_dir
    from evals.staff_questions import records
    from wiki.answering.picker import DEFAULT
    from wiki.answering.sentence_scoring import question_form
    from wiki.store.workspace import Wiki

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=None)
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).resolve().parent / "results")
    args = parser.parse_args(argv)
    path = args.repo or cached_handbook(data_dir(args.data))[0]
    wiki = Wiki(path)
    embedcache.seed_wiki(wiki)
    rows = [r for r in records("all") if question_form(r["question"]) == "howto"]
    answerable = [r for r in rows if r["support"]]
    unanswerable = [r for r in rows if not r["support"]]
    variants = [Variant("product", f"failure_weight {DEFAULT.failure_weight}", DEFAULT),
                Variant("before", "failure_weight 1.0: off",
                        replace(DEFAULT, failure_weight=1.0))]
    results = [run_variant(wiki, v, answerable, unanswerable) for v in variants]
    differ = [{"id": new["id"], "product": new["answer"], "before": old["answer"],
               "recall": [new["recall"], old["recall"]]}
              for new, old in zip(results[0]["rows"], results[1]["rows"], strict=True)
              if new["answer"] != old["answer"]]
    table = md_table(
        ["picker", "support recall", "≥1 quote held", "false gaps", "gaps (unanswerable)"],
        [[f"{r['variant']} ({r['what']})", r["support_recall"],
          f"{r['covered']}/{r['answerable']}", f"{r['false_gaps']}/{r['answerable']}",
          f"{r['gaps']}/{r['unanswerable']}"] for r in results])
    text = "\n".join([
        header("How-to answers and sentences about a failure (staff questions, both halves)",
               {"date": now(), "project commit": project_commit(),
                "questions": f"{len(answerable)} answerable and {len(unanswerable)} "
                             "unanswerable staff questions whose form is how-to",
                "retrieval": "default legs, all-MiniLM-L6-v2; no LLM, no revalidation"}),
        "", table, "",
        f"Answers that differ: {len(differ)}" + "".join(
            f"\n- {d['id']}: " + ("the same opening sentence, later ones differ"
                                  if d["product"][:1] == d["before"][:1] else
                                  f"opens with {d['product'][:1]} (before: {d['before'][:1]})")
            for d in differ)])
    for result in results:
        for row in result["rows"]:
            row.pop("answer")
    write(args.out, "howto-failures", text, {"variants": results, "differ": differ})
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
