"""Dataset loaders and the cached handbook wiki build.

Data is read in place from the shared data folder (``--data DIR``, else ``$WIKI_DATA``,
else ``../shared/data`` next to the repository root); nothing is copied into the repo.
Built artefacts (the handbook wiki repository, the SciFact index) are cached under
``evals/.cache/``, keyed by the checkpoint / corpus and a hash of the project's source, so
re-runs are fast and a code change rebuilds.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = REPO_ROOT / "evals" / ".cache"
CHECKPOINT = "81a04684589d557e6faca4dc9890e541b917977e"
BUNDLE = "handbook-18f/handbook-18f-md-history.bundle"
QUESTIONS = "handbook-18f/questions-dev"
SCIFACT = "beir-scifact"
DONE = ".eval-build-done"
AUTHOR = ("Eval Author", "author@example.com")
APPROVER = ("Eval Approver", "approver@example.com")


def data_dir(explicit: str | Path | None = None) -> Path:
    """The shared data folder: ``explicit``, else ``$WIKI_DATA``, else ``../shared/data``
    relative to the repository root. Raises ``FileNotFoundError`` when it is missing."""
    path = Path(explicit or os.environ.get("WIKI_DATA") or REPO_ROOT.parent / "shared" / "data")
    if not path.is_dir():
        raise FileNotFoundError(f"data folder not found: {path} (use --data or WIKI_DATA)")
    return path.resolve()


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSON-lines file, blank lines skipped."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def source_hash(*folders: str) -> str:
    """A short sha256 over the ``*.py`` files under ``folders`` (repo-relative, sub-packages
    included), so caches built by other code are not reused."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            digest.update(f"{path.relative_to(REPO_ROOT)}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def bench_environment() -> None:
    """Pin a git identity for throw-away benchmark repositories and turn vectors off."""
    os.environ.update({"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                       "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
                       "WIKI_EMBED_MODEL": "none"})


def git_head(path: Path = REPO_ROOT) -> str:
    """``git rev-parse --short HEAD`` of ``path`` ("unknown" when git cannot tell)."""
    try:
        return subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# -- handbook ------------------------------------------------------------------------------

@dataclass
class Question:
    """One dev question: ``gold`` page paths (empty for unanswerable ones)."""

    id: str
    question: str
    gold: list[str]
    style: str


def handbook_questions(data: Path) -> tuple[list[Question], list[Question]]:
    """``(answerable, unanswerable)`` dev questions of the handbook."""
    folder = data / QUESTIONS

    def load(name: str) -> list[Question]:
        return [Question(r["id"], r["question"], list(r.get("gold") or []), r.get("style", ""))
                for r in read_jsonl(folder / name)]

    return load("answerable.jsonl"), load("unanswerable.jsonl")


@dataclass
class BuildTimes:
    """Wall seconds of each phase of a from-scratch handbook build."""

    clone: float = 0.0
    init: float = 0.0
    ingest: float = 0.0
    approve: float = 0.0
    index: float = 0.0
    pages: int = 0
    entries: int = 0
    skipped: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return self.clone + self.init + self.ingest + self.approve + self.index

    @property
    def without_clone(self) -> float:
        return self.total - self.clone


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def build_handbook(data: Path, target: Path, *, checkpoint: str = CHECKPOINT) -> BuildTimes:
    """Clone the handbook bundle into ``target`` at ``checkpoint``, create the wiki, ingest
    ``pages/``, approve the proposal with a second identity and rebuild the derived index.
    Returns the wall time of each phase."""
    from wiki.ingest.pipeline import ingest
    from wiki.review.proposals import approve
    from wiki.store.derived import rebuild
    from wiki.store.gitrepo import Identity
    from wiki.store.workspace import Wiki

    times = BuildTimes()
    start = time.perf_counter()
    _git("clone", "-q", str(data / BUNDLE), str(target))
    _git("-c", "advice.detachedHead=false", "checkout", "-q", checkpoint, cwd=target)
    _git("config", "user.name", AUTHOR[0], cwd=target)
    _git("config", "user.email", AUTHOR[1], cwd=target)
    times.clone = time.perf_counter() - start
    times.pages = sum(1 for _ in (target / "pages").rglob("*.md"))

    start = time.perf_counter()
    wiki = Wiki(target)
    wiki.init()
    times.init = time.perf_counter() - start

    start = time.perf_counter()
    report = ingest(wiki, [target / "pages"], author=Identity(*AUTHOR))
    times.ingest = time.perf_counter() - start
    times.entries = report.added
    times.skipped = [f"{s.path}: {s.reason}" for s in report.skipped]
    if report.proposal is None:
        raise RuntimeError("ingest proposed nothing")

    start = time.perf_counter()
    approve(wiki, report.proposal.name, approver=Identity(*APPROVER),
            override="eval build: the handbook quotes instruction-like text")
    times.approve = time.perf_counter() - start

    start = time.perf_counter()
    rebuild(wiki)
    times.index = time.perf_counter() - start
    return times


def cached_handbook(data: Path, *, checkpoint: str = CHECKPOINT,
                    log=None) -> tuple[Path, BuildTimes | None]:
    """The handbook wiki repository from the cache, built first when missing. Returns
    ``(path, times)``; ``times`` is ``None`` when the cache was reused.

    A build happens in a temporary folder that is renamed into place once complete, so a
    cached folder is always whole; builds for other source hashes are pruned, keeping the
    three most recent ones (other runs, e.g. in other git worktrees, may still be using
    them)."""
    key = f"handbook-{checkpoint[:12]}-{source_hash('wiki', 'indexes')}"
    path = CACHE_DIR / key
    if (path / DONE).exists():
        return path, None
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    if log:
        log(f"building the handbook wiki in {path} (first run or code changed)")
    tmp = Path(tempfile.mkdtemp(prefix=key + ".", dir=CACHE_DIR))
    try:
        times = build_handbook(data, tmp / "repo", checkpoint=checkpoint)
        (tmp / "repo" / DONE).write_text(json.dumps(vars(times)), encoding="utf-8")
        if path.exists() and not (path / DONE).exists():
            shutil.rmtree(path)  # left by an older version of this code
        try:
            (tmp / "repo").rename(path)
        except OSError:
            if not (path / DONE).exists():  # else another process built it meanwhile
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    older = sorted((p for p in CACHE_DIR.glob(f"handbook-{checkpoint[:12]}-*")
                    if p != path and (p / DONE).exists()),
                   key=lambda p: (p / DONE).stat().st_mtime, reverse=True)
    for old in older[3:]:
        shutil.rmtree(old, ignore_errors=True)
    return path, times


# -- SciFact -------------------------------------------------------------------------------

@dataclass
class Split:
    """Queries ``{id: text}`` and qrels ``{query id: set of relevant doc ids}``."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, set[str]]


def read_qrels(path: Path) -> dict[str, set[str]]:
    """BEIR qrels TSV (header line; score > 0 counts as relevant)."""
    qrels: dict[str, set[str]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle, None)
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3 and int(parts[2]) > 0:
                qrels.setdefault(parts[0], set()).add(parts[1])
    return qrels


def scifact_split(data: Path, split: str) -> Split:
    """The ``test`` or ``train`` queries of SciFact, restricted to queries with qrels."""
    folder = data / SCIFACT
    suffix = "" if split == "test" else "-" + split
    qrels = read_qrels(folder / f"qrels{suffix}.tsv")
    queries = {r["id"]: r["text"] for r in read_jsonl(folder / f"queries{suffix}.jsonl")
               if r["id"] in qrels}
    return Split(split, queries, qrels)


def scifact_corpus(data: Path) -> list[dict]:
    """The 5,183 abstracts as ``{"id", "title", "text"}``."""
    return read_jsonl(data / SCIFACT / "corpus.jsonl")


def build_cached_index(path: Path, stale: list[Path], documents, *, chunk_words: int,
                       log=None, message: str = "", after=None):
    """Build a :class:`indexes.sqlite.engine.SearchIndex` of ``documents`` at ``path`` through a
    temporary file (``stale`` files are removed first; ``after(index)`` runs before the
    rename, e.g. to embed), and return it opened."""
    from indexes.sqlite.engine import SearchIndex

    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    for old in stale:
        old.unlink(missing_ok=True)
    if log and message:
        log(message)
    tmp = path.with_suffix(".tmp")
    for leftover in CACHE_DIR.glob(tmp.name + "*"):
        leftover.unlink()
    with SearchIndex(tmp, chunk_words=chunk_words) as index:
        with index.transaction():
            index.upsert(documents)
        if after is not None:
            after(index)
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        index.conn.execute("PRAGMA journal_mode = DELETE")
    tmp.rename(path)
    return SearchIndex(path, chunk_words=chunk_words)


def scifact_index(data: Path, *, fields: str = "flat", chunk_words: int | None = None,
                  log=None):
    """A :class:`indexes.sqlite.engine.SearchIndex` over the SciFact corpus (cached). ``fields``:
    ``flat`` = title + text in the body column (BEIR/Anserini "flat"); ``multifield`` =
    title in the title column, text in the body, with the index's default weights.
    ``chunk_words``: the vector chunk size (default: the index's own); vectors are not
    computed here (see :func:`evals.embedcache.embed_index`)."""
    from indexes.documents import Document
    from indexes.sqlite.engine import SearchIndex
    from indexes.sqlite.vectors import CHUNK_WORDS

    chunk_words = chunk_words or CHUNK_WORDS
    corpus_file = data / SCIFACT / "corpus.jsonl"
    stat = corpus_file.stat()
    stem = f"scifact-{fields}-w{chunk_words}-"
    key = f"{stem}{stat.st_size}-{int(stat.st_mtime)}-{source_hash('indexes')}"
    path = CACHE_DIR / f"{key}.sqlite"
    if path.exists():
        return SearchIndex(path, chunk_words=chunk_words)
    stale = [*CACHE_DIR.glob(f"{stem}*.sqlite*"),
             *CACHE_DIR.glob(f"scifact-{fields}-[0-9]*.sqlite*")]
    documents = [Document(key=d["id"], doc_id=d["id"],
                          title="" if fields == "flat" else d["title"],
                          body=f"{d['title']}\n{d['text']}" if fields == "flat" else d["text"])
                 for d in scifact_corpus(data)]
    return build_cached_index(path, stale, documents, chunk_words=chunk_words, log=log,
                              message=f"indexing the SciFact corpus ({fields}) into {path}")
