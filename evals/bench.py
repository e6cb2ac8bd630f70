"""Speed benchmarks on the handbook wiki (the cached build from evals.datasets).

    python -m evals.bench [--data DIR] [--out evals/results] [--repeat 20] [--cli-runs 10]

1. in-process search latency over the dev questions, with an index opened once;
2. a from-scratch build: clone, init, ingest 247 pages, approve, rebuild the index;
3. the ``wiki search`` command as a subprocess (wall time, peak RSS, heavy imports);
7. start time of whole processes as a ratio to a bare ``python -c pass``, and the slowest
   imports of ``wiki search`` (:mod:`evals.bench_start`).

Writes ``<out>/bench.md`` and ``<out>/bench.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals import bench_start, datasets
from evals.metrics import percentile
from evals.report import header, md_table, now, project_commit, write

BUILD_TARGET_S = 30.0
CLI_TARGET_S = 0.5
CLI_QUERY = "travel voucher"
ASK_QUESTION = "How do I get reimbursed for a travel voucher?"
HEAVY = ("torch", "sentence_transformers", "litellm", "transformers")
PROBE = """
import json, sys
repo, query, names = sys.argv[1], sys.argv[2], set(json.loads(sys.argv[3]))
sys.argv = ["wiki", "-C", repo, "search", query]
from wiki_cli.app import main
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split(".")[0] in names)
print("PROBE " + json.dumps({"heavy": heavy, "modules": len(sys.modules)}))
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stats_ms(samples: list[float]) -> dict:
    return {"n": len(samples), "p50_ms": percentile(samples, 50),
            "p95_ms": percentile(samples, 95), "mean_ms": statistics.fmean(samples),
            "max_ms": max(samples)}


def search_latency(repo: Path, questions: list[str], repeat: int) -> dict:
    """Per-query latency of ``wiki.answering.search.search`` with an open index, and of
    ``SearchIndex.search_bm25`` alone (limit 10 both)."""
    from wiki.answering.search import search_for
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    wiki = Wiki(repo)
    index = open_synced(wiki).index
    full: list[float] = []
    bare: list[float] = []
    try:
        for q in questions:  # warm-up: page cache, sqlite statement cache
            search_for(wiki, q, index=index)
        for _ in range(repeat):
            for q in questions:
                start = time.perf_counter()
                search_for(wiki, q, limit=10, index=index)
                full.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                index.search_bm25(q, limit=10)
                bare.append((time.perf_counter() - start) * 1000)
    finally:
        index.close()
    return {"wiki.answering.search.search": stats_ms(full),
            "SearchIndex.search_bm25": stats_ms(bare)}


def fresh_build(data: Path) -> dict:
    """Wall time of every phase of a from-scratch build in a temporary folder."""
    tmp = Path(tempfile.mkdtemp(prefix="wiki-bench-"))
    try:
        times = datasets.build_handbook(data, tmp / "repo")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {**vars(times), "total": times.total,
            "without_clone": times.without_clone}


def wiki_executable() -> str:
    """The ``wiki`` console script: this checkout's ``.venv``, else the running
    interpreter's, else the one on ``PATH``."""
    for local in (datasets.REPO_ROOT / ".venv" / "bin" / "wiki",
                  Path(sys.executable).parent / "wiki"):
        if local.exists():
            return str(local)
    return shutil.which("wiki") or "wiki"


LAUNCHER = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
"""Runs its arguments as a command and prints that command's peak RSS (KiB)."""


def run_child(command: list[str]) -> tuple[float, int, int, str]:
    """Run ``command``; returns (wall seconds, exit status, peak RSS in KiB, stdout).
    The peak RSS comes from a second run started by a small launcher process
    (:data:`LAUNCHER`): Linux carries a process's peak RSS across fork and exec, so a child
    forked from this process (the model loaded: ~1.1 GB) would report this process's
    peak, not its own."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             env=bench_start.user_env())  # with .pyc files, as installed
    output = child.stdout.read() if child.stdout else b""
    _, status, _ = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.stdout:
        child.stdout.close()
    launched = subprocess.run([sys.executable, "-c", LAUNCHER, *command], capture_output=True,
                              text=True, check=False, env=bench_start.user_env())
    return wall, child.returncode, int(launched.stdout.strip() or 0), \
        output.decode("utf-8", "replace")


def cli_search(repo: Path, runs: int, words: tuple[str, ...] = ("search", CLI_QUERY)) -> dict:
    """Wall time and peak RSS of ``wiki -C repo search QUERY`` (the first run timed apart,
    then ``runs`` timed runs), and which heavy modules the same command imports."""
    command = [wiki_executable(), "-C", str(repo), *words]
    first = run_child(command)[0]
    walls, rss, codes = [], [], set()
    for _ in range(runs):
        wall, code, peak, _ = run_child(command)
        walls.append(wall)
        rss.append(peak)
        codes.add(code)
    probe = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", PROBE, str(repo), CLI_QUERY,
         json.dumps(HEAVY)], capture_output=True, text=True, check=False)
    found = next((json.loads(line[6:]) for line in probe.stdout.splitlines()
                  if line.startswith("PROBE ")), {"heavy": None, "modules": None})
    return {"command": " ".join(command), "runs": runs, "exit_codes": sorted(codes),
            "first_s": first,
            "median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls),
            "peak_rss_mib": max(rss) / 1024, "heavy_modules": found["heavy"],
            "modules_loaded": found["modules"], "slowest_imports": slowest(probe.stderr)}


def slowest(importtime: str, top: int = 8) -> list[tuple[str, float]]:
    """The top-level imports with the largest cumulative time (ms) from ``-X importtime``."""
    rows = []
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[12:].split("|")
        if not name.startswith("  "):  # one space before a top-level name, more when nested
            rows.append((name.strip(), int(cumulative) / 1000))
    return sorted(rows, key=lambda r: -r[1])[:top]


def markdown(facts: dict, latency: dict, build: dict, cli: dict) -> str:
    ok = "yes" if build["total"] <= BUILD_TARGET_S else "NO"
    cli_ok = "yes" if cli["median_s"] <= CLI_TARGET_S else "NO"
    text = [header("Benchmarks (handbook wiki)", facts), "",
            "## 1. Search latency, in process (index opened once)", "",
            md_table(["call", "queries", "p50 ms", "p95 ms", "mean ms", "max ms"],
                     [[name, s["n"], s["p50_ms"], s["p95_ms"], s["mean_ms"], s["max_ms"]]
                      for name, s in latency.items()]),
            "", "## 2. Build from scratch", "",
            md_table(["phase", "seconds"],
                     [[p, build[p]] for p in ("clone", "init", "ingest", "approve", "index")]
                     + [["total", build["total"]],
                        ["total without clone", build["without_clone"]]]),
            "", f"{build['pages']} pages -> {build['entries']} entries, "
                f"{len(build['skipped'])} skipped. Target <= {BUILD_TARGET_S:.0f} s "
                f"(total): met: {ok}.",
            "", "## 3. `wiki search` as a subprocess", "",
            md_table(["measure", "value"],
                     [["command", f"`{cli['command']}`"],
                      ["first call s", cli["first_s"]],
                      ["runs (after the first)", cli["runs"]],
                      ["exit codes", cli["exit_codes"]],
                      ["median s", cli["median_s"]], ["min s", cli["min_s"]],
                      ["max s", cli["max_s"]], ["peak RSS MiB", cli["peak_rss_mib"]],
                      ["heavy modules imported", ", ".join(cli["heavy_modules"] or []) or
                       ("none" if cli["heavy_modules"] is not None else "probe failed")],
                      ["modules loaded", cli["modules_loaded"]]]),
            "", f"Target median <= {CLI_TARGET_S} s: met: {cli_ok}.", "",
            "Slowest top-level imports (cumulative ms, `python -X importtime`):", "",
            md_table(["module", "ms"], cli["slowest_imports"])]
    return "\n".join(text)


def legs_section(data: Path, repo: Path, questions: list[str], repeat: int,
                 sample: int) -> dict:
    """Per-leg latency and build throughput at handbook and SciFact sizes, peak RSS."""
    from evals import bench_legs, embedcache
    from indexes.documents import Document
    from indexes.sqlite.engine import Filters
    from wiki.store.derived import index_sentences, open_synced
    from wiki.store.workspace import Wiki

    out = {}
    index = open_synced(Wiki(repo)).index
    embedcache.embed_index(index, log=log)
    # answer sentences are stored with the documents as `wiki index` stores them; a build
    # embeds the chunks only (issue 27: answers embed the sentences they read)
    docs = [Document(key=k, doc_id=k, title=t, summary=s, body=b,
                     sentences=tuple(index_sentences(t, b))) for k, t, s, b in
            index.conn.execute("SELECT key, title, summary, body FROM docs")]
    out["handbook"] = {"latency": bench_legs.leg_latency(index, questions, Filters(),
                                                         repeat=repeat),
                       "build": bench_legs.build_throughput(docs, sample=sample)}
    index.close()
    index = datasets.scifact_index(data, log=log)
    embedcache.embed_index(index, log=log)
    split = datasets.scifact_split(data, "test")
    docs = [Document(key=d["id"], doc_id=d["id"], title="", body=f"{d['title']}\n{d['text']}",
                     sentences=tuple(index_sentences("", f"{d['title']}\n{d['text']}")))
            for d in datasets.scifact_corpus(data)]
    out["scifact"] = {"latency": bench_legs.leg_latency(
        index, list(split.queries.values())[:100], Filters(statuses=None), repeat=repeat),
        "build": bench_legs.build_throughput(docs, sample=sample)}
    index.close()
    out["peak_rss_mib"] = bench_legs.peak_rss_mib()
    return out


def legs_markdown(legs: dict, ask: dict) -> str:
    rows = [[size, name, s["n"], s["p50_ms"], s["p95_ms"]]
            for size in ("handbook", "scifact") for name, s in legs[size]["latency"].items()]
    builds = [[size, b["entries"], b["chunks"], b["index_s"], b["embed_chunks_per_s"],
               b["embed_s_extrapolated"], b["entries_per_s"],
               b["entries_per_s_without_embedding"]]
              for size, b in ((s, legs[s]["build"]) for s in ("handbook", "scifact"))]
    return "\n".join([
        "## 4. Per-leg latency, in process (limit 10; vector with a precomputed query vector;"
        " hybrid = encode + fused + confidence)", "",
        md_table(["index", "call", "queries", "p50 ms", "p95 ms"], rows), "",
        "## 5. Index build throughput, embedding included (the texts embedded are the"
        " chunks, as `wiki index` embeds them since issue 27: answer sentences are embedded"
        " by the answers that read them; rate timed on a sample, extrapolated;"
        " evals/results/embed-cost.md measures a whole build)", "",
        md_table(["index", "entries", "texts embedded", "index s", "embed texts/s", "embed s",
                  "entries/s", "entries/s without embedding"], builds), "",
        f"Peak RSS of the bench process (model + both indexes): "
        f"{legs['peak_rss_mib']:.0f} MiB.", "",
        "## 6. `wiki ask` as a subprocess", "",
        md_table(["measure", "value"], [["command", f"`{ask['command']}`"],
                                        ["first call s", ask["first_s"]],
                                        ["median s (repeated)", ask["median_s"]],
                                        ["exit codes", ask["exit_codes"]],
                                        ["peak RSS MiB", ask["peak_rss_mib"]]])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA or "
                                       "../shared/data)")
    parser.add_argument("--out", default=str(datasets.REPO_ROOT / "evals" / "results"))
    parser.add_argument("--repeat", type=int, default=20, help="passes over the questions")
    parser.add_argument("--cli-runs", type=int, default=10)
    parser.add_argument("--start-runs", type=int, default=20,
                        help="rounds of the start-time table (section 7)")
    parser.add_argument("--leg-repeat", type=int, default=3, help="passes, per-leg latency")
    parser.add_argument("--torch-threads", type=int, default=0,
                        help="torch threads for in-process encoding (0: torch's default)")
    parser.add_argument("--embed-sample", type=int, default=256,
                        help="chunks embedded to time the embedding rate")
    args = parser.parse_args(argv)
    try:
        data = datasets.data_dir(args.data)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    repo, _ = datasets.cached_handbook(data, log=log)
    answerable, unanswerable = datasets.handbook_questions(data)
    questions = [q.question for q in answerable + unanswerable]
    log(f"1/3 search latency: {len(questions)} questions x {args.repeat}")
    latency = search_latency(repo, questions, args.repeat)
    log("2/3 build from scratch")
    build = fresh_build(data)
    log(f"3/3 `wiki search` / `wiki ask` subprocesses x {args.cli_runs}")
    cli = cli_search(repo, args.cli_runs)
    ask = cli_search(repo, args.cli_runs, ("ask", ASK_QUESTION))
    log(f"start time: bare python, --version, --help, search x {args.start_runs}")
    startup = bench_start.startup(wiki_executable(), repo, args.start_runs)
    log("4/4 legs, build throughput, memory (handbook and SciFact)")
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    legs = legs_section(data, repo, questions, args.leg_repeat, args.embed_sample)
    facts = {"date": now(), "project commit": project_commit(),
             "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
             "parameters": f"{len(questions)} questions x {args.repeat} passes, limit 10; "
                           f"`wiki search {CLI_QUERY!r}` x {args.cli_runs}; torch threads "
                           f"{args.torch_threads or 'default'} (section 4); load average "
                           f"{os.getloadavg()[0]:.1f} at the end"}
    text = (markdown(facts, latency, build, cli) + "\n\n" + legs_markdown(legs, ask)
            + "\n\n" + bench_start.markdown(startup))
    write(Path(args.out), "bench", text, {**facts, "latency": latency, "build": build,
                                          "cli": cli, "ask": ask, "legs": legs,
                                          "startup": startup,
                                          "targets": {
                                              "build_total_s": BUILD_TARGET_S,
                                              "cli_median_s": CLI_TARGET_S}})
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
