"""Lint wall time on a synthetic wiki of N sources (target: 10,000 sources <= 10 s).

    python -m evals.bench_lint [--sources 10000] [--out evals/results]

The source files are committed to the repository and the entries written straight onto the
wiki branch in one commit (the cost measured is lint's, not ingest's), each source with the
blob id ingest would record. Then a tenth of the sources are changed, a hundredth deleted
and a two-hundredth renamed, in one more commit, so the stale, missing and renamed rules
have work to report. Lint runs twice: with the recorded blob ids (unchanged sources are
not read) and on the same entries without them (every source read and hashed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from evals.datasets import bench_environment, git_head


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def main() -> None:
    """Build, lint, write bench-lint.md/json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=10_000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    bench_environment()
    from wiki.adapters.git_source import work_tree_blobs
    from wiki.adapters.sources import fingerprint
    from wiki.lint import run_lint
    from wiki.store.entry import Entry, Source
    from wiki.store.gitrepo import Identity
    from wiki.store.snapshot import write_commit
    from wiki.store.workspace import Wiki

    def page(n: int) -> str:
        return f"src/d{n // 500}/p{n}.md"

    runs = {}
    with tempfile.TemporaryDirectory(prefix="wiki-lintbench-") as folder:
        repo = Path(folder)
        _git(repo, "init", "-q")
        wiki = Wiki(repo)
        wiki.init()
        texts = {}
        for n in range(args.sources):
            texts[n] = f"# Page {n}\n\nFact number {n} about topic {n % 97}.\n"
            (repo / page(n)).parent.mkdir(parents=True, exist_ok=True)
            (repo / page(n)).write_text(texts[n])
        _git(repo, "add", "src")
        _git(repo, "commit", "-qm", "sources")
        blobs = work_tree_blobs(wiki.repo)
        variants = {}
        for label, with_blob in (("blob ids recorded", True), ("no blob ids", False)):
            changes = {}
            for n, text in texts.items():
                source = Source(f"git:{page(n)}", fingerprint(
                    text, ignore_frontmatter=True, ignore_whitespace=True),
                    "2026-01-01T00:00:00Z").to_dict()
                if with_blob:
                    source["blob"] = blobs[page(n)][1]
                path = f"kb/d{n // 500}/p{n}.md"
                changes[path] = Entry(path, {"id": f"s{n}", "title": f"Page {n}",
                                             "summary": f"Fact {n}.", "sources": [source]},
                                      text).to_bytes()
            variants[label] = changes
        for n in range(0, args.sources, 10):
            (repo / page(n)).write_text(f"# Page {n}\n\nChanged.\n")
        for n in range(5, args.sources, 100):
            (repo / page(n)).unlink()
        for n in range(7, args.sources, 200):
            (repo / page(n)).rename(repo / page(n).replace(".md", "-renamed.md"))
        _git(repo, "add", "-A", "src")
        _git(repo, "commit", "-qm", "change, delete, rename")
        for label, changes in variants.items():
            head = wiki.head()
            commit = write_commit(wiki.snapshot(head), changes, "synthetic",
                                  author=Identity("Bench", "bench@example.com"))
            wiki.store.update_ref(wiki.ref, commit, head, "bench")
            started = time.perf_counter()
            report = run_lint(Wiki(repo))
            runs[label] = {"seconds": round(time.perf_counter() - started, 2),
                           "findings": dict(sorted(report.counts.items()))}
    result = {"sources": args.sources, "seconds": runs["blob ids recorded"]["seconds"],
              "runs": runs}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench-lint.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# wiki lint on a synthetic wiki", "", f"- **project commit**: {git_head()}",
             f"- **load average (1 min) when done**: {os.getloadavg()[0]:.1f} on "
             f"{os.cpu_count()} CPUs", "",
             "| sources / entries | entries' sources | lint s (in process) | findings | "
             "target |", "|---|---|---|---|---|"]
    for label, run in runs.items():
        lines.append(f"| {args.sources} | {label} | {run['seconds']} | {run['findings']} | "
                     "<= 10 s |")
    text = "\n".join(lines) + "\n"
    (out / "bench-lint.md").write_text(text)
    print(text)  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
