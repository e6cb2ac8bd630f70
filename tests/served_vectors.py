"""Shared by the tests of the embedding server's ``nearest`` request: a private runtime
dir whose servers are stopped at the end, and small indexes embedded through a server."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from indexes.documents import Document
from indexes.embedding import embedders
from indexes.embedding.embed_server import RemoteEmbedder
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.vectors import embed_pending

MODEL = embedders.DEFAULT_MODEL
TOPICS = {"travel": "Book flights and hotels for work trips; file the travel voucher.",
          "payroll": "Salaries are paid every second Friday by direct deposit.",
          "laptops": "Request a laptop from IT; it ships within a week.",
          "security": "Rotate your signing keys every ninety days.",
          "leave": "Annual leave accrues at four hours per pay period."}


@contextlib.contextmanager
def runtime_dir(prefix: str) -> Iterator[Path]:
    """A private, short runtime dir (Unix socket paths max out at ~107 bytes); every
    server that logged its pid there is stopped at the end."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        yield path
    finally:
        for log in path.glob("wiki/*.log"):
            for line in log.read_text(errors="replace").splitlines():
                if "serving" in line and "(pid " in line:
                    pid = int(line.split("(pid ")[1].split(",")[0])
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGTERM)
        shutil.rmtree(path, ignore_errors=True)


def docs(topics: dict[str, str]) -> list[Document]:
    """One document per topic (``<name>.md``), its ``;``-separated parts as sentences."""
    return [Document(key=f"{name}.md", doc_id=name, title=name.title(), body=text,
                     sentences=tuple(part.strip() + "." for part in text.split(";")))
            for name, text in topics.items()]


def build_index(path: Path, remote: RemoteEmbedder, topics: dict[str, str]) -> SearchIndex:
    """A search index at ``path`` holding :func:`docs` of ``topics``, embedded by ``remote``."""
    index = SearchIndex(path)
    index.upsert(docs(topics))
    embed_pending(index.vectors, remote)
    return index



def landed_with_server(cli, repo: Path, files: dict[str, str], runtime: Path) -> dict:
    """Write ``files`` (path under ``docs/`` -> markdown), ingest and land them (approved
    by Bob); returns the environment of a ``wiki`` process whose vector leg is the real
    model served from ``runtime``."""
    from conftest import BOB, acting_as, write

    for name, text in files.items():
        write(repo / "docs" / name, text)
    assert cli("init").exit_code == 0
    proposal = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", proposal).exit_code == 0
    return {**os.environ, "WIKI_EMBED_MODEL": MODEL, "WIKI_EMBED_SERVER": "auto",
            "XDG_RUNTIME_DIR": str(runtime)}
