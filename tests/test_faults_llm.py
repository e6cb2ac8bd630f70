"""A model that accepts the connection and never answers (issue 15, part 6).

The provider is a real socket on 127.0.0.1 that accepts connections and never writes a
byte; litellm reaches it as an OpenAI-compatible server (``OPENAI_API_BASE``), so the
deadline tested is the real one of the HTTP client, not a mock. ``[llm] timeout`` is one
deadline for all the model calls of a command; after it the extractive answer is given
with a note. The wall-time bounds below are the documented contract (timeout + 2 s), not
performance targets.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import entry_text

from tests.memory_helpers import land
from wiki.llm import backend
from wiki.llm.client import LLMClient
from wiki.llm.errors import LLMTimeoutError
from wiki.llm.usage import Deadline
from wiki.store.workspace import Wiki

TIMEOUT = 2
BOUND = TIMEOUT + 2
QUESTION = "how much per diem is paid on the first travel day?"
ENTRIES = {
    "travel/per-diem.md": entry_text(
        "pd", "Per diem", "Per diem covers meals and incidental expenses on travel days. "
        "The first and last travel day pay 75 percent of the daily rate.",
        summary="Daily meal money."),
    "travel/lodging.md": entry_text(
        "lg", "Lodging", "Lodging is booked through the travel portal before the trip. "
        "The travel day hotel rate follows the federal table.", summary="Hotels."),
    "hr/leave.md": entry_text("lv", "Annual leave", "Employees earn annual leave every pay "
                              "period.", summary="Vacation days."),
}


@dataclass
class Silent:
    """A server that accepts connections and never answers: ``url`` and the sockets
    ``accepted`` so far (each one a request the client sent)."""

    url: str
    accepted: list[socket.socket] = field(default_factory=list)


@pytest.fixture
def silent(monkeypatch) -> Iterator[Silent]:
    """The silent server, selected as the model ``openai/stuck``."""
    listener = socket.create_server(("127.0.0.1", 0))
    state = Silent(f"http://127.0.0.1:{listener.getsockname()[1]}/v1")

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            state.accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_BASE", state.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("WIKI_MODEL", "openai/stuck")
    backend.litellm()  # imported before the clock starts, as in any test that has run one
    try:
        yield state
    finally:
        listener.close()
        for conn in state.accepted:
            conn.close()


def _build_populated(wiki: Wiki, repo: Path) -> None:
    text = (wiki.store.read_path(wiki.require_head(), "wiki.toml").decode()
            + f"\n[llm]\ntimeout = {TIMEOUT}\n")
    land(wiki, {**ENTRIES, "wiki.toml": text})


@pytest.fixture
def populated(from_template) -> Wiki:
    return from_template(_build_populated)


def timed(run, *args: str):
    started = time.monotonic()
    result = run(*args)
    return result, time.monotonic() - started


def test_ask_gives_the_extractive_answer_with_a_note_within_the_timeout(
        populated, silent, cli) -> None:
    run, seconds = timed(cli, "ask", QUESTION)
    assert run.exit_code == 0, run.output
    assert "75 percent of the daily rate. [1]" in run.stdout
    assert "note: the model did not answer" in run.stderr
    assert f"[llm] timeout = {TIMEOUT} s" in run.stderr
    assert len(silent.accepted) == 1  # asked once: no retry
    assert seconds < BOUND, seconds


def test_the_deadline_is_one_for_every_model_call_of_the_command(
        populated, silent, cli) -> None:
    """The walk, the rerank and the answer would each call the model; after the first
    call used up the deadline, the others are not sent at all."""
    run, seconds = timed(cli, "ask", QUESTION, "--legs", "bm25,llm", "--rerank", "--json")
    assert run.exit_code == 0, run.output
    assert '"mode": "extractive"' in run.stdout
    assert "75 percent of the daily rate." in run.stdout
    assert "for this command is spent; nothing sent" in run.stdout
    assert len(silent.accepted) == 1
    assert seconds < BOUND, seconds


def test_search_with_the_llm_leg_falls_back_to_the_other_legs(populated, silent, cli) -> None:
    run, seconds = timed(cli, "search", "per diem meals", "--legs", "bm25,llm")
    assert run.exit_code == 0, run.output
    assert "travel/per-diem.md" in run.stdout
    assert "note: llm walk:" in run.stderr
    assert seconds < BOUND, seconds


def test_each_ask_of_a_long_lived_wiki_has_its_own_deadline(populated, silent) -> None:
    """Library use (evals ask many questions of one ``Wiki``): the deadline is one
    question's, not the object's lifetime."""
    from wiki.answering.ask import ask_for

    for _ in range(2):
        answer, seconds = timed(ask_for, populated, QUESTION)
        assert answer.mode == "extractive" and "did not answer" in answer.note
        assert seconds < BOUND, seconds
    assert len(silent.accepted) == 2


def test_a_client_without_a_shared_deadline_times_out_each_call_once(silent) -> None:
    client = LLMClient("openai/stuck", timeout=1)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError, match="no answer within 1.0 s"):
        client.complete([{"role": "user", "content": "hello"}])
    assert time.monotonic() - started < 1 + 2
    assert len(silent.accepted) == 1 and client.usage.errors == 1
    assert client.usage.timeouts == 1  # what a named llm leg reads as 'may answer next time'


def test_a_spent_deadline_refuses_the_next_call_without_sending_it(silent) -> None:
    deadline = Deadline(0.5)
    first = LLMClient("openai/stuck", timeout=30, deadline=deadline)
    second = LLMClient("openai/stuck", timeout=30, deadline=deadline)
    with pytest.raises(LLMTimeoutError):
        first.complete([{"role": "user", "content": "one"}])
    with pytest.raises(LLMTimeoutError, match="0.5 s for this command is spent"):
        second.complete([{"role": "user", "content": "two"}])
    assert len(silent.accepted) == 1 and second.usage.calls == 0
    assert second.usage.errors == second.usage.timeouts == 1  # a timeout, not a failure


def test_the_deadline_starts_with_the_first_call_sent() -> None:
    deadline = Deadline(5)
    time.sleep(0.01)
    assert deadline.remaining() == 5
    deadline.start()
    assert 4 < deadline.remaining() < 5
