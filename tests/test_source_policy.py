"""The reader-side source policy (DESIGN.md §10, docs/security.md "Reading sources"): an
entry's ``sources:`` never make a reader's machine read local files or internal addresses
the reader did not allow, in the adapters and through `wiki ask`, `wiki lint`, the hook
and the MCP tools. Real files, real git repositories, real servers on 127.0.0.1; the
resolver (``socket.getaddrinfo``, the standard library's) is replaced where a test needs a
public-looking name, and ``socket.create_connection`` is watched to prove that a refusal
comes before any connection."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import ALICE, entry_text, git, ingest_and_land, write

from wiki.adapters import Recorded, SourceEnv, SourcePolicy, Sources, sources_for
from wiki.adapters.sources import fingerprint
from wiki.config import WikiConfig
from wiki.errors import ConfigError, SourceNotAllowedError
from wiki.ingest.pipeline import ingest
from wiki.review.proposals import list_proposals
from wiki.store.snapshot import write_commit
from wiki.store.workspace import Wiki

SECRET = "TOPSECRET-7f3a the reader's private text"
BODY = "Annual leave is requested in the HR portal at least two weeks ahead."
QUESTION = "how is annual leave requested?"
STALE = "sha256:" + "0" * 64  # a recorded fingerprint that never matches: forces a re-read


# -- helpers ---------------------------------------------------------------------------------

@dataclass
class Server:
    """A server on 127.0.0.1: ``routes`` path -> (status, body, Location), ``seen`` the
    (path, Host header) of every request received."""

    port: int = 0
    routes: dict[str, tuple[int, bytes, str]] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def serve() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            state.seen.append((self.path, self.headers.get("Host", "")))
            status, body, location = state.routes.get(self.path, (404, b"no", ""))
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.port = server.server_address[1]
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    with serve() as running:
        yield running


@pytest.fixture
def connections(monkeypatch) -> list[tuple]:
    """Every ``socket.create_connection`` (what httpx connects with) made from now on;
    one to anything but 127.0.0.1 fails here, so even a broken policy sends no traffic
    off this machine."""
    made: list[tuple] = []
    real = socket.create_connection

    def watched(address, *args, **kwargs):
        made.append(address)
        if address[0] != "127.0.0.1":
            raise OSError(f"test: no connection to {address[0]} may be made")
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", watched)
    return made


def resolve_as(monkeypatch, names: dict[str, list[str]]) -> None:
    """Make the standard resolver answer ``names`` (host -> addresses), others as usual."""
    real = socket.getaddrinfo

    def fake(host, port, *args, **kwargs):
        if host in names:
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                     (a, port)) for a in names[host]]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def reader(**kwargs) -> Sources:
    """Adapters without a repository under the policy ``kwargs``."""
    return Sources(SourceEnv(None, None, WikiConfig(), SourcePolicy(**kwargs)))


def fp(text: str) -> str:
    return fingerprint(text, ignore_frontmatter=True, ignore_whitespace=True)


def cite(w: Wiki, *uris: str, name: str = "leave") -> None:
    """Put an active entry saying BODY, citing ``uris`` with a stale fingerprint, straight
    on the wiki branch (as if a reviewer had approved it)."""
    sources = ", ".join(f"{{uri: '{uri}', fingerprint: '{STALE}'}}" for uri in uris)
    text = entry_text(f"e-{name}", "Annual leave", BODY, summary="How leave is requested.",
                      sources=f"[{sources}]")
    head = w.require_head()
    new = write_commit(w.snapshot(head), {f"{name}.md": text.encode()}, "test\n", author=ALICE)
    w.store.update_ref(w.ref, new, head, "test")


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    return write(tmp_path / "private" / "secret.md", f"# Leave\n\n{SECRET}\n")


# -- file: -----------------------------------------------------------------------------------

def test_a_file_outside_the_roots_is_refused_and_never_read(secret: Path, tmp_path: Path) -> None:
    for policy in ({}, {"roots": ((tmp_path / "elsewhere").resolve(),)}):
        with reader(**policy) as sources:
            check = sources.check(secret.as_uri(), Recorded(STALE))
            assert check.refused and check.fingerprint is None
            assert check.error.startswith("is unverifiable (not allowed: ")
            with pytest.raises(SourceNotAllowedError):
                sources.read(secret.as_uri())
            assert SECRET not in check.error
    with reader() as sources:
        assert sources.check("file:///etc/passwd").refused
        assert sources.check("file://intranet/share/x.md").error.endswith(
            "(not allowed: a file on another host (intranet))")


def test_a_file_inside_a_configured_root_is_read(secret: Path, wiki: Wiki, repo: Path,
                                                 monkeypatch) -> None:
    assert sources_for(wiki).check(secret.as_uri()).refused  # nothing configured
    monkeypatch.setenv("WIKI_SOURCE_ROOTS", str(secret.parent))
    with sources_for(wiki) as sources:
        assert sources.check(secret.as_uri()).fingerprint == fp(f"# Leave\n\n{SECRET}\n")
        assert SECRET in sources.read(secret.as_uri())
    monkeypatch.delenv("WIKI_SOURCE_ROOTS")
    git(repo, "config", "--add", "wiki.sourceRoots", str(secret.parent.parent))
    assert sources_for(wiki).check(secret.as_uri()).fingerprint is not None


def test_a_symlink_inside_a_root_pointing_outside_is_refused(secret: Path, tmp_path: Path
                                                            ) -> None:
    root = tmp_path / "notes"
    write(root / "fine.md", "Fine.\n")
    (root / "link.md").symlink_to(secret)
    (root / "dir").symlink_to(secret.parent, target_is_directory=True)
    with reader(roots=(root.resolve(),)) as sources:
        assert sources.check((root / "fine.md").as_uri()).fingerprint == fp("Fine.")
        for uri in ((root / "link.md").as_uri(), (root / "dir" / "secret.md").as_uri(),
                    (root / ".." / "private" / "secret.md").as_uri()):
            check = sources.check(uri)
            assert check.refused, uri
            assert "outside your source roots" in check.error


def test_policy_settings_are_checked(repo: Path, monkeypatch, cli, wiki: Wiki) -> None:
    with pytest.raises(ConfigError, match="WIKI_SOURCE_ROOTS: source root 'notes'"):
        SourcePolicy.parse([("WIKI_SOURCE_ROOTS", "notes")], [])
    with pytest.raises(ConfigError, match="'intranet' is neither"):
        SourcePolicy.parse([], [("WIKI_ALLOW_PRIVATE_NETWORK", "10.0.0.0/8, intranet")])
    policy = SourcePolicy.parse([], [("x", "10.0.0.0/8 [::1]:8080 127.0.0.1:9")])
    assert policy.address_refusal(__import__("ipaddress").ip_address("10.1.2.3"), 80) is None
    assert policy.address_refusal(__import__("ipaddress").ip_address("::1"), 8080) is None
    assert policy.address_refusal(__import__("ipaddress").ip_address("::1"), 80)
    assert SourcePolicy.parse([], [("x", "false")]) == SourcePolicy()
    git(repo, "config", "wiki.allowPrivateNetwork", "nonsense")
    result = cli("lint")
    assert result.exit_code == 2 and "git config wiki.allowPrivateNetwork" in result.output


# -- git: ------------------------------------------------------------------------------------

@pytest.mark.parametrize("git_ref", ["", "HEAD"])
def test_git_paths_must_stay_inside_the_repository(repo: Path, secret: Path, git_ref: str
                                                   ) -> None:
    write(repo / "docs" / "a.md", "A.\n")
    (repo / "docs" / "out.md").symlink_to(secret)
    (repo / "docs" / "outdir").symlink_to(secret.parent, target_is_directory=True)
    write(repo / ".gitignore", ".env\n")
    write(repo / ".env", f"TOKEN={SECRET}\n")
    git(repo, "add", "docs", ".gitignore")
    git(repo, "commit", "-qm", "docs")
    from wiki.config import SourcesConfig
    from wiki.store.gitrepo import open_repository

    env = SourceEnv(open_repository(repo), repo, WikiConfig(sources=SourcesConfig(git_ref=git_ref)),
                    SourcePolicy())
    with Sources(env) as sources:
        assert sources.check("git:docs/a.md").fingerprint == fp("A.")
        for uri in ("git:../private/secret.md", "git:docs/../../private/secret.md",
                    "git:/../private/secret.md", "git:.git/config", "git:docs/../.git/HEAD"):
            check = sources.check(uri)
            assert check.refused, uri
            with pytest.raises(SourceNotAllowedError):
                sources.read(uri)
        for uri in ("git:docs/out.md", "git:docs/outdir/secret.md", "git:.env"):
            check = sources.check(uri)
            assert check.fingerprint is None and SECRET not in (check.error or ""), uri
            if not git_ref:  # the work tree: refused by the policy; at a ref: not a file
                assert check.refused, uri


# -- http(s): ------------------------------------------------------------------------------

def test_loopback_is_refused_by_default_and_read_with_the_readers_opt_in(
        server: Server, connections: list, wiki: Wiki, repo: Path, monkeypatch) -> None:
    server.routes["/page"] = (200, SECRET.encode(), "")
    monkeypatch.delenv("WIKI_ALLOW_PRIVATE_NETWORK", raising=False)
    with sources_for(wiki) as sources:
        check = sources.check(f"{server.url}/page")
    assert check.refused and "127.0.0.1 is a loopback address" in check.error
    assert server.seen == [] and connections == []
    for allow in ("1", f"127.0.0.1:{server.port}", "127.0.0.0/8"):
        monkeypatch.setenv("WIKI_ALLOW_PRIVATE_NETWORK", allow)
        with sources_for(wiki) as sources:
            assert sources.check(f"{server.url}/page").fingerprint == fp(SECRET), allow
    monkeypatch.delenv("WIKI_ALLOW_PRIVATE_NETWORK")
    git(repo, "config", "wiki.allowPrivateNetwork", "true")
    with sources_for(wiki) as sources:
        assert sources.check(f"{server.url}/page").fingerprint == fp(SECRET)
    assert len(server.seen) == 4


@pytest.mark.parametrize("uri", ["http://10.0.0.1/", "https://10.0.0.1:8443/x",
                                 "http://192.168.1.1/", "http://169.254.169.254/latest",
                                 "http://[fd00::1]/", "http://[::ffff:10.0.0.1]/",
                                 "http://100.64.0.1/", "http://0.0.0.0/", "http://224.0.0.1/"])
def test_a_private_literal_is_refused_before_any_connection(uri: str, connections: list
                                                           ) -> None:
    with reader() as sources:
        check = sources.check(uri)
        with pytest.raises(SourceNotAllowedError):
            sources.read(uri)
    assert check.refused and "(not allowed: " in check.error
    assert connections == []


def test_names_are_judged_by_every_address_they_resolve_to(monkeypatch, connections: list
                                                          ) -> None:
    resolve_as(monkeypatch, {"docs.example.com": ["127.0.0.1"],
                             "mixed.example.com": ["93.184.215.14", "10.1.2.3"]})
    with reader() as sources:
        local = sources.check("http://localhost/")  # the real resolver: /etc/hosts
        assert local.refused and "localhost: 127.0.0.1 is a loopback address" in local.error
        assert "docs.example.com: 127.0.0.1 is a loopback" in \
            sources.check("http://docs.example.com/").error
        assert "mixed.example.com: 10.1.2.3 is a private" in \
            sources.check("https://mixed.example.com/").error
    assert connections == []


def test_the_connection_goes_to_the_checked_address(monkeypatch, server: Server) -> None:
    """A name resolved once: the request reaches the address the check allowed, with the
    URL's Host header (the resolver is not asked again between check and connect)."""
    calls: list[str] = []
    real = socket.getaddrinfo

    def once(host, port, *args, **kwargs):
        calls.append(host)
        if host == "docs.example.test":  # first answer allowed; any later one would not be
            address = "127.0.0.1" if calls.count(host) == 1 else "10.9.9.9"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", once)
    server.routes["/page"] = (200, b"Public page.\n", "")
    with reader(endpoints=((__import__("ipaddress").ip_address("127.0.0.1"), server.port),)
                ) as sources:
        check = sources.check(f"http://docs.example.test:{server.port}/page")
    assert check.fingerprint == fp("Public page.") and calls.count("docs.example.test") == 1
    assert server.seen == [("/page", f"docs.example.test:{server.port}")]


def test_every_redirect_hop_is_checked(monkeypatch, server: Server, connections: list) -> None:
    with serve() as inner:
        inner.routes["/secret"] = (200, SECRET.encode(), "")
        server.routes["/to-inner"] = (302, b"", f"{inner.url}/secret")
        server.routes["/to-ten"] = (301, b"", "http://10.0.0.1/admin")
        server.routes["/to-name"] = (307, b"", "http://internal.example.com/x")
        resolve_as(monkeypatch, {"internal.example.com": ["192.168.0.7"]})
        ip = __import__("ipaddress").ip_address("127.0.0.1")
        with reader(endpoints=((ip, server.port),)) as sources:  # the first hop only
            first = sources.check(f"{server.url}/to-inner")
            ten = sources.check(f"{server.url}/to-ten")
            named = sources.check(f"{server.url}/to-name")
            with pytest.raises(SourceNotAllowedError, match="redirected to"):
                sources.read(f"{server.url}/to-inner")
        assert first.refused and first.error.startswith(
            f"is unverifiable (not allowed: redirected to {inner.url}/secret: 127.0.0.1 is a "
            "loopback address")
        assert ten.refused and "redirected to http://10.0.0.1/admin" in ten.error
        assert named.refused and "internal.example.com: 192.168.0.7 is a private" in named.error
        assert inner.seen == []
        with reader(endpoints=((ip, server.port), (ip, inner.port))) as sources:
            assert sources.check(f"{server.url}/to-inner").fingerprint == fp(SECRET)
    assert {port for _, port in connections} == {server.port, inner.port}


# -- through the CLI, the hook and MCP ---------------------------------------------------

def _no_secret(*texts: str) -> None:
    for text in texts:
        assert "TOPSECRET" not in text


def test_wiki_ask_shows_refused_sources_and_never_their_content(
        wiki: Wiki, secret: Path, server: Server, cli, connections: list) -> None:
    server.routes["/leave"] = (200, f"# Leave\n\n{SECRET}\n".encode(), "")
    cite(wiki, secret.as_uri(), f"{server.url}/leave")
    result = cli("ask", QUESTION)
    assert result.exit_code == 0, result.output
    _no_secret(result.stdout, result.stderr)
    assert BODY in result.stdout
    assert f"its source {secret.as_uri()} is unverifiable (not allowed: " in \
        " ".join(result.stdout.split())
    assert "127.0.0.1 is a loopback address" in " ".join(result.stdout.split())
    data = json.loads(cli("ask", QUESTION, "--json", "--propose").stdout)
    _no_secret(json.dumps(data))
    citation = data["citations"][0]
    assert citation["unverifiable"] and not citation["stale"]
    assert not citation["current_source_used"]
    assert data["revalidation"]["unverifiable"] == 2 and data["revalidation"]["update"] == []
    assert list_proposals(wiki) == [] and server.seen == [] and connections == []


def test_ask_propose_never_copies_a_refused_file(wiki: Wiki, repo: Path, tmp_path: Path,
                                                 cli, monkeypatch) -> None:
    """The reader allowed the file once (so its change is seen), then took it back: the
    changed source is not re-ingested into a proposal."""
    notes = write(tmp_path / "notes" / "leave.md", f"# Leave\n\n{BODY}\n")
    ingest_and_land(wiki, notes)
    assert str(notes.resolve()) in git(repo, "config", "--get-all", "wiki.sourceRoots")
    notes.write_text(f"# Leave\n\n{BODY} {SECRET}\n")
    git(repo, "config", "--unset-all", "wiki.sourceRoots")
    data = json.loads(cli("ask", QUESTION, "--json", "--propose").stdout)
    _no_secret(json.dumps(data))
    assert data["citations"][0]["unverifiable"] and list_proposals(wiki) == []


def test_ingest_remembers_the_readers_own_outside_paths(wiki: Wiki, repo: Path, tmp_path: Path,
                                                         cli) -> None:
    notes = write(tmp_path / "notes" / "leave.md", f"# Leave\n\n{BODY}\n")
    write(repo / "docs" / "inside.md", "# Inside\n\nIn the repository.\n")
    assert cli("ingest", str(notes.parent), str(repo / "docs"), "--dry-run").exit_code == 0
    assert "wiki.sourceroots" not in git(repo, "config", "--list")  # a dry run: nothing
    ingest_and_land(wiki, notes.parent, repo / "docs")
    assert git(repo, "config", "--get-all", "wiki.sourceRoots") == str(notes.parent.resolve())
    ingest(wiki, [notes, notes.parent], author=ALICE)  # already under a root: not added
    assert git(repo, "config", "--get-all", "wiki.sourceRoots").splitlines() == [
        str(notes.parent.resolve())]
    notes.write_text(f"# Leave\n\n{BODY.replace('two', 'three')}\n")
    data = json.loads(cli("ask", QUESTION, "--json").stdout)
    assert data["citations"][0]["stale"] and data["revalidation"]["update"]


def test_wiki_lint_reports_refused_sources_as_missing(wiki: Wiki, secret: Path, cli,
                                                      connections: list) -> None:
    cite(wiki, secret.as_uri(), "http://10.0.0.1/leave", "git:../private/secret.md")
    result = cli("lint", "--format", "json")
    assert result.exit_code == 1, result.output
    _no_secret(result.stdout, result.stderr)
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "W002"]
    assert len(found) == 3 and all("is unverifiable (not allowed: " in f["message"]
                                   for f in found)
    assert connections == []


def test_the_hook_marks_and_ask_still_refuses(wiki: Wiki, repo: Path, secret: Path, cli) -> None:
    write(repo / "docs" / "leave.md", f"# Leave\n\n{BODY}\n")
    git(repo, "add", "docs")
    git(repo, "commit", "-qm", "leave")
    cite(wiki, "git:docs/leave.md", secret.as_uri(), "git:docs/../../private/secret.md")
    write(repo / "docs" / "leave.md", f"# Leave\n\n{BODY} Now.\n")
    git(repo, "commit", "-qam", "leave edited")
    ran = cli("hook", "run")
    assert ran.exit_code == 0 and "leave.md" in ran.stdout
    _no_secret(ran.stdout, ran.stderr)
    data = json.loads(cli("ask", QUESTION, "--json").stdout)
    _no_secret(json.dumps(data))
    citation = data["citations"][0]
    assert citation["changed_sources"] == ["git:docs/leave.md"] and citation["unverifiable"]
    assert citation["reason"].count("is unverifiable (not allowed: ") == 2


def test_mcp_ask_and_lint_refuse_the_same(wiki: Wiki, repo: Path, secret: Path,
                                          server: Server, connections: list) -> None:
    from wiki_cli.mcp_server import build_server

    server.routes["/leave"] = (200, SECRET.encode(), "")
    cite(wiki, secret.as_uri(), f"{server.url}/leave")
    _, tools = build_server(repo)
    data = tools.ask(QUESTION)
    _no_secret(json.dumps(data))
    assert BODY in data["answer"] and data["citations"][0]["unverifiable"]
    assert "(not allowed: " in data["citations"][0]["reason"]
    report = tools.lint(select=["W002"])
    _no_secret(json.dumps(report))
    assert len(report["findings"]) == 2 and server.seen == [] and connections == []


def test_the_kept_policy_sees_every_later_change_and_runs_git_once(repo: Path, tmp_path: Path,
                                                                   monkeypatch) -> None:
    """The policy's ``git config`` run is kept while the configuration is unchanged (one
    run, not one per served ``ask``), and every later change is seen by the next load:
    the repository's file, ``config.worktree``, the file ``GIT_CONFIG_GLOBAL`` names,
    settings passed in ``GIT_CONFIG_*`` variables, and a file the configuration includes."""
    import git as gitpython

    from wiki.store import gitrepo

    monkeypatch.setattr(gitrepo, "SETTLED_NS", 0)  # this test's files count as settled
    runs: list[tuple] = []
    real = gitpython.Git.execute

    def counted(self, command, **kwargs):
        runs.append(tuple(command[:2]))
        return real(self, command, **kwargs)

    monkeypatch.setattr(gitpython.Git, "execute", counted)
    handle = gitpython.Repo(repo)

    def roots() -> list[str]:
        return [p.name for p in SourcePolicy.load(handle).roots]

    (tmp_path / "a").mkdir()
    git(repo, "config", "wiki.sourceRoots", str(tmp_path / "a"))
    assert roots() == ["a"]
    before = len(runs)
    assert roots() == ["a"] and roots() == ["a"]
    assert len(runs) == before  # kept: no git run for an unchanged configuration
    for name in ("b", "c", "d", "e"):
        (tmp_path / name).mkdir()
    git(repo, "config", "wiki.sourceRoots", str(tmp_path / "b"))
    assert roots() == ["b"]
    worktree = Path(handle.git_dir) / "config.worktree"
    git(repo, "config", "extensions.worktreeConfig", "true")
    assert roots() == ["b"]
    worktree.write_text(f"[wiki]\n\tsourceRoots = {tmp_path / 'c'}\n")  # only that file
    assert roots() == ["b", "c"]
    worktree.unlink()
    git(repo, "config", "--unset", "extensions.worktreeConfig")
    assert roots() == ["b"]
    global_file = tmp_path / "global.gitconfig"
    global_file.write_text(f"[wiki]\n\tsourceRoots = {tmp_path / 'd'}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(global_file))
    assert roots() == ["d", "b"]
    monkeypatch.delenv("GIT_CONFIG_GLOBAL")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "wiki.sourceRoots")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(tmp_path / "e"))
    assert roots() == ["b", "e"]
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(tmp_path / "a"))
    assert roots() == ["b", "a"]
    for name in ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"):
        monkeypatch.delenv(name)
    extra = tmp_path / "extra.gitconfig"
    extra.write_text(f"[wiki]\n\tsourceRoots = {tmp_path / 'c'}\n")
    git(repo, "config", "include.path", str(extra))
    assert roots() == ["b", "c"]
    extra.write_text(f"[wiki]\n\tsourceRoots = {tmp_path / 'e'}\n")  # only the included file
    assert roots() == ["b", "e"]
