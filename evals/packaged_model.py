"""The int8 packaged model against the float model on SciFact's train split (the tuning
split: the int8 model is the default only where the float weights are not installed, and
nothing was tuned for it).

    python -m evals.packaged_model [--int8-results DIR] [--out evals/results]

Runs ``python -m evals.run --dataset scifact --split train --method vector --method
hybrid`` with ``EVAL_EMBED_MODEL=all-MiniLM-L6-v2-int8`` into a temporary folder (or reads
``DIR/scifact.json`` from such a run), and sets its train rows beside the float model's in
``<out>/scifact.json`` (written by ``make eval``). Writes ``<out>/packaged-model.md`` and
``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evals.datasets import REPO_ROOT
from evals.report import header, md_table, now, project_commit, write

MODEL = "all-MiniLM-L6-v2-int8"
METHODS = ("vector", "hybrid")
COLUMNS = ("recall@10", "mrr@10", "ndcg@10")


def _int8_run(folder: Path) -> dict:
    """The train rows of a SciFact run with the int8 model, written to ``folder``."""
    env = {**os.environ, "EVAL_EMBED_MODEL": MODEL}
    cmd = [sys.executable, "-m", "evals.run", "--dataset", "scifact", "--split", "train",
           *(a for m in METHODS for a in ("--method", m)), "--out", str(folder)]
    subprocess.run(cmd, cwd=REPO_ROOT, env=env, check=True)
    return json.loads((folder / "scifact.json").read_text())


def main(argv: list[str] | None = None) -> int:
    """Write the comparison; exit 0."""
    parser = argparse.ArgumentParser(prog="python -m evals.packaged_model",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--int8-results", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "evals" / "results")
    args = parser.parse_args(argv)
    float_run = json.loads((args.out / "scifact.json").read_text())
    if args.int8_results:
        int8_run = json.loads((args.int8_results / "scifact.json").read_text())
    else:
        with tempfile.TemporaryDirectory() as folder:
            int8_run = _int8_run(Path(folder))
    rows, payload = [], {}
    for method in METHODS:
        base = float_run["results"]["train"][method]
        new = int8_run["results"]["train"][method]
        payload[method] = {"float": {c: base[c] for c in COLUMNS},
                           MODEL: {c: new[c] for c in COLUMNS},
                           "difference": {c: round(new[c] - base[c], 4) for c in COLUMNS}}
        rows.append([method, "all-MiniLM-L6-v2 (float)", *(base[c] for c in COLUMNS)])
        rows.append([method, MODEL, *(new[c] for c in COLUMNS)])
    facts = {"date": now(), "project commit": project_commit(),
             "split": "SciFact train (809 queries; the tuning split, not the test)",
             "float run": f"{float_run['date']} at {float_run['project commit']}",
             "int8 run": f"{int8_run['date']} at {int8_run['project commit']}"}
    diff = "; ".join(f"{m} nDCG@10 {payload[m]['difference']['ndcg@10']:+.3f}" for m in METHODS)
    markdown = "\n\n".join([
        header("The int8 packaged model against the float model", facts),
        md_table(["method", "model", *COLUMNS], rows),
        f"Difference (int8 minus float): {diff}. The int8 model is the default only where "
        "the float weights are not installed (docs/decisions.md, issue 28 item 1)."])
    write(args.out, "packaged-model", markdown, {**facts, "results": payload})
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
