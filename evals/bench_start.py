"""Start time of whole ``wiki`` processes, as a ratio to a bare ``python -c pass``.

Run by ``python -m evals.bench`` (section 7): the commands below are started in turn,
``runs`` rounds (so a busy moment of the machine falls on all of them alike), each timed
from spawn to exit; p50 and p95 in ms and the p50 over the bare interpreter's p50. The
search runs with the vector leg (the handbook wiki's default) through the warm embedding
server: the first, untimed round starts it (and writes the ``.pyc`` files: the timed
processes run with Python's bytecode cache, :func:`user_env`). Then one
``python -X importtime`` run of ``wiki search`` gives its 10 slowest imports (cumulative
ms, nested ones included).

Targets (issue 17): ``wiki search`` p50 <= 0.25 s, ``wiki --version`` p50 <= 0.1 s.

    python -m evals.bench_start [--repo DIR] [--runs 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from evals.metrics import percentile
from evals.report import md_table

SEARCH_TARGET_S = 0.25
VERSION_TARGET_S = 0.1
QUERY = "travel voucher"


def commands(wiki: str, repo: Path) -> dict[str, list[str]]:
    """Key -> argv of each process timed (``wiki``: the console script)."""
    return {"python": [sys.executable, "-c", "pass"],
            "version": [wiki, "--version"],
            "help": [wiki, "--help"],
            "search": [wiki, "-C", str(repo), "search", QUERY]}


LABELS = {"python": "python -c pass", "version": "wiki --version", "help": "wiki --help",
          "search": f"wiki search {QUERY!r}"}


def user_env() -> dict[str, str]:
    """The environment for timed ``wiki`` processes: this one, but with Python's bytecode
    cache on (``PYTHONDONTWRITEBYTECODE`` dropped), as an installed or used copy has its
    ``.pyc`` files; without them every process compiles the project's ~150 modules."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env=user_env())
    return time.perf_counter() - start


def startup(wiki: str, repo: Path, runs: int) -> dict:
    """``{"runs", "load", "commands": {key: {command, p50_ms, p95_ms, ratio}},
    "slowest_imports", "targets", "met"}`` for the processes of :func:`commands` (see the
    module); ``load``: the 1-minute load average at the start."""
    argvs = commands(wiki, repo)
    load = os.getloadavg()[0]
    for argv in argvs.values():  # warm: page cache, .pyc files, the embedding server
        _wall(argv)
    samples: dict[str, list[float]] = {label: [] for label in argvs}
    for _ in range(runs):
        for label, argv in argvs.items():
            samples[label].append(_wall(argv) * 1000)
    bare = percentile(samples["python"], 50)
    rows = {key: {"command": LABELS[key], "p50_ms": percentile(s, 50),
                  "p95_ms": percentile(s, 95), "ratio": percentile(s, 50) / bare}
            for key, s in samples.items()}
    search = rows["search"]["p50_ms"] / 1000
    version = rows["version"]["p50_ms"] / 1000
    return {"runs": runs, "load": round(load, 1), "commands": rows,
            "slowest_imports": slowest_imports(repo),
            "targets": {"search_p50_s": SEARCH_TARGET_S, "version_p50_s": VERSION_TARGET_S},
            "met": {"search": search <= SEARCH_TARGET_S, "version": version <= VERSION_TARGET_S}}


def slowest_imports(repo: Path, top: int = 10) -> list[tuple[str, float, float]]:
    """``(module, cumulative ms, self ms)`` of the ``top`` imports of ``wiki search`` with
    the largest cumulative time, any depth (``python -X importtime -m wiki_cli``)."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "wiki_cli", "-C",
                             str(repo), "search", QUERY], capture_output=True, text=True,
                            check=False, env=user_env())
    rows = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            own, cumulative, name = line[12:].split("|")
            rows.append((name.strip(), int(cumulative) / 1000, int(own) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:top]


def markdown(result: dict) -> str:
    """Section 7 of ``bench.md``."""
    rows = [[r["command"], r["p50_ms"], r["p95_ms"], f"{r['ratio']:.1f}x"]
            for r in result["commands"].values()]
    met = {k: "yes" if v else "NO" for k, v in result["met"].items()}
    return "\n".join([
        "## 7. Start time: whole processes, as a ratio to a bare `python -c pass`", "",
        f"{result['runs']} rounds, the commands in turn, wall time spawn to exit, with "
        "Python's bytecode cache (as an installed copy runs); the search with the vector "
        "leg through the warm embedding server (which encodes the query and ranks the "
        "index's vectors: the search process imports no numpy)"
        + (f"; load average {result['load']} at the start (2 CPUs shared with other work "
           "inflate every row, the ratios less)." if "load" in result else "."), "",
        md_table(["command", "p50 ms", "p95 ms", "p50 / bare python"], rows), "",
        f"Targets: `wiki search` p50 <= {SEARCH_TARGET_S} s: met: {met['search']}; "
        f"`wiki --version` p50 <= {VERSION_TARGET_S} s: met: {met['version']}.", "",
        "The 10 slowest imports of `wiki search` (`python -X importtime`; cumulative ms "
        "includes the modules a module imports, nested rows are part of their parents'):",
        "", md_table(["module", "cumulative ms", "self ms"], result["slowest_imports"])])


def main(argv: list[str] | None = None) -> int:
    from evals import datasets
    from evals.bench import wiki_executable

    parser = argparse.ArgumentParser(prog="python -m evals.bench_start", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, help="a wiki (default: the cached handbook)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    repo = args.repo or datasets.cached_handbook(datasets.data_dir())[0]
    print(markdown(startup(wiki_executable(), repo, args.runs)))
    print(f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
