"""How long the embedding model takes to start: loaded in a process, and as the server.

Two times, each over ``runs`` fresh processes (p50, p95, in seconds), on the runtime the
environment resolves (ONNX Runtime by default; one untimed load first makes its copy):

* ``load``: in a new Python process, importing :mod:`indexes.embedding.embedders`, loading the
  default model and encoding one sentence (the interpreter's own start not included):
  what each process pays with ``WIKI_EMBED_SERVER=off``, and what ``wiki doctor --deep``
  times as "model load".
* ``server``: the embedding server on a fresh socket, from the spawn to its first reply:
  what the first search that needs a vector waits for. ``wiki doctor`` states it
  (:data:`wiki.doctor.SERVER_START_S`, checked against this file by
  tests/test_readme_table.py) and the README's Measured section shows both
  (:mod:`evals.readme_table`).

    python -m evals.bench_model_start [--runs 10] [--out evals/results]

Writes ``model-start.md`` and ``model-start.json``.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.bench_start import user_env
from evals.metrics import percentile
from evals.report import header, md_table, now, project_commit, write

ROOT = Path(__file__).resolve().parent.parent
LOAD = """import time
started = time.perf_counter()
from indexes.embedding import embedders
from wiki.answering.embed_settings import resolve_spec
spec = resolve_spec()
model = embedders.load(spec.model, spec)
model.encode(["wiki doctor"])
print(time.perf_counter() - started, type(model).__name__)
"""
RUNTIMES = {"OnnxEmbedder": "ONNX Runtime", "SentenceTransformerEmbedder": "PyTorch"}
"""The runtime, by the class of the loaded model."""


def load_once() -> tuple[float, str]:
    """Seconds to import, load and encode one sentence in a fresh process; the runtime
    (``ONNX Runtime`` or ``PyTorch``)."""
    done = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, capture_output=True,
                          text=True, check=True, env=user_env())
    seconds, kind = done.stdout.split()
    return float(seconds), RUNTIMES.get(kind, kind)


def server_once() -> float:
    """Seconds from spawning the embedding server on a fresh socket to its first reply;
    the server is stopped afterwards."""
    from indexes.embedding.embed_server import RemoteEmbedder
    from wiki.answering.embed_settings import resolve_spec

    with tempfile.TemporaryDirectory(prefix="wiki-model-start-") as folder:
        spec = resolve_spec()
        remote = RemoteEmbedder(spec.model, socket_path=Path(folder) / "s.sock",
                                spec=spec, idle_seconds=30)
        started = time.perf_counter()
        reply = remote.ping()
        seconds = time.perf_counter() - started
        os.kill(int(reply["pid"]), signal.SIGTERM)
        time.sleep(0.5)  # let it remove its socket before the folder goes
    return seconds


def summary(samples: list[float]) -> dict:
    """p50, p95, min and max of ``samples`` (seconds) and how many there were."""
    return {"runs": len(samples), "p50_s": percentile(samples, 50),
            "p95_s": percentile(samples, 95), "min_s": min(samples), "max_s": max(samples)}


def main(argv: list[str] | None = None) -> int:
    """Time ``runs`` loads and server starts, alternating; write the results files."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "evals" / "results")
    args = parser.parse_args(argv)
    _, runtime = load_once()  # untimed: makes the ONNX copy and the .pyc files if missing
    loads, servers = [], []
    for _ in range(args.runs):  # alternating, so a busy moment falls on both alike
        loads.append(load_once()[0])
        servers.append(server_once())
    result = {"date": now(), "project commit": project_commit(),
              "machine": f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
              "runtime": runtime, "load_average": round(os.getloadavg()[0], 1),
              "load": summary(loads), "server": summary(servers)}
    rows = [[label, result[key]["p50_s"], result[key]["p95_s"], result[key]["min_s"],
             result[key]["max_s"]]
            for key, label in (("load", "load and encode one sentence, in a process"),
                               ("server", "embedding server: spawn to first reply"))]
    text = "\n".join([
        header("Embedding model start time", {
            "date": result["date"], "project commit": result["project commit"],
            "machine": result["machine"], "runtime": runtime,
            "runs": f"{args.runs} of each, alternating; load average "
                    f"{result['load_average']} at the end"}),
        "", md_table(["what", "p50 s", "p95 s", "min s", "max s"], rows), "",
        "`wiki doctor` states the server's p50 (`wiki.doctor.SERVER_START_S`); the README's "
        "Measured section shows both p50s."])
    write(args.out, "model-start", text, result)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
