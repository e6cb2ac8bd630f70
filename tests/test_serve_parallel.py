"""``wiki serve`` answers read calls of one repository side by side, keeps a proposal
alone, and names one commit per answer while the branch moves under its readers: a real
server on a real socket over a real repository, the calls held at known points by an
embedding model that waits on a barrier or an event (no timing in any assertion)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from conftest import ingest_and_land, write
from serve_helpers import READ_TOKEN, WRITE_TOKEN, ops_repository, running, write_config
from test_hybrid import HashingEmbedder

from indexes.embedding import embedders
from wiki.review.proposals import list_proposals
from wiki.store.workspace import Wiki

WAIT = 60
"""Seconds a test waits for an event before it fails (never reached when it passes)."""


class MeetingEmbedder(HashingEmbedder):
    """The hashing embedder, except that encoding a query with the word ``meet`` waits on
    ``meeting`` (two such calls pass only together), and the first query with the word
    ``park`` sets ``parked`` and waits for ``release``."""

    def __init__(self) -> None:
        super().__init__("fake-meet")
        self.meeting = threading.Barrier(2, timeout=WAIT)
        self.parked, self.release = threading.Event(), threading.Event()

    def encode(self, texts):
        words = set(" ".join(texts).lower().split())
        if "meet" in words:
            self.meeting.wait()
        if "park" in words and not self.parked.is_set():
            self.parked.set()
            self.release.wait(WAIT)
        return super().encode(texts)


@pytest.fixture
def model(monkeypatch) -> MeetingEmbedder:
    embedder = MeetingEmbedder()
    embedders.register(embedder.name, lambda: embedder)
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedder.name)
    return embedder


@pytest.fixture
def config(wiki: Wiki, repo: Path, tmp_path: Path, model) -> Path:
    """The handbook (leave and Tock entries), indexed with vectors before serving."""
    from wiki.answering.search import search_for

    write(repo / "docs" / "leave.md", "---\ntitle: Annual leave\n---\n"
          "Annual leave is requested in HR Links at least two weeks ahead.\n")
    write(repo / "docs" / "tock.md", "# Tock\n\nTock line #670 is for time out of office.\n")
    ingest_and_land(wiki, repo / "docs")
    search_for(wiki, "tock")  # chunks embedded now, not by the calls under test
    return write_config(tmp_path / "serve.toml", {"handbook": repo,
                                                  "ops": ops_repository(tmp_path)})


def _post(base: str, path: str, body: dict, token: str = READ_TOKEN) -> httpx.Response:
    return httpx.post(f"{base}{path}", json=body, timeout=WAIT * 2,
                      headers={"Authorization": f"Bearer {token}"})


def _in_thread(work) -> tuple[threading.Thread, list]:
    out: list = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    return thread, out


def test_two_reads_of_one_repository_overlap(config: Path, model: MeetingEmbedder) -> None:
    """Two searches of one repository meet inside the embedding model: each waits on a
    barrier that only both together pass. Calls that took turns (before) broke it: the
    first waited alone until its time ran out and both failed."""
    with running(config) as base:
        calls = [_in_thread(lambda: _post(base, "/v1/repos/handbook/search",
                                          {"query": "tock meet"})) for _ in range(2)]
        for thread, _ in calls:
            thread.join(WAIT * 2)
    answers = [out[0] for _, out in calls]
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
    assert not model.meeting.broken
    assert all(a.json()["hits"][0]["title"] == "Tock" for a in answers)


def test_a_proposal_waits_for_the_reads_and_the_answer_names_one_commit(
        config: Path, wiki: Wiki, repo: Path, model: MeetingEmbedder) -> None:
    """A search is held inside the model (after its lexical legs read the index at H1).
    Meanwhile (1) a proposal over REST waits for the repository's lock, and has written
    nothing, until the read ends; (2) an edit of the Tock entry lands (H2), and landing
    syncs the index. The held search then sees the index at H2: it searches again, so its
    answer names H2 and shows H2's title, never H1's commit with H2's rows."""
    from wiki.serve.config import load_config
    from wiki_cli.serve_http import build_app
    from wiki_cli.tool_calls import RepoLock

    first = wiki.head()
    app = build_app(load_config(config), warm=False)
    lock: RepoLock = app.app.app.served["handbook"].tools.lock
    with running(config, app=app) as base:
        read, read_out = _in_thread(lambda: _post(base, "/v1/repos/handbook/search",
                                                  {"query": "tock park"}))
        assert model.parked.wait(WAIT)
        proposal, proposal_out = _in_thread(lambda: _post(
            base, "/v1/repos/handbook/propose", {"kind": "new", "category": "facilities",
                                                 "content": "# Parking\n\nPermits at the "
                                                            "front desk.\n"}, WRITE_TOKEN))
        deadline = time.monotonic() + WAIT
        while lock.writers_waiting == 0:  # the proposal reached the lock and waits there
            assert time.monotonic() < deadline, "the proposal never reached the lock"
            time.sleep(0.01)
        assert list_proposals(wiki) == []  # it waits: nothing written yet
        write(repo / "docs" / "tock.md", "# Tock timesheets\n\nTock line #999 is for time "
              "out of office.\n")
        landed = ingest_and_land(wiki, repo / "docs")
        second = wiki.head()
        model.release.set()
        read.join(WAIT * 2)
        proposal.join(WAIT * 2)
    answer, proposed = read_out[0], proposal_out[0]
    assert landed.proposal is not None and second != first
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["commit"] == second and answer.headers["X-Wiki-Commit"] == second
    assert body["hits"][0]["title"] == "Tock timesheets"
    assert proposed.status_code == 200, proposed.text
    assert proposed.json()["created"] is True
    assert [p.name for p in list_proposals(wiki)] == [proposed.json()["proposal"]]


def test_repo_lock_readers_share_and_a_writer_is_alone() -> None:
    """Three readers hold the lock together (they meet at a barrier inside it); a writer
    waits for them, and a reader that comes while a writer waits goes after the writer."""
    from wiki_cli.tool_calls import RepoLock

    lock, order = RepoLock(), []
    inside = threading.Barrier(4, timeout=WAIT)  # three readers and the test
    leave = threading.Event()

    def reader(name: str, wait_inside: bool) -> None:
        with lock.shared():
            order.append(name)
            if wait_inside:
                inside.wait()
                leave.wait(WAIT)

    readers = [threading.Thread(target=reader, args=(f"r{i}", True)) for i in range(3)]
    for thread in readers:
        thread.start()
    inside.wait()  # all three are inside at once

    def writer() -> None:
        with lock:
            order.append("w")

    wrote = threading.Thread(target=writer)
    wrote.start()
    deadline = time.monotonic() + WAIT
    while lock.writers_waiting == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    late = threading.Thread(target=reader, args=("late", False))
    late.start()
    leave.set()
    for thread in (*readers, wrote, late):
        thread.join(WAIT)
    assert sorted(order[:3]) == ["r0", "r1", "r2"]
    assert order[3:] == ["w", "late"]
    assert lock.acquire(blocking=False)  # free again
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
