"""`wiki index` and `wiki status` say what they count, and a long embedding run says how far
it is when stderr is a log, not a terminal (issue 17.5: "1952 chunks embedded" next to
"347/347 chunks embedded" counted answer sentences as chunks; under `make demo > log`
nothing was printed for minutes).

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


def test_index_and_status_name_chunks_and_answer_sentences(cli, repo: Path,
                                                           vectors_on) -> None:
    _land(cli, repo, pages=3, sentences=4)
    done = cli("index", "--rebuild")
    assert done.exit_code == 0, done.output
    chunk_rows, sentence_rows, chunk_texts, sentence_texts = _distinct(repo)
    assert sentence_rows > chunk_rows > 0
    assert (f"; {chunk_texts} chunks and {sentence_texts} answer sentences embedded "
            "(model fake-hash)") in done.stderr
    status = cli("status")
    assert status.exit_code == 0, status.output
    assert re.search(rf"{chunk_rows}/{chunk_rows} chunks and {sentence_rows}/{sentence_rows} "
                     r"answer sentences embedded \(fake-hash:\d+\)", status.stdout)
    again = cli("index", "--json")
    assert '"embedded_chunks": 0' in again.stdout
    assert '"embedded_sentences": 0' in again.stdout
    assert "0 chunks and 0 answer sentences embedded" in cli("index").stderr


def test_a_split_that_is_not_known_is_not_guessed(cli, repo: Path, vectors_on) -> None:
    """Damaged vectors are dropped and embedded again inside the run: the count is of
    texts, without a split it cannot vouch for."""
    _land(cli, repo, pages=2, sentences=3)
    assert cli("index").exit_code == 0
    with sqlite3.connect(repo / ".git" / "wiki" / "wiki.sqlite") as conn:
        stored = conn.execute("SELECT count(*) FROM embeddings").fetchone()[0]
        conn.execute("UPDATE embeddings SET dim = 3")
    done = cli("index")
    assert done.exit_code == 0, done.output
    assert f"; {stored} texts embedded (chunks and answer sentences) (model fake-hash)" \
        in done.stderr


def test_a_long_build_prints_plain_progress_lines_in_a_log(cli, repo: Path,
                                                           vectors_on) -> None:
    _land(cli, repo, pages=60, sentences=5)
    done = cli("index", "--rebuild")
    assert done.exit_code == 0, done.output
    lines = re.findall(r"^embedding: (\d+)/(\d+) texts \((\d+)%, \d+ s\)$", done.stderr, re.M)
    total = int(lines[0][1])
    assert total > PLAIN_PROGRESS_MIN
    percents = [int(p) for _, _, p in lines]
    for quarter in (25, 50, 75):  # each quarter is announced once it is passed
        assert any(quarter <= p < quarter + 25 for p in percents), percents
    assert max(percents) < 100
    quiet = cli("--quiet", "index", "--rebuild")
    assert quiet.exit_code == 0 and "embedding:" not in quiet.stderr
    assert "embedding:" not in cli("index", "--rebuild", "--json").stderr


def test_plain_progress_lines_by_quarter_and_by_time(capsys) -> None:
    now = [0.0]
    progress = PlainProgress(clock=lambda: now[0])
    for done in (100, 200, 300, 400):  # 1000 texts: 10%, 20%, 30%, 40%
        progress(done, 1000)
    now[0] = PLAIN_PROGRESS_SECONDS + 1  # long after the last line: one more, mid-quarter
    progress(450, 1000)
    progress(460, 1000)
    progress(1000, 1000)  # done: the command's own report follows
    small = PlainProgress(clock=lambda: now[0])
    small(PLAIN_PROGRESS_MIN - 2, PLAIN_PROGRESS_MIN - 1)  # a small job: no lines
    assert capsys.readouterr().err.splitlines() == [
        "embedding: 300/1000 texts (30%, 0 s)",
        f"embedding: 450/1000 texts (45%, {PLAIN_PROGRESS_SECONDS + 1:.0f} s)",
    ]
