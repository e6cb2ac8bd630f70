"""``wiki serve`` under concurrent clients: throughput, latency percentiles and errors.

    python -m evals.bench_serve [--wiki REPO] [--data DIR] [--index-url URL]
                                [--clients 16] [--requests 400] [--out evals/results]

The server runs as its own process (``python -m wiki_cli serve``) over a *copy* of the wiki
repository (default: the cached handbook build of :mod:`evals.datasets`), so the bench
never writes into the original. ``--index-url`` is passed to the server as
``WIKI_INDEX_URL`` (the PostgreSQL backend, when it exists; the default is the embedded
SQLite index). Each client is its own HTTP connection pool (httpx) with a read token;
requests alternate REST ``search`` and ``ask`` over the handbook dev questions. Phases:
one client (the service time of one call), then ``--clients`` at once. An error is any
status other than 200 or a failed connection.

Writes ``<out>/bench-serve.md`` and ``<out>/bench-serve.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals import datasets
from evals.metrics import percentile
from evals.report import header, md_table, now, project_commit, write

TOKEN = "wk_bench-" + "b" * 40


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(repo: Path, tmp: Path, index_url: str | None) -> tuple[subprocess.Popen, str]:
    """``wiki serve`` over ``repo`` as a child process; returns it and its base URL once
    ``/health`` answers."""
    import httpx

    from wiki.serve.config import token_hash

    port = free_port()
    config = tmp / "serve.toml"
    config.write_text(f'[server]\nport = {port}\nfetch_interval = 0\nrequest_timeout = 300\n'
                      f'[repos.handbook]\npath = "{repo}"\n'
                      f'[[tokens]]\nname = "bench"\nhash = "{token_hash(TOKEN)}"\n'
                      f'repos = ["*"]\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(datasets.REPO_ROOT)}
    if index_url:
        env["WIKI_INDEX_URL"] = index_url
    errors = open(tmp / "server.log", "w")  # noqa: SIM115 - closed with the process
    child = subprocess.Popen([sys.executable, "-m", "wiki_cli", "serve", "--config",
                              str(config)], env=env, stdout=errors, stderr=errors)
    base = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if child.poll() is not None:
            raise SystemExit(f"the server exited ({child.returncode}); see {tmp}/server.log")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    # the status call waits for the warm-up (model loaded, index synced) to finish
    httpx.get(f"{base}/v1/repos/handbook/status", headers=_auth(), timeout=600)
    return child, base


def _auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


def requests_for(questions: list[str], n: int) -> list[tuple[str, dict]]:
    """``n`` calls alternating search and ask over ``questions``."""
    calls = []
    for i in range(n):
        q = questions[(i // 2) % len(questions)]
        calls.append(("search", {"query": q, "limit": 10}) if i % 2 == 0
                     else ("ask", {"question": q}))
    return calls


async def load(base: str, calls: list[tuple[str, dict]], clients: int) -> dict:
    """Run ``calls`` with ``clients`` concurrent clients; latencies and errors."""
    import httpx

    queue = list(reversed(calls))
    samples: list[tuple[str, float, int]] = []
    failures: list[str] = []

    async def client() -> None:
        async with httpx.AsyncClient(base_url=base, headers=_auth(), timeout=300) as http:
            while queue:
                tool, body = queue.pop()
                start = time.perf_counter()
                try:
                    response = await http.post(f"/v1/repos/handbook/{tool}", json=body)
                    status = response.status_code
                    if status != 200:
                        failures.append(f"{tool} {status}: {response.text[:200]}")
                except httpx.HTTPError as exc:
                    status = 0
                    failures.append(f"{tool}: {type(exc).__name__}: {exc}")
                samples.append((tool, (time.perf_counter() - start) * 1000, status))

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - start
    latencies = [ms for _, ms, _ in samples]
    row = {"clients": clients, "requests": len(samples),
           "errors": sum(1 for *_, status in samples if status != 200),
           "wall_s": wall, "throughput_rps": len(samples) / wall,
           "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
           "max_ms": max(latencies), "mean_ms": statistics.fmean(latencies),
           "failures": failures[:5]}
    for tool in ("search", "ask"):
        mine = [ms for t, ms, _ in samples if t == tool]
        if mine:
            row[f"{tool}_p50_ms"] = percentile(mine, 50)
            row[f"{tool}_p95_ms"] = percentile(mine, 95)
    return row


def peak_rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wiki", type=Path, help="a repository with a wiki branch (copied)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "WIKI_DATA", datasets.REPO_ROOT.parent / "shared" / "data")))
    parser.add_argument("--index-url", default=os.environ.get("WIKI_INDEX_URL"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--single", type=int, default=60, help="calls of the 1-client phase")
    parser.add_argument("--out", type=Path, default=Path("evals/results"))
    parser.add_argument("--stem", default="bench-serve")
    args = parser.parse_args()

    source = args.wiki or datasets.cached_handbook(args.data, log=log)[0]
    answerable, _ = datasets.handbook_questions(args.data)
    questions = [q.question for q in answerable]
    tmp = Path(tempfile.mkdtemp(prefix="wiki-bench-serve-"))
    try:
        repo = tmp / "repo"
        shutil.copytree(source, repo, symlinks=True)
        child, base = start_server(repo, tmp, args.index_url)
        try:
            log(f"server up at {base}; 1 client, {args.single} calls")
            single = asyncio.run(load(base, requests_for(questions, args.single), 1))
            log(f"{args.clients} clients, {args.requests} calls")
            many = asyncio.run(load(base, requests_for(questions, args.requests),
                                    args.clients))
            rss = peak_rss_kib(child.pid)
        finally:
            child.terminate()
            child.wait(60)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = [single, many]
    facts = {"date": now(), "project": project_commit(), "wiki": str(source),
             "index": args.index_url or "SQLite (embedded, default)",
             "embedding model": os.environ.get("WIKI_EMBED_MODEL", "default"),
             "machine": f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at end",
             "server peak RSS": f"{rss / 1024:.0f} MiB" if rss else "n/a",
             "calls": "REST search (limit 10) and ask, alternating, over the handbook dev "
                      "questions"}
    table = md_table(
        ["clients", "requests", "errors", "throughput (req/s)", "p50 ms", "p95 ms", "max ms",
         "search p95 ms", "ask p95 ms"],
        [[r["clients"], r["requests"], r["errors"], r["throughput_rps"], r["p50_ms"],
          r["p95_ms"], r["max_ms"], r.get("search_p95_ms"), r.get("ask_p95_ms")]
         for r in rows])
    markdown = "\n\n".join([
        header("wiki serve: concurrent clients", facts), table,
        "Calls to one repository take turns (the index, the git objects and the embedding "
        "model are used by one call at a time); what lies outside the turn (HTTP, JSON, "
        "rendering) overlaps, and p95 grows with the queue; see docs/serve.md."])
    for path in write(args.out, args.stem, markdown, {"facts": facts, "rows": rows}):
        log(f"wrote {path}")
    if many["errors"]:
        raise SystemExit(f"{many['errors']} errors: {many['failures']}")


if __name__ == "__main__":
    main()
