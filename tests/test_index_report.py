"""`wiki index` and `wiki status` say what they count, and a long embedding run says how far
it is, how fast and how long it has left when stderr is a log, not a terminal (issue 17.5:
under `make demo > log` nothing was printed for minutes; issue 27: a build embeds chunks
only, answer sentences are embedded by the answers that read them).

Runs the real CLI in-process (CliRunner: stderr is not a terminal) with the hashing
embedder of tests/test_hybrid.py registered as a model, and checks the counts against the
derived SQLite database itself.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from conftest import BOB, acting_as, write

from wiki_cli.common import PLAIN_PROGRESS_MIN, PLAIN_PROGRESS_SECONDS, PlainProgress


def _land(cli, repo: Path, pages: int, sentences: int) -> None:
    """``pages`` pages of ``sentences`` distinct sentences each, ingested and approved."""
    for page in range(pages):
        body = " ".join(f"Team {page} keeps rule number {n} for topic {page}-{n}."
                        for n in range(sentences))
        write(repo / "docs" / f"page{page}.md", f"# Page {page}\n\n{body}\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", str(repo / "docs")).stdout.strip()
    with acting_as(BOB):
        landed = cli("approve", name)
    assert landed.exit_code == 0, landed.output


def _distinct(repo: Path) -> tuple[int, int, int, int]:
    """(chunk rows, sentence rows, distinct chunk texts, distinct sentence-only texts)."""
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        return conn.execute(
            "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM sentences), "
            "(SELECT count(DISTINCT text_hash) FROM chunks), (SELECT count(DISTINCT "
            "text_hash) FROM sentences WHERE text_hash NOT IN (SELECT text_hash FROM chunks))"
        ).fetchone()


def _forget_vectors(repo: Path) -> None:
    """Drop every stored vector, as a model change would: the next build embeds all."""
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        conn.execute("DELETE FROM embeddings")


def test_index_and_status_name_chunks_and_answer_sentences(cli, repo: Path,
                                                           vectors_on) -> None:
    _land(cli, repo, pages=3, sentences=4)
    _forget_vectors(repo)
    done = cli("index", "--rebuild")
    assert done.exit_code == 0, done.output
    chunk_rows, sentence_rows, chunk_texts, _ = _distinct(repo)
    assert sentence_rows > chunk_rows > 0
    assert f"; {chunk_texts} chunks embedded (model fake-hash)" in done.stderr
    status = cli("status")
    assert status.exit_code == 0, status.output
    flat = " ".join(status.stdout.split())
    assert re.search(rf"{chunk_rows}/{chunk_rows} chunks embedded \(fake-hash\); "
                     rf"0/{sentence_rows} answer sentences \(embedded when an answer reads "
                     r"them\)", flat), flat
    again = cli("index", "--json")
    assert '"embedded_chunks": 0' in again.stdout
    assert "; 0 chunks embedded" in cli("index").stderr


def test_damaged_vectors_are_embedded_again(cli, repo: Path, vectors_on) -> None:
    """Damaged vectors are dropped and embedded again inside the run, and counted."""
    _land(cli, repo, pages=2, sentences=3)
    assert cli("index").exit_code == 0
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        stored = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        conn.execute("UPDATE embeddings SET dim = 3")
    done = cli("index")
    assert done.exit_code == 0, done.output
    assert f"; {stored} chunks embedded (model fake-hash)" in done.stderr


def test_a_long_build_prints_plain_progress_lines_in_a_log(cli, repo: Path,
                                                           vectors_on) -> None:
    _land(cli, repo, pages=40, sentences=120)  # ~7 chunks a page
    _forget_vectors(repo)
    done = cli("index", "--rebuild")
    assert done.exit_code == 0, done.output
    lines = re.findall(r"^embedding: (\d+)/(\d+) texts \((\d+)%, \d+ s"
                       r"(?:, \d+ texts/s, about \d+ s left)?\)$", done.stderr, re.M)
    total = int(lines[0][1])
    assert total > PLAIN_PROGRESS_MIN
    percents = [int(p) for _, _, p in lines]
    for quarter in (25, 50, 75):  # each quarter is announced once it is passed
        assert any(quarter <= p < quarter + 25 for p in percents), percents
    assert max(percents) < 100
    _forget_vectors(repo)
    quiet = cli("--quiet", "index", "--rebuild")
    assert quiet.exit_code == 0 and "embedding:" not in quiet.stderr
    _forget_vectors(repo)
    assert "embedding:" not in cli("index", "--rebuild", "--json").stderr


def test_plain_progress_lines_by_quarter_and_by_time(capsys) -> None:
    now = [0.0]
    progress = PlainProgress(clock=lambda: now[0])
    for done in (100, 200, 300, 400):  # 1000 texts: 10%, 20%, 30%, 40%
        progress(done, 1000)
    now[0] = 45.0
    assert now[0] > PLAIN_PROGRESS_SECONDS  # long after the last line: one more, mid-quarter, with rate and time left
    progress(450, 1000)
    progress(460, 1000)
    progress(1000, 1000)  # done: the command's own report follows
    small = PlainProgress(clock=lambda: now[0])
    small(PLAIN_PROGRESS_MIN - 2, PLAIN_PROGRESS_MIN - 1)  # a small job: no lines
    assert capsys.readouterr().err.splitlines() == [
        "embedding: 300/1000 texts (30%, 0 s)",
        "embedding: 450/1000 texts (45%, 45 s, 10 texts/s, about 55 s left)",
    ]


def test_plain_progress_times_the_work_from_its_start_not_the_model_load(capsys) -> None:
    """helper-30: the first use's model preparation (~10 s) was counted in the rate, so the
    time left was twice too long. ``embed_pending`` says ``(0, total)`` once the model is
    loaded, and the clock starts there."""
    now = [0.0]
    progress = PlainProgress(clock=lambda: now[0])
    now[0] = 10.0  # the model took 10 s to prepare
    progress(0, 1000)
    now[0] = 15.0
    progress(500, 1000)
    assert capsys.readouterr().err.splitlines() == [
        "embedding: 500/1000 texts (50%, 5 s, 100 texts/s, about 5 s left)"]


def test_embedding_says_when_the_work_starts(tmp_path) -> None:
    from test_hybrid import HashingEmbedder

    from indexes.documents import Document
    from indexes.sqlite.engine import SearchIndex
    from indexes.sqlite.vectors import embed_pending

    calls: list[tuple[int, int]] = []
    with SearchIndex(tmp_path / "x.sqlite") as index, index.transaction():
        index.upsert([Document(f"k{i}", f"i{i}", f"Title {i}", body=f"body {i}")
                      for i in range(3)])
        embed_pending(index.vectors, HashingEmbedder(), progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 3) and calls[-1] == (3, 3)
