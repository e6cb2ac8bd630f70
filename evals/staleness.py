"""Staleness benchmark: does ``wiki lint`` flag exactly the entries whose sources changed?

Build the wiki from the handbook's ``pages/`` at a start commit, move the source work tree
to an end commit (the wiki branch stays), run the stale/missing/renamed rules (W001, W002,
W011: a renamed page is a deleted one from the entry's point of view) and
score their flags per entry against the truth computed from git: an entry is positive when
its source page was deleted or its *body* text changed (frontmatter and whitespace
ignored; computed here from the raw blobs, independently of ``wiki.adapters.sources``).

    python -m evals.staleness [--data DIR] [--out evals/results]

Windows: the dev checkpoint -> the bundle's HEAD (the issue's main measure), and the older
checkpoint a494847df3bb -> the dev checkpoint, which holds many frontmatter-only edits
(e.g. `cSpell`, `keywords`) that must not be flagged.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
import time
from pathlib import Path

from evals.datasets import CHECKPOINT, build_handbook, data_dir, git_head

OLD_CHECKPOINT = "a494847df3bb"
_FRONTMATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?\r?\n---[ \t]*(\r?\n|\Z)", re.DOTALL)


def _body(text: str | None) -> str | None:
    if text is None:
        return None
    return " ".join(_FRONTMATTER.sub("", text, count=1).split())


def _blob(repo: Path, commit: str, path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                          capture_output=True)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def run_window(data: Path, start: str, end: str) -> dict:
    """Build at ``start``, move pages to ``end``, lint, and score per entry."""
    from wiki.lint import run_lint
    from wiki.store.workspace import Wiki

    with tempfile.TemporaryDirectory(prefix="wiki-stale-") as folder:
        repo = Path(folder) / "handbook"
        build_handbook(data, repo, checkpoint=start)
        end_sha = subprocess.run(["git", "-C", str(repo), "rev-parse", end],
                                 capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "-C", str(repo), "-c", "advice.detachedHead=false",
                        "checkout", "-q", end_sha], check=True)
        wiki = Wiki(repo)
        started = time.perf_counter()
        report = run_lint(wiki, select={"W001", "W002", "W011"})
        seconds = time.perf_counter() - started
        flagged = {f.path for f in report.findings}
        entries, _ = wiki.snapshot().entries()
        truth: dict[str, bool] = {}
        kinds = {"deleted": 0, "body": 0, "frontmatter-only": 0, "unchanged": 0}
        pages: dict[str, str] = {}
        for entry in entries:
            uri = entry.sources[0].uri if entry.sources else ""
            if not uri.startswith("git:"):
                continue
            page = uri[4:]
            if page not in pages:
                before, after = _blob(repo, start, page), _blob(repo, end_sha, page)
                pages[page] = ("deleted" if after is None else "body" if
                               _body(before) != _body(after) else "frontmatter-only"
                               if before != after else "unchanged")
                kinds[pages[page]] += 1
            truth[entry.path] = pages[page] in ("deleted", "body")
        tp = sum(1 for p, positive in truth.items() if positive and p in flagged)
        fp = sum(1 for p, positive in truth.items() if not positive and p in flagged)
        fn = sum(1 for p, positive in truth.items() if positive and p not in flagged)
        frontmatter_flags = sum(1 for p in flagged if p in truth
                                and pages.get(_page(entries, p)) == "frontmatter-only")
        return {"start": start, "end": end, "entries": len(truth), "pages": kinds,
                "flagged": len(flagged), "by_rule": dict(sorted(report.counts.items())),
                "true_positive": tp, "false_positive": fp,
                "false_negative": fn,
                "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
                "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
                "frontmatter_only_flagged": frontmatter_flags,
                "lint_seconds": round(seconds, 3)}


def _page(entries, path: str) -> str:
    for entry in entries:
        if entry.path == path and entry.sources:
            return entry.sources[0].uri[4:]
    return ""


def main() -> None:
    """Run both windows; write evals/results/staleness.md and .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    data = data_dir(args.data)
    results = [run_window(data, CHECKPOINT, "main"),
               run_window(data, OLD_CHECKPOINT, CHECKPOINT)]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "staleness.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = ["# Staleness benchmark (wiki lint W001/W002/W011 vs git truth)", "",
             f"- **project commit**: {git_head()}", "",
             "| window | entries | pages deleted / body changed / frontmatter-only / "
             "unchanged | flagged | findings | precision | recall | frontmatter-only flagged | "
             "lint s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        k = r["pages"]
        lines.append(f"| {r['start'][:12]} -> {r['end'][:12]} | {r['entries']} | "
                     f"{k['deleted']} / {k['body']} / {k['frontmatter-only']} / "
                     f"{k['unchanged']} | {r['flagged']} | {r['by_rule']} | {r['precision']} | "
                     f"{r['recall']} | "
                     f"{r['frontmatter_only_flagged']} | {r['lint_seconds']} |")
    (out / "staleness.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
