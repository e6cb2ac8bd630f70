"""Every input a user can name is bounded (issue 25, item 7): a file named to ``wiki
propose`` (or ``wiki serve --config``) that is a FIFO, a device or a link to one is refused
without reading it; the state logs (``gaps.jsonl``, ``feedback.jsonl``) are regular files
or a one-line error; one ``[llm] timeout`` bounds a whole model call, however slowly the
provider sends; the embedding server closes a connection that sends nothing.

A case that blocked on the old code (a FIFO) runs in a thread joined with a generous limit,
so the old code fails the test instead of hanging it; the FIFO cases run before the
``/dev/zero`` ones, which the old code read until memory ran out."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest
from conftest import write

from tests.memory_helpers import entry, land
from wiki.errors import FileTooLargeError, NotRegularFileError
from wiki.files import append_regular, read_regular
from wiki.review.proposals import list_proposals
from wiki.store.workspace import Wiki
from wiki_cli.errors import USAGE

GENEROUS = 60.0
"""Seconds a call that must not block is given before the test calls it blocked (the
calls here take well under a second; the limit only keeps a regression from hanging)."""


def _finished(call, *args):
    """``call(*args)`` run in a thread joined for :data:`GENEROUS` seconds: its result, or
    a failure saying it did not return (blocked on a FIFO, reading a device)."""
    box: dict = {}

    def run() -> None:
        try:
            box["result"] = call(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GENEROUS)
    if thread.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)}{args} did not return: it blocked")
    if "error" in box:
        raise box["error"]
    return box["result"]


def _release(fifo: Path) -> None:
    """Open ``fifo`` at both ends once, so a reader or writer the old code left blocked
    on it returns (the test fails either way; the thread must not outlive it)."""
    try:
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(writer)
        os.close(reader)
    except OSError:
        pass


def _one_error(result, *words: str) -> str:
    """The single stderr line of a command refused with exit 2, holding ``words``."""
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == USAGE, (result.exit_code, result.output)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


# -- kind: a file a user names is a regular file, read within a bound --------------------------

def test_read_regular_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.md"
    folder.mkdir()
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "socket.md"))
    try:
        for path, kind in [(fifo, "a FIFO"), (folder, "a directory"),
                           (tmp_path / "socket.md", "a socket"),
                           (Path("/dev/zero"), "a character device"),
                           (link, "a character device")]:
            with pytest.raises(NotRegularFileError) as refused:
                _finished(read_regular, path, 1000)
            assert refused.value.kind == kind, (path, refused.value)
            assert str(path) in str(refused.value) and "not a regular file" in str(refused.value)
    finally:
        listener.close()
    assert "a symbolic link to a character device (/dev/zero)" in str(refused.value)
    text = write(tmp_path / "ok.md", "x" * 1000)
    assert read_regular(text, 1000) == b"x" * 1000
    with pytest.raises(FileTooLargeError, match="1,000 bytes, over the limit of 999 bytes"):
        read_regular(text, 999)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "missing.md", 1000)


def test_propose_refuses_a_fifo_and_a_link_to_a_device_in_one_line(cli, wiki: Wiki,
                                                                   repo: Path,
                                                                   tmp_path: Path) -> None:
    """The old code waited for a writer on the FIFO for ever and read ``/dev/zero`` until
    memory ran out; both are exit 2 now, naming the path and what it is."""
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    try:
        result = _finished(cli, "propose", str(fifo))
    finally:
        _release(fifo)
    _one_error(result, str(fifo), "is a FIFO, not a regular file")
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    _one_error(_finished(cli, "propose", str(link)), str(link),
               "is a symbolic link to a character device (/dev/zero), not a regular file")
    _one_error(_finished(cli, "propose", "/dev/zero"), "/dev/zero",
               "is a character device, not a regular file")
    assert list_proposals(wiki) == []


def test_propose_reads_stdin_up_to_the_limit_the_review_can_scan(cli, wiki: Wiki) -> None:
    """``wiki propose -`` fed more than the review check reads (16.5 MB by default) stops
    reading there: a larger entry could never land (R006 is not overridable)."""
    from wiki.knowledge.authoring import file_limit

    limit = file_limit(wiki)
    assert limit == (2_000_000 + 65_536) * 8
    result = cli("propose", "-", input="# Big\n\n" + "a" * limit)
    _one_error(result, "stdin", f"more than the limit of {limit:,} bytes", "[ingest] max_bytes")


def test_serve_config_that_is_a_fifo_is_one_line(runner, tmp_path: Path) -> None:
    from wiki_cli.app import app

    fifo = tmp_path / "serve.toml"
    os.mkfifo(fifo)
    try:
        result = _finished(runner.invoke, app, ["serve", "--config", str(fifo)])
    finally:
        _release(fifo)
    _one_error(result, str(fifo), "is a FIFO, not a regular file")


# -- kind: the state logs are regular files, or a one-line error --------------------------------

@pytest.mark.parametrize("kind", ["directory", "FIFO"])
def test_state_logs_that_are_not_files_are_one_line(cli, wiki: Wiki, kind: str) -> None:
    """A directory there was exit 70 (an internal error); a FIFO blocked ``wiki ask`` (an
    append waits for a reader) and ``wiki gaps`` (a read waits for a writer) for ever."""
    land(wiki, {"ops/restart.md": entry("e-run", "Restart the pager", "Restart the pager "
                                        "from the admin console.", type="procedure")})
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    gaps, feedback = wiki.state_dir / "gaps.jsonl", wiki.state_dir / "feedback.jsonl"
    for path in (gaps, feedback):
        path.mkdir() if kind == "directory" else os.mkfifo(path)
    said = f"is a {kind}, not a regular file" if kind == "FIFO" else \
        "is a directory, not a regular file"
    try:
        _one_error(_finished(cli, "ask", "what colour is the zebra crossing?"),
                   str(gaps), said)
        _one_error(_finished(cli, "gaps"), str(gaps), said)
        _one_error(_finished(cli, "feedback", "ops/restart.md", "worked"), str(feedback), said)
    finally:
        for path in (gaps, feedback):
            if kind == "FIFO":
                _release(path)


def test_append_regular_appends_and_creates(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_regular(log, "one\n")
    append_regular(log, "two\n")
    assert log.read_text() == "one\ntwo\n"
    link = tmp_path / "null.jsonl"
    link.symlink_to("/dev/null")
    with pytest.raises(NotRegularFileError, match="a symbolic link to a character device"):
        append_regular(link, "three\n")


# -- kind: one [llm] timeout for the whole model call, however slowly the provider sends ---------

TRICKLE_GAP = 0.5
TRICKLE_TIMEOUT = 8
"""The model timeout the trickle tests set (s): long enough that the request reaches the
provider on a loaded machine (2 s did not, once, with every core busy: the deadline came
before the call was sent), short against the days the old code waited."""
"""Seconds between the bytes the trickling provider sends: well under the 2 s timeout, so
no single read waits long enough to trip a per-read timeout."""


@pytest.fixture
def trickle(monkeypatch):
    """An OpenAI-compatible provider on 127.0.0.1 that answers every POST with a 200 and a
    1 MB ``Content-Length``, then sends the body one byte every :data:`TRICKLE_GAP`
    seconds until the test ends; selected as the model ``openai/trickle``. Yields the
    paths of the requests received."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from wiki.llm import backend

    stop, received = threading.Event(), []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(1 << 20))
            self.end_headers()
            body = b'{"id": "x", "object": "chat.completion", "choices": [' + b" " * (1 << 20)
            for byte in body:
                if stop.wait(TRICKLE_GAP):
                    return
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return

        def log_message(self, *args) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_BASE", f"http://127.0.0.1:{server.server_port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("WIKI_MODEL", "openai/trickle")
    backend.litellm()
    try:
        yield received
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        for thread in threading.enumerate():  # the calls the client gave up on end now
            if thread.name == "wiki-llm-call":
                thread.join(GENEROUS)


def test_a_trickling_provider_is_cut_off_at_the_llm_timeout(trickle, wiki: Wiki) -> None:
    """httpx's timeout is per read, and a byte every half second resets it: the old code
    waited for the whole megabyte (days). One deadline for the whole call now: the
    client raises the timeout error (the join below only keeps the old code from hanging
    the suite; no time is asserted)."""
    from wiki.llm.client import LLMClient
    from wiki.llm.errors import LLMTimeoutError

    client = LLMClient("openai/trickle", timeout=TRICKLE_TIMEOUT)
    with pytest.raises(LLMTimeoutError, match=f"no answer within {TRICKLE_TIMEOUT:.1f} s"):
        _finished(client.complete, [{"role": "user", "content": "hello"}])
    assert trickle == ["/v1/chat/completions"]
    assert client.usage.timeouts == 1 and client.usage.errors == 1


ENTRIES = {
    "travel/per-diem.md": entry(
        "pd", "Per diem", "Per diem covers meals and incidental expenses on travel days. "
        "The first and last travel day pay 75 percent of the daily rate.",
        summary="Daily meal money."),
    "travel/lodging.md": entry(
        "lg", "Lodging", "Lodging is booked through the travel portal before the trip. "
        "The travel day hotel rate follows the federal table.", summary="Hotels."),
    "hr/leave.md": entry("lv", "Annual leave", "Employees earn annual leave every pay "
                         "period.", summary="Vacation days."),
}


def test_ask_with_a_trickling_provider_gives_the_extractive_answer(trickle, cli,
                                                                   wiki: Wiki) -> None:
    """Through ``[llm] timeout`` in wiki.toml, as a user sets it: ``wiki ask`` answers
    from the entries with a note instead of waiting for the provider."""
    text = (wiki.store.read_path(wiki.require_head(), "wiki.toml").decode()
            + f"\n[llm]\ntimeout = {TRICKLE_TIMEOUT}\n")
    land(wiki, {"wiki.toml": text, **ENTRIES}, override="the model's timeout (R009)")
    result = _finished(cli, "ask", "how much per diem is paid on the first travel day?")
    assert result.exit_code == 0, result.output
    assert "75 percent of the daily rate. [1]" in result.stdout
    assert "note: the model did not answer" in result.stderr
    assert f"[llm] timeout = {TRICKLE_TIMEOUT} s" in result.stderr
    assert trickle == ["/v1/chat/completions"]


# -- kind: the embedding server closes a connection that sends nothing ---------------------------

def test_the_embedding_server_closes_an_idle_connection(vectors_on, monkeypatch) -> None:
    """Each connection had a thread that waited for its next line for ever: a client (or a
    crash) leaving connections open and silent piled up threads in the shared server. A
    connection idle for ``CONNECTION_IDLE_SECONDS`` is closed now; one that asks at once
    is answered as before."""
    import json
    import tempfile

    from indexes.embedding import embed_service, embedders

    monkeypatch.setattr(embed_service, "CONNECTION_IDLE_SECONDS", 0.5)
    with tempfile.TemporaryDirectory(prefix="wiki-idle-") as folder:  # a short socket path
        path = Path(folder) / "embed.sock"
        server = embed_service._Server(path, embedders.load("fake-hash"))
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        try:
            with socket.socket(socket.AF_UNIX) as asking:
                asking.settimeout(GENEROUS)
                asking.connect(str(path))
                asking.sendall(b'{"op": "ping"}\n')
                assert json.loads(asking.makefile("rb").readline())["ok"] is True
            with socket.socket(socket.AF_UNIX) as idle:
                idle.settimeout(GENEROUS)  # only so the old code fails instead of hanging
                idle.connect(str(path))
                try:
                    closed = idle.recv(1) == b""
                except TimeoutError:
                    closed = False
            assert closed, "the server kept an idle connection open"
        finally:
            server.shutdown()
            server.server_close()
