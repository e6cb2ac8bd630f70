"""Lint wall time on a synthetic wiki of N sources (target: 10,000 sources <= 10 s).

    python -m evals.bench_lint [--sources 10000] [--out evals/results]

Entries are written straight onto the wiki branch in one commit (the cost measured is
lint's, not ingest's); a tenth of the source files are then changed and a hundredth
deleted, so the stale and missing rules have work to report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from evals.datasets import bench_environment, git_head


def main() -> None:
    """Build, lint, write bench-lint.md/json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", type=int, default=10_000)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    bench_environment()
    from wiki.entry import Entry, Source
    from wiki.gitrepo import Identity
    from wiki.lint import run_lint
    from wiki.snapshot import write_commit
    from wiki.sources import fingerprint
    from wiki.workspace import Wiki

    with tempfile.TemporaryDirectory(prefix="wiki-lintbench-") as folder:
        repo = Path(folder)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        wiki = Wiki(repo)
        wiki.init()
        changes = {}
        for n in range(args.sources):
            page = repo / "src" / f"d{n // 500}" / f"p{n}.md"
            page.parent.mkdir(parents=True, exist_ok=True)
            text = f"# Page {n}\n\nFact number {n} about topic {n % 97}.\n"
            page.write_text(text)
            source = Source(f"git:src/d{n // 500}/p{n}.md", fingerprint(
                text, ignore_frontmatter=True, ignore_whitespace=True), "2026-01-01T00:00:00Z")
            path = f"kb/d{n // 500}/p{n}.md"
            changes[path] = Entry(path, {"id": f"s{n}", "title": f"Page {n}",
                                         "summary": f"Fact {n}.", "sources": [source.to_dict()]},
                                  text).to_bytes()
        head = wiki.head()
        commit = write_commit(wiki.snapshot(head), changes, "synthetic",
                              author=Identity("Bench", "bench@example.com"))
        wiki.store.update_ref(wiki.ref, commit, head, "bench")
        for n in range(0, args.sources, 10):
            (repo / "src" / f"d{n // 500}" / f"p{n}.md").write_text(f"# Page {n}\n\nChanged.\n")
        for n in range(5, args.sources, 100):
            (repo / "src" / f"d{n // 500}" / f"p{n}.md").unlink()
        started = time.perf_counter()
        report = run_lint(Wiki(repo))
        seconds = time.perf_counter() - started
    result = {"sources": args.sources, "seconds": round(seconds, 2),
              "findings": dict(sorted(report.counts.items()))}
    out = Path(args.out)
    (out / "bench-lint.json").write_text(json.dumps(result, indent=2) + "\n")
    text = ("# wiki lint on a synthetic wiki\n\n"
            f"- **project commit**: {git_head()}\n\n"
            "| sources / entries | lint s (in process) | findings | target |\n|---|---|---|---|\n"
            f"| {args.sources} | {result['seconds']} | {result['findings']} | <= 10 s |\n")
    (out / "bench-lint.md").write_text(text)
    print(text)  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
