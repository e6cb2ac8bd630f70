"""``wiki search`` of two checkouts, interleaved: wall and CPU time per process.

On a machine shared with other work, a block of runs of one version and then a block of
the other compares two different loads. Here the two versions run alternately, one
process each in turn, so a busy moment falls on both alike, and the difference is taken
pair by pair. CPU time (user + system, from ``wait4``) counts the process and the git
processes it waited for, and depends much less on the load than wall time. Each
checkout's code is put first on ``PYTHONPATH`` for the same ``wiki`` console script;
Python's bytecode cache is on (:func:`evals.bench_start.user_env`).

    python -m evals.bench_start_ab OLD_CHECKOUT NEW_CHECKOUT [--repo DIR] [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from evals.bench_start import QUERY, user_env
from evals.metrics import percentile


def timed(argv: list[str], code: Path) -> tuple[float, float]:
    """Wall and CPU milliseconds of one process running ``argv`` with ``code`` first on
    ``PYTHONPATH``."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env={**user_env(), "PYTHONPATH": str(code)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(child.pid, 0)
    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000


def compare(wiki: str, repo: Path, old: Path, new: Path, runs: int) -> dict:
    """``{"load": (start, end), "old"/"new": {"wall", "cpu"}: p50 ms, "delta": {"wall",
    "cpu"}: p50 of new minus old, pair by pair}``; one untimed round first (page cache,
    the embedding server, ``.pyc`` files)."""
    argv = [wiki, "-C", str(repo), "search", QUERY]
    timed(argv, old), timed(argv, new)
    load = os.getloadavg()[0]
    samples = {"old": [], "new": []}
    for _ in range(runs):
        samples["old"].append(timed(argv, old))
        samples["new"].append(timed(argv, new))
    result = {"load": (round(load, 1), round(os.getloadavg()[0], 1))}
    for arm, rows in samples.items():
        result[arm] = {"wall": percentile([w for w, _ in rows], 50),
                       "cpu": percentile([c for _, c in rows], 50)}
    pairs = list(zip(samples["old"], samples["new"], strict=True))
    result["delta"] = {"wall": percentile([n[0] - o[0] for o, n in pairs], 50),
                       "cpu": percentile([n[1] - o[1] for o, n in pairs], 50)}
    return result


def main(argv: list[str] | None = None) -> int:
    from evals import datasets
    from evals.bench import wiki_executable

    parser = argparse.ArgumentParser(prog="python -m evals.bench_start_ab",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", type=Path, help="the checkout before the change")
    parser.add_argument("new", type=Path, help="the checkout after it")
    parser.add_argument("--repo", type=Path, help="a wiki (default: the cached handbook)")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args(argv)
    repo = args.repo or datasets.cached_handbook(datasets.data_dir())[0]
    got = compare(wiki_executable(), repo, args.old.resolve(), args.new.resolve(), args.runs)
    print(f"`wiki search {QUERY!r}`, {args.runs} interleaved pairs, load average "
          f"{got['load'][0]} -> {got['load'][1]}: p50 wall {got['old']['wall']:.0f} -> "
          f"{got['new']['wall']:.0f} ms, CPU {got['old']['cpu']:.0f} -> "
          f"{got['new']['cpu']:.0f} ms; pair by pair (new - old, p50): wall "
          f"{got['delta']['wall']:+.0f} ms, CPU {got['delta']['cpu']:+.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
