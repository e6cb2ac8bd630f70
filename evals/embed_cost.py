"""What a handbook build embeds and what it costs, before and after issue 27 item 1.

Before: ``wiki index`` embedded every entry chunk (the vector leg) and every answer
sentence (the answer picker's cosine), in text-hash order. After: the chunks only,
shortest first in batches of about one length; an answer embeds the sentences of the
entries it reads and keeps them (docs/decisions.md, "Embedding costs what it must").

Each build runs in a child process on its own copy of the handbook wiki
(:func:`evals.datasets.cached_handbook`: full text indexed, no vectors), with the model
loaded in that process (``WIKI_EMBED_SERVER=off``), and reports the texts it embedded,
its CPU seconds (user + system of the whole process, every thread:
``resource.getrusage``) and its wall time. ``before`` runs the code of ``--before REV``
(default: the merge base with ``main``, unpacked with ``git archive``), ``after`` this
checkout; loading the model alone is measured too, so the embedding's own share shows.

On the ``after`` copy it then runs the staff **tune** half (never the test half: this is
where choices are checked) with the product's picker (:func:`evals.answers.run_variant`):
support recall, to compare with the committed ``staff-questions.md``, and the answer
sentences those answers embedded on demand, with their CPU seconds. Last, two ``wiki
search`` CLI calls, each timed as a child process: on a copy with every vector pending
(answered at once from the lexical legs, ``vectors_pending`` in its JSON) and right after
``wiki index`` (the build starts the shared embedding server in the background).

Writes ``evals/results/embed-cost.md`` / ``.json``.

    python -m evals.embed_cost [--data DIR] [--out evals/results] [--before REV]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evals.datasets import REPO_ROOT, cached_handbook, data_dir
from evals.report import header, md_table, now, project_commit, write

MODEL = "all-MiniLM-L6-v2"
AFTER = """
import json, resource, sys, time
from pathlib import Path

def cpu():
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime

from indexes.embedding import embedders
embedders.load(sys.argv[2]).encode(["warm up"])
loaded, start = cpu(), time.perf_counter()
from wiki.store.workspace import Wiki
from wiki.upkeep import update_index
done = update_index(Wiki(Path(sys.argv[1])))
print(json.dumps({"embedded": done.embedded, "wall": time.perf_counter() - start,
                  "cpu": cpu() - loaded, "measured": "whole build"}))
"""
BEFORE = """
import json, resource, sys, time
from pathlib import Path

def cpu():
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime

from indexes.embedding import embedders
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.vectors import BATCH
model = embedders.load(sys.argv[2])
model.encode(["warm up"])
with SearchIndex(Path(sys.argv[1]) / ".git" / "wiki" / "wiki.sqlite") as index:
    todo = [text for _, text in index.vectors.pending(model.name)]
batches = [todo[i:i + BATCH] for i in range(0, len(todo), BATCH)]
step = max(len(batches) // int(sys.argv[3]), 1)
timed = batches[::step]
start, wall = cpu(), time.perf_counter()
for batch in timed:
    model.encode(batch)
spent = cpu() - start
print(json.dumps({"embedded": len(todo), "batches": len(batches), "timed": len(timed),
                  "cpu": spent * len(batches) / len(timed),
                  "wall": (time.perf_counter() - wall) * len(batches) / len(timed),
                  "measured": f"{len(timed)} of {len(batches)} batches, extrapolated"}))
"""
WARM = """
import sys
from indexes.embedding import embed_server
from indexes.embedding.embed_spec import EmbedderSpec
embed_server.warm(sys.argv[1], EmbedderSpec(model=sys.argv[1]))
"""
LOAD = """
import json, resource, sys, time
start = time.perf_counter()
from indexes.embedding import embedders
embedders.load(sys.argv[1]).encode(["warm up"])
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": time.perf_counter() - start, "cpu": use.ru_utime + use.ru_stime}))
"""
SAMPLE = 24
"""Batches of the old build timed (spread evenly over its text-hash order): the old build
embedded ~13,000 texts, too long to time whole on a shared machine; ``--full`` times
every batch."""


def _env(code_root: Path, server: str = "off") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKI_", "GIT_"))}
    env.update({"PYTHONPATH": str(code_root), "PYTHONDONTWRITEBYTECODE": "1",
                "WIKI_EMBED_MODEL": MODEL, "WIKI_EMBED_SERVER": server,
                "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"})
    return env


def _child(script: str, code_root: Path, *args: str, server: str = "off") -> dict:
    done = subprocess.run([sys.executable, "-c", script, *args], env=_env(code_root, server),
                          capture_output=True, text=True, check=False, cwd=str(code_root))
    if done.returncode:
        raise RuntimeError(f"child failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child_plain(script: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", script, *args], env=_env(REPO_ROOT, "auto"),
                   capture_output=True, check=True, cwd=str(REPO_ROOT))


def _copy(source: Path, target: Path) -> Path:
    """A copy of the handbook repository whose derived index holds no vector."""
    shutil.copytree(source, target, symlinks=True)
    db = target / ".git" / "wiki" / "wiki.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM embeddings")
    for mark in db.parent.glob("wiki.sqlite.checked"):
        mark.unlink()
    return target


def _texts(repo: Path) -> dict[str, int]:
    """Distinct chunk texts, and distinct answer-sentence texts that are not also chunks."""
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        chunks, sentences, entries = conn.execute(
            "SELECT (SELECT count(DISTINCT text_hash) FROM chunks), (SELECT count(DISTINCT "
            "text_hash) FROM sentences WHERE text_hash NOT IN (SELECT text_hash FROM "
            "chunks)), (SELECT count(*) FROM docs)").fetchone()
    return {"entries": entries, "chunks": chunks, "sentences": sentences}


def _old_code(rev: str, folder: Path) -> Path:
    """The project's code at ``rev``, unpacked into ``folder``."""
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", rev],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def _tune(repo: Path) -> dict:
    """The staff tune half on ``repo`` (this process, this checkout's code), with the
    answer-sentence vectors the answers embed counted and their CPU time."""
    from evals.answers import VARIANTS, product_variant, run_variant
    from evals.staff_questions import records
    from wiki.answering import embedding
    from wiki.store.workspace import Wiki

    os.environ.update({"WIKI_EMBED_MODEL": MODEL, "WIKI_EMBED_SERVER": "off"})
    kept: list[int] = []
    spent: list[float] = []
    keep = embedding.keep_sentence_vectors

    def counting(wiki, model, texts, vectors):
        kept.append(len(texts))
        return keep(wiki, model, texts, vectors)

    class Timed(embedding.RecordingEncoder):
        def __call__(self, texts):
            start = time.process_time()
            try:
                return super().__call__(texts)
            finally:
                spent.append(time.process_time() - start)

    embedding.keep_sentence_vectors, recorder = counting, embedding.RecordingEncoder
    embedding.RecordingEncoder = Timed
    try:
        rows = records("tune")
        variant = {v.name: v for v in VARIANTS}[product_variant()]
        started = time.process_time()
        result = run_variant(Wiki(repo), variant, [r for r in rows if r["support"]],
                             [r for r in rows if not r["support"]])
        total = time.process_time() - started
    finally:
        embedding.keep_sentence_vectors, embedding.RecordingEncoder = keep, recorder
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        stored = conn.execute("SELECT count(*) FROM sentences s JOIN embeddings e ON "
                              "e.text_hash = s.text_hash").fetchone()[0]
    return {"questions": len(rows), "support_recall": result["support_recall"],
            "covered": result["covered"], "answerable": result["answerable"],
            "false_gaps": result["false_gaps"], "sentences_embedded": sum(kept),
            "sentence_rows_with_vectors": stored, "embed_cpu": sum(spent),
            "tune_cpu": total}


def _search(repo: Path, query: str) -> dict:
    """One ``wiki search --json`` CLI call as a child process: wall seconds, legs run,
    vectors pending."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "wiki_cli", "-C", str(repo), "search", query,
                           "--json"], env=_env(REPO_ROOT, "auto"), capture_output=True,
                          text=True, check=False, cwd=str(REPO_ROOT))
    wall = time.perf_counter() - start
    data = json.loads(done.stdout) if done.stdout.strip() else {}
    return {"wall": wall, "exit": done.returncode, "legs": data.get("legs"),
            "vectors_pending": data.get("vectors_pending"),
            "skipped": data.get("skipped", {}).get("vector")}


def _stop_server() -> None:
    """Stop the embedding server the ``after`` build started (found by its own ping)."""
    import signal

    from indexes.embedding.embed_server import RemoteEmbedder
    from indexes.embedding.embedders import EmbedderUnavailableError

    try:
        pid = RemoteEmbedder(MODEL, start=False).ping().get("pid")
    except (EmbedderUnavailableError, OSError):
        return
    if isinstance(pid, int) and pid > 1:
        os.kill(pid, signal.SIGTERM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--out", default=str(REPO_ROOT / "evals" / "results"))
    parser.add_argument("--full", action="store_true",
                        help="time every batch of the old build, not a sample")
    parser.add_argument("--before", default=None,
                        help="revision whose build is 'before' (default: merge base with main)")
    args = parser.parse_args()
    before_rev = args.before or subprocess.run(
        ["git", "-C", str(REPO_ROOT), "merge-base", "HEAD", "main"], capture_output=True,
        text=True, check=True).stdout.strip()
    source, _ = cached_handbook(data_dir(args.data), log=lambda m: print(m, file=sys.stderr))
    work = Path(tempfile.mkdtemp(prefix="embed-cost-"))
    try:
        (work / "old").mkdir()
        old = _old_code(before_rev, (work / "old").resolve())
        load = _child(LOAD, REPO_ROOT, MODEL)  # also prepares the ONNX copy once, for both
        load = _child(LOAD, REPO_ROOT, MODEL)
        pending_copy = _copy(source, work / "pending")
        backlog = _search(pending_copy, "how do I request annual leave")
        before_copy = _copy(source, work / "before")
        texts = _texts(before_copy)
        print("before build ...", file=sys.stderr)
        before = _child(BEFORE, old, str(before_copy), MODEL,
                        str(10 ** 6 if args.full else SAMPLE))
        after_copy = _copy(source, work / "after")
        print("after build ...", file=sys.stderr)
        after = _child(AFTER, REPO_ROOT, str(after_copy), MODEL)
        _child_plain(WARM, MODEL)  # what `wiki index` does last (update_index, server auto)
        first = _search(after_copy, "how do I request annual leave")
        time.sleep(5)
        warm = _search(after_copy, "who approves travel")
        print("staff tune half ...", file=sys.stderr)
        tune = _tune(after_copy)
    finally:
        _stop_server()
        shutil.rmtree(work, ignore_errors=True)
    payload = {"generated": now(), "commit": project_commit(), "before_rev": before_rev,
               "texts": texts, "model_load": load, "before": before, "after": after,
               "search_with_backlog": backlog, "first_search_after_build": first,
               "search_warm": warm, "tune": tune}
    write(Path(args.out), "embed-cost", _markdown(payload), payload)


def _markdown(p: dict) -> str:
    t, b, a, load, tune = p["texts"], p["before"], p["after"], p["model_load"], p["tune"]
    ratio = b["cpu"] / max(a["cpu"], 1e-9)
    lines = [header("Embedding cost of a handbook build (issue 27 item 1)", {
        "generated": p["generated"], "commit": p["commit"],
        "before": f"the build of {p['before_rev'][:12]}: chunks and answer sentences, in "
                  "text-hash order, batches of 64",
        "after": "this checkout: chunks only, shortest first, batches of 64; answer "
                 "sentences embedded by the answers that read them",
        "model": f"{MODEL} (ONNX Runtime, 2 threads), loaded in the build's own process "
                 "before the clock starts (loading alone is shown below)",
        "machine": f"{os.cpu_count()} CPUs, shared with other jobs (load average 5-10 "
                   "during the run): CPU seconds of the process (every thread) are the "
                   "figure to compare; wall seconds depend on the load",
        "reproduce": "`python -m evals.embed_cost` (`--full` times every batch of the "
                     "old build instead of a sample)"}), "",
        f"Handbook: {t['entries']} entries, {t['chunks']} distinct chunk texts, "
        f"{t['sentences']} distinct answer-sentence texts that are not chunks.", "",
        md_table(["build", "texts embedded", "embedding CPU s", "wall s", "measured"], [
            ["before", b["embedded"], f"{b['cpu']:.1f}", f"{b['wall']:.1f}", b["measured"]],
            ["after", a["embedded"], f"{a['cpu']:.1f}", f"{a['wall']:.1f}", a["measured"]],
            ["model load alone", "-", f"{load['cpu']:.1f}", f"{load['wall']:.1f}",
             "a process that loads the model and encodes one text"]]),
        "", f"The build's embedding is **{ratio:.1f}x** cheaper in CPU.",
        "", "## What the answers embed instead (staff tune half)", "",
        md_table(["questions", "support recall", "answerable with ≥ 1 quote held",
                  "false gaps", "sentences embedded by answers", "their CPU s",
                  "CPU s of the whole half"], [[
                      tune["questions"], f"{tune['support_recall']:.3f}",
                      f"{tune['covered']}/{tune['answerable']}", tune["false_gaps"],
                      tune["sentences_embedded"], f"{tune['embed_cpu']:.1f}",
                      f"{tune['tune_cpu']:.1f}"]]),
        "", "Support recall is compared with the tune column of staff-questions.md "
        "(0.792 before this change): the answers read the same vectors, embedded at ask "
        "time instead of at build time.", "",
        f"The cost moved, and shrank: these {tune['questions']} answers embedded "
        f"{tune['sentences_embedded']} of the {t['sentences']} answer-sentence texts "
        f"({tune['sentences_embedded'] / max(t['sentences'], 1):.0%}), about "
        f"{tune['embed_cpu'] / max(tune['questions'], 1):.2f} CPU s per answer over entries "
        "no answer read before, and nothing for entries read once already (the vectors are "
        "kept in the index).", "",
        "## Searches", "",
        md_table(["search", "wall s (CLI process)", "legs", "vectors pending", "note"], [
            [label, f"{s['wall']:.2f}", ", ".join(s["legs"] or []),
             s["vectors_pending"], s["skipped"] or "-"]
            for label, s in (("every vector pending (before wiki index)",
                              p["search_with_backlog"]),
                             ("first after wiki index", p["first_search_after_build"]),
                             ("5 s later", p["search_warm"]))]),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
