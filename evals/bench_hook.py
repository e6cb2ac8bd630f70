"""How much the post-commit hook adds to ``git commit`` (target <= 50 ms), in a small real
repository with a wiki that cites its files.

    python -m evals.bench_hook [--runs 20] [--out evals/results]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.datasets import bench_environment, git_head


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def _commits(repo: Path, runs: int, tag: str, pause: float) -> list[float]:
    times = []
    for i in range(runs):
        (repo / "docs" / "a.md").write_text(f"# A\n\nVersion {tag} {i}.\n")
        _git(repo, "add", "-A")
        start = time.perf_counter()
        _git(repo, "commit", "-q", "-m", f"{tag} {i}")
        times.append((time.perf_counter() - start) * 1000)
        time.sleep(pause)  # with a pause, a detached marker finishes before the next commit
    return times


def main() -> None:
    """Measure commit wall time without and with the hook; write bench-hook.md/json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    bench_environment()
    from wiki.ingest.pipeline import ingest
    from wiki.lint.hook import install
    from wiki.review.proposals import approve
    from wiki.store.gitrepo import Identity
    from wiki.store.workspace import Wiki

    with tempfile.TemporaryDirectory(prefix="wiki-hookbench-") as folder:
        repo = Path(folder)
        _git(repo, "init", "-q")
        (repo / "docs").mkdir()
        for n in range(50):
            (repo / "docs" / f"p{n}.md").write_text(f"# Page {n}\n\nText {n}.\n")
        (repo / "docs" / "a.md").write_text("# A\n\nVersion 0.\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "docs")
        wiki = Wiki(repo)
        wiki.init()
        report = ingest(wiki, [repo / "docs"])
        approve(wiki, report.proposal.name, approver=Identity("Other", "other@example.com"),
                override="benchmark build: a public corpus, reviewed by its flags in make demo")
        result: dict = {"runs": args.runs}
        for label, pause in (("spaced 1 s", 1.0), ("back to back", 0.0)):
            without = _commits(repo, args.runs, f"plain{pause}", pause)
            install(wiki, python=sys.executable)
            with_hook = _commits(repo, args.runs, f"hook{pause}", pause)
            from wiki.lint.hook import uninstall
            uninstall(wiki)
            time.sleep(3)  # let the detached markers finish
            result[label] = {"without_ms_p50": round(statistics.median(without), 2),
                             "with_ms_p50": round(statistics.median(with_hook), 2)}
            result[label]["added_ms_p50"] = round(
                result[label]["with_ms_p50"] - result[label]["without_ms_p50"], 2)
    out = Path(args.out)
    (out / "bench-hook.json").write_text(json.dumps(result, indent=2) + "\n")
    text = ("# Post-commit hook: added commit wall time\n\n"
            f"- **project commit**: {git_head()}\n- **runs**: {args.runs} commits each\n\n"
            "| commits | git commit p50 ms without hook | with hook | added | target |\n"
            "|---|---|---|---|---|\n"
            + "".join(f"| {label} | {r['without_ms_p50']} | {r['with_ms_p50']} | "
                      f"{r['added_ms_p50']} | <= 50 |\n"
                      for label, r in result.items() if isinstance(r, dict))
            + "\nThe hook itself returns at once (the marker runs detached). Back to back, the "
              "previous commit's marker (a Python process, ~0.3 s of CPU) still competes for "
              "this 2-core machine's CPU while the next commit runs.\n")
    (out / "bench-hook.md").write_text(text)
    print(text)  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
