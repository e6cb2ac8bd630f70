"""What reaches the terminal (docs/security.md): stored text that landed with terminal control
sequences or secrets is shown inertly and masked by every command that prints it, in text
and JSON, and by the MCP tools; credentials in connection URLs are a secret kind.

The hostile entries are written straight onto the wiki branch (as a hand edit or an old
landing would be), past the write-time screen: that is the threat. Secret-looking strings
are built at run time (see test_safety.rand).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import anyio
import pytest
from conftest import ALICE, git
from rich.text import Text
from test_safety import rand

from wiki.review.proposals import propose
from wiki.safety.scan import scan
from wiki.store.snapshot import write_commit
from wiki.store.workspace import Wiki
from wiki_cli.inert import inert, json_text
from wiki_cli.render import InertConsole, json_document

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What must never reach a terminal from stored text."""

CLEAR = "\x1b[2J\x1b[H"  # clear the screen, cursor home
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: write to the reader's clipboard
LINK = "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"  # OSC 8 hyperlink
C1_CSI = "\x9b31m"  # an 8-bit CSI
BIDI = "\u202edetacilpud\u202c \u2066x\u2069"  # right-to-left override, an isolate
CR = "innocent\rOVERWRITTEN"


def token() -> str:
    return "ghp_" + rand(36, seed=23)


def db_password() -> str:
    return rand(14, seed=29)


def db_url() -> str:
    return f"postgres://billing:{db_password()}@db.internal:5432/billing"


def put_on_branch(w: Wiki, files: dict[str, str], message: str = "by hand\n") -> str:
    """Commit ``files`` straight onto the wiki branch (no proposal, no screen)."""
    head = w.require_head()
    commit = write_commit(w.snapshot(head), {p: t.encode() for p, t in files.items()},
                          message, author=ALICE)
    w.store.update_ref(w.ref, commit, head, "test")
    return commit


def hostile_entry() -> str:
    # YAML double quotes spell ESC as \e, BEL as \a: the title holds the raw characters
    title = r'"Billing database \e[2J\e]52;c;cm0gLXJmIH4=\a \u202eguide\u202c"'
    return ("---\nid: e0000hostile\n"
            f"title: {title}\n"
            "summary: How to reach the billing database.\n"
            "type: procedure\n---\n"
            f"Connect to the billing database with {db_url()} from the jump host.{CLEAR}\n\n"
            f"The billing deploy bot uses the token {token()} for the billing database.\n\n"
            f"Billing database backups run nightly {LINK} {C1_CSI}at two {BIDI}.\n\n"
            f"The billing database owner is {CR} the data team.\n")


@pytest.fixture
def hostile(wiki: Wiki) -> Wiki:
    put_on_branch(wiki, {"ops/billing-db.md": hostile_entry()})
    return wiki


def assert_inert(result, *, secrets: bool = True) -> None:
    """No raw control character on stdout or stderr; no secret either."""
    for stream in (result.stdout, result.stderr):
        assert not RAW.search(stream), repr(RAW.search(stream))
        if secrets:
            assert token() not in stream and db_password() not in stream


# -- the sanitiser --------------------------------------------------------------------------

def test_controls_are_shown_as_escape_text_and_tab_newline_kept() -> None:
    assert inert(f"a{CLEAR}b") == "a\\x1b[2J\\x1b[Hb"
    assert inert(CR) == "innocent\\x0dOVERWRITTEN"
    assert inert("\x9b\x7f\x00") == "\\x9b\\x7f\\x00"
    assert inert(BIDI) == "\\u202edetacilpud\\u202c \\u2066x\\u2069"
    assert inert("tab\there\nnew line é ü 中 \u200d") == "tab\there\nnew line é ü 中 \u200d"
    assert inert(inert(CLIPBOARD)) == inert(CLIPBOARD)  # inert text stays as it is


def test_json_keeps_the_exact_value_with_nothing_raw() -> None:
    value = {"title": f"x{CLEAR}{C1_CSI}{BIDI}\x7f", "n": 1, "ok": "ä ß"}
    document = json_document(value)
    assert not RAW.search(document)
    assert json.loads(document) == value
    assert "\\u009b" in document and "\\u202e" in document and "ä ß" in document
    assert json_text('"\u2066"') == '"\\u2066"'


def test_the_console_backstop_escapes_a_text_that_skipped_plain() -> None:
    buffer = io.StringIO()
    console = InertConsole(file=buffer, force_terminal=True, color_system="standard",
                           highlight=False,
                           width=200)
    console.print(Text(f"forgot {CLEAR} plain", style="bold"))
    console.print(f"[link=https://evil.example]markup[/link] {C1_CSI}")
    written = buffer.getvalue()
    assert "\x1b[1m" in written  # rich's own styling still works on a terminal
    assert "\\x1b[2J" in written and "\x1b[2J" not in written and "\x9b" not in written
    assert "[link=https://evil.example]markup[/link]" in written  # no markup from text
    assert "\x1b]8" not in written


# -- every command that shows stored text -----------------------------------------------------

def test_search_shows_titles_inertly_and_masks(cli, hostile: Wiki) -> None:
    result = cli("search", "billing database")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07" in result.stdout
    assert "\\u202eguide\\u202c" in result.stdout


def test_search_json_escapes_and_masks(cli, hostile: Wiki) -> None:
    result = cli("search", "billing database", "--json")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    title = json.loads(result.stdout)["hits"][0]["title"]
    assert "\x1b[2J" in title and "\u202e" in title  # the exact value, escaped in JSON


def test_ask_masks_secrets_in_the_extractive_answer(cli, hostile: Wiki) -> None:
    result = cli("ask", "which token does the billing deploy bot use?")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert "uses the token [REDACTED:github-token] for" in result.stdout
    assert "[1] Billing database \\x1b[2J\\x1b]52;c;" in result.stdout  # the citation
    assert "warning: 1 secret masked in the output" in result.stderr
    url = cli("ask", "how do I connect to the billing database from the jump host?")
    assert url.exit_code == 0, url.output
    assert_inert(url)
    assert "postgres://billing:[REDACTED:connection-string]@db.internal" in url.stdout
    assert "jump host.\\x1b[2J\\x1b[H" in url.stdout
    assert url.stderr.count("masked in the output") == 1


def test_ask_json_masks_and_escapes(cli, hostile: Wiki) -> None:
    result = cli("ask", "which token does the billing deploy bot use?", "--json")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    data = json.loads(result.stdout)
    text = " ".join(s["text"] for s in data["sentences"])
    assert "[REDACTED:github-token]" in text
    assert "secret" in result.stderr and "masked" in result.stderr


def test_show_prints_the_entry_inertly_and_masked(cli, hostile: Wiki) -> None:
    for target in ("ops/billing-db.md", "e0000hostile"):
        result = cli("show", target)
        assert result.exit_code == 0, result.output
        assert_inert(result)
        out = result.stdout
        assert "\\x1b]8;;https://evil.example/\\x1b\\docs" in out
        assert "\\x9b31m" in out and "innocent\\x0dOVERWRITTEN" in out
        assert "[REDACTED:github-token]" in out
        assert "warning: 2 secrets masked in the output" in result.stderr
    as_json = cli("show", "e0000hostile", "--json")
    assert_inert(as_json)
    body = json.loads(as_json.stdout)["body"]
    assert CLEAR in body and "[REDACTED:connection-string]" in body


def test_a_clean_output_says_nothing_about_masking(cli, hostile: Wiki) -> None:
    result = cli("search", "nightly backups")
    assert result.exit_code == 0 and "masked" not in result.stderr


def test_history_and_log_show_commit_text_inertly(cli, hostile: Wiki) -> None:
    put_on_branch(hostile, {"ops/note.md": "---\ntitle: Note\n---\nA note.\n"},
                  f"Hand edit {CLEAR}{BIDI}\n\nProposed-by: Mallory {CLIPBOARD}\n"
                  f"Approved-by: {C1_CSI} <m@example.com>\n")
    for args in (("log",), ("log", "--json"), ("history", "e0000hostile"),
                 ("history", "e0000hostile", "--json")):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert_inert(result)
    shown = cli("log").stdout
    assert "\\x1b[2J" in shown and "Mallory \\x1b]52;c;" in shown and "\\x9b31m" in shown
    assert json.loads(cli("log", "--json").stdout)[0]["subject"].startswith(
        f"Hand edit {CLEAR}")


def test_proposals_and_diff_show_subjects_and_changes_inertly(cli, hostile: Wiki) -> None:
    snapshot = hostile.snapshot()
    text = snapshot.read("ops/billing-db.md").decode().replace("nightly", f"hourly {CLEAR}")
    proposal = propose(hostile, {"ops/billing-db.md": text.encode()}, base=None, kind="edit",
                          subject=f"Fix backups {CLIPBOARD}{BIDI}", author=ALICE).proposal
    for args in (("proposals",), ("proposals", "--json"), ("diff", proposal.name),
                 ("diff", proposal.name, "--json")):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert_inert(result)
    listed = cli("proposals").stdout
    assert "Fix backups \\x1b]52;c;cm0gLXJmIH4=\\x07\\u202edetacilpud" in listed
    diffed = cli("diff", proposal.name).stdout
    assert "hourly \\x1b[2J" in diffed


def test_stderr_talk_is_inert_too(cli, hostile: Wiki) -> None:
    """Relations are reported on stderr with the linked entry's title."""
    put_on_branch(hostile, {"ops/linked.md": "---\nid: e0000linked\ntitle: Linked\n"
                                             "relations:\n  related_to: [e0000hostile]\n"
                                             "---\nLinked.\n"})
    result = cli("show", "e0000linked")
    assert result.exit_code == 0, result.output
    assert_inert(result)
    assert "\\x1b[2J" in result.stderr


# -- MCP ------------------------------------------------------------------------------------

def test_mcp_results_are_masked(hostile: Wiki, repo: Path) -> None:
    from wiki_cli.mcp_server import build_server

    server, _ = build_server(repo)

    async def calls():
        return [await server.call_tool(name, args) for name, args in (
            ("get", {"target": "e0000hostile"}),
            ("search", {"query": "billing database"}),
            ("ask", {"question": "which token does the billing deploy bot use?"}))]

    for result in anyio.run(calls):
        data = result.structured_content
        dumped = json.dumps(data, ensure_ascii=False)
        assert token() not in dumped and db_password() not in dumped, result
    got = anyio.run(calls)[0].structured_content
    assert "[REDACTED:github-token]" in got["body"]
    assert "[REDACTED:connection-string]" in got["body"]
    answer = anyio.run(calls)[2].structured_content["answer"]
    assert "[REDACTED:github-token]" in answer


# -- the connection-URL secret kind ---------------------------------------------------------

URL_SECRETS = [
    "postgres://billing:{pw}@db.internal:5432/billing",
    "postgresql://app:{pw}@10.0.0.5/prod?sslmode=require",
    "mongodb+srv://bob:{pw}@cluster0.abcde.mongodb.net/test",
    "https://deploy:{pw}@git.example.com/team/repo.git",
    "redis://:{pw}@cache:6379/0",  # no user, only a password
    "amqp://svc:{pw}@rabbit/vhost",
    "see `mysql://root:{pw}@db` in the runbook",
]
URL_CLEAN = [
    "postgres://u:p@h",  # one letter each: a stand-in, too uniform to be a credential
    "postgres://user:password@localhost/db",
    "https://user:token@host/path",
    "postgres://postgres:mysecretpassword@localhost",  # the image's documented example
    "amqp://guest:guest@localhost:5672",  # the published default: user name again
    "mysql://root:${DB_PASSWORD}@db/app",
    "postgres://app:<password>@db/app",
    "https://user:****@host",
    "postgres://app:%(password)s@db",
    "ssh://git@example.com:22/repo.git",  # a user, no password
    "https://bob@example.com/",
    "http://localhost:8080/path?next=a@b",  # a port, then an @ after the path
    "https://example.com/a:b@c",
    "ftp://anonymous:@files.example.com",  # empty password
    "mail bob@example.com at 10:30",
]


@pytest.mark.parametrize("template", URL_SECRETS)
def test_a_password_in_a_url_is_a_secret(template: str) -> None:
    pw = rand(12, seed=len(template)) + "#9"
    text = template.format(pw=pw)
    found = [f for f in scan(text) if f.category == "secret"]
    assert [(f.kind, text[f.start:f.end]) for f in found] == [("connection-string", pw)]


def test_an_unencoded_at_sign_in_the_password_is_masked_whole() -> None:
    text = "postgres://app:" + "p@ss" + rand(8, seed=3) + "@db/app"
    (finding,) = scan(text)
    assert text[finding.start:finding.end] == text[15:text.rindex("@")]


@pytest.mark.parametrize("text", URL_CLEAN)
def test_a_url_without_a_real_password_is_not(text: str) -> None:
    assert [f for f in scan(text) if f.category == "secret"] == []


def test_the_write_time_screen_refuses_a_url_password(cli, wiki: Wiki, tmp_path: Path) -> None:
    entry = tmp_path / "db.md"
    entry.write_text(f"---\ntitle: DB\n---\nUse {db_url()} to connect.\n")
    result = cli("propose", str(entry))
    assert result.exit_code == 5, result.output
    assert "secret (connection-string)" in result.stderr
    assert db_password() not in result.stderr


# -- no command can forget ------------------------------------------------------------------

def test_commands_write_only_through_render() -> None:
    """Stored text reaches stdout/stderr only through wiki_cli.render and report(): no
    command module writes to a stream or builds rich Text itself."""
    root = Path(__file__).parent.parent / "wiki_cli"
    allowed = {"render.py", "inert.py", "errors.py"}
    bad = re.compile(r"\bText\(|sys\.std(?:out|err)\.write|\.file\.write|typer\.echo\(|"
                     r"(?<![\w.])print\(")
    offenders = [f"{path.name}:{n}: {line.strip()}"
                 for path in sorted(root.glob("*.py")) if path.name not in allowed
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if bad.search(line)
                 # the entry points' Ctrl-C before anything is imported: one fixed word;
                 # `wiki --version` before the app is built: the package's own constant
                 and line.strip() != 'sys.stderr.write("interrupted\\n")'
                 and not line.strip().startswith('sys.stdout.write(f"wiki {__version__}\\n")')]
    assert offenders == []


def test_git_plumbing_left_the_raw_bytes_for_whoever_needs_them(hostile: Wiki,
                                                                repo: Path) -> None:
    """``git show wiki:PATH`` is the way to the exact bytes (docs/security.md)."""
    assert CLEAR in git(repo, "show", "wiki:ops/billing-db.md")
