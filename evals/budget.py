"""Token budgets on the handbook dev questions: ``wiki ask --budget N`` vs whole entries.

    python -m evals.budget [--budget 400] [--data DIR] [--repo PATH]

For each answerable dev question: the unbudgeted evidence is the whole text of the top 5
search hits (what an agent reads without a budget); the budgeted evidence is what
``wiki.answering.ask.ask(..., budget=N)`` returns. Both are mapped to source pages and scored with
recall@5 against the gold pages; the tokens of both are counted with the same counter
(the embedding model's tokenizer, :mod:`indexes.retrieval.tokens`). Writes
``evals/results/budget.md`` / ``.json``.

The handbook wiki is a private copy (``--repo``, default: the newest complete handbook
build under ``evals/.cache``, copied to a temporary folder), so this code's schema
migration never touches a cache other checkouts share.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from evals import datasets
from evals.metrics import dedupe_units, recall_at
from evals.report import header, md_table, now, project_commit, write
from evals.run import log, page_units


def _private_copy(folder: Path) -> Path:
    done = sorted((p for p in datasets.CACHE_DIR.glob(f"handbook-{datasets.CHECKPOINT[:12]}-*")
                   if (p / datasets.DONE).exists()),
                  key=lambda p: (p / datasets.DONE).stat().st_mtime)
    if not done:
        raise SystemExit("no handbook build in evals/.cache; run `python -m evals.run "
                         "--dataset handbook` first")
    target = folder / "handbook"
    shutil.copytree(done[-1], target, symlinks=True)
    return target


def run(data: Path, budget: int, repo: Path | None, out: Path) -> str:
    from indexes.retrieval.tokens import counter
    from wiki.answering.ask import ask_for
    from wiki.answering.budget import MAX_ENTRIES, citation_line
    from wiki.answering.embedding import model_name
    from wiki.answering.search import search_for
    from wiki.store.derived import open_synced
    from wiki.store.markdown_text import plain_text
    from wiki.store.workspace import Wiki

    answerable, _ = datasets.handbook_questions(data)
    with tempfile.TemporaryDirectory(prefix="wiki-budget-") as folder:
        wiki = Wiki(repo or _private_copy(Path(folder)))
        index = open_synced(wiki).index
        units = page_units(index)
        snapshot = wiki.snapshot()
        count = counter(model_name())
        rows = []
        for q in answerable:
            gold = set(q.gold)
            hits = search_for(wiki, q.question, limit=10, index=index).hits[:MAX_ENTRIES]
            whole = sum(count.count(f"{e.title}\n{plain_text(e.body)}") + 1
                        + count.count(citation_line(n, e)) + 1
                        for n, e in enumerate((snapshot.entry(h.key) for h in hits), 1))
            answer = ask_for(wiki, q.question, budget=budget)
            cited = [c.path for c in answer.citations]
            rows.append({"id": q.id, "full": recall_at(dedupe_units(
                [h.key for h in hits], units), gold, 5),
                "budgeted": recall_at(dedupe_units(cited, units), gold, 5),
                "whole": whole, "used": answer.tokens["used"] if answer.tokens else 0,
                "gap": answer.gap})
            rows[-1]["search"] = rows[-1]["full"]  # the search's top 5, gap rule ignored
            if answer.gap:  # the gap decision does not depend on the budget: no evidence
                rows[-1]["full"] = 0.0
                rows[-1]["whole"] = 0
        index.close()
    mean = {k: statistics.fmean(r[k] for r in rows) for k in ("full", "budgeted", "whole",
                                                              "used", "search")}
    saved = 1 - sum(r["used"] for r in rows) / sum(r["whole"] for r in rows)
    facts = {"date": now(), "project commit": project_commit(),
             "questions": f"{len(rows)} answerable handbook dev questions",
             "tokens": f"counted with {count.name}", "budget": str(budget)}
    table = md_table(
        ["evidence", "recall@5 (pages)", "mean tokens", "median tokens"],
        [["search top 5, gap rule ignored (reference)", mean["search"], "", ""],
         ["ask, whole top-5 entries (no budget)", mean["full"], f"{mean['whole']:.0f}",
          f"{statistics.median(r['whole'] for r in rows):.0f}"],
         [f"ask --budget {budget}", mean["budgeted"], f"{mean['used']:.0f}",
          f"{statistics.median(r['used'] for r in rows):.0f}"]])
    worse = [r["id"] for r in rows if r["budgeted"] < r["full"]]
    text = "\n".join([
        header(f"Token budgets: ask --budget {budget} on the handbook dev questions", facts),
        "", table, "",
        f"recall@5 difference: {mean['budgeted'] - mean['full']:+.3f} (target: within 0.02); "
        f"tokens saved: {saved:.1%} of the whole-entry context "
        f"({sum(r['whole'] - r['used'] for r in rows)} tokens over {len(rows)} questions); "
        f"gaps: {sum(r['gap'] for r in rows)}; questions with lower recall: "
        f"{', '.join(worse) or 'none'}.", "",
        "Whole entries = title and plain text of the top 5 hits plus one citation line each "
        "(none when ask reports an evidence gap, which it does with or without a budget); "
        "budgeted = the sentences and citation lines `ask --budget` returns, as rendered. "
        "recall@5 maps entries to their source pages (an entry split from a page counts "
        "for that page)."])
    write(out, "budget", text, {"dataset": "handbook", **facts, "mean": mean,
                                "saved": saved, "rows": rows})
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=400)
    parser.add_argument("--data")
    parser.add_argument("--repo", type=Path)
    parser.add_argument("--out", type=Path, default=datasets.REPO_ROOT / "evals" / "results")
    args = parser.parse_args()
    log(run(datasets.data_dir(args.data), args.budget, args.repo, args.out))
