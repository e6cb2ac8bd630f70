"""Hermetic fixtures: real git repositories in tmp dirs with pinned identities, a temp
HOME, real SQLite, the CLI run in-process through typer's runner."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import typer.testing
from hypothesis import settings
from pg_fixture import on_postgres, pg_database, pg_url  # noqa: F401 (fixtures)
from typer.testing import CliRunner

from wiki.ingest.pipeline import ingest
from wiki.review.proposals import approve
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

# CI (CI=true) replays the same examples every run, so a red run is a regression, not a new
# random draw; `make fuzz` (scripts/fuzz.py) is where hypothesis explores
# No example has a time limit (hypothesis' default is 200 ms): a deadline is a timed
# assertion, which failed once in CI on a machine busy setting up the 3.13 venv (363 ms)
settings.register_profile("suite", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("suite"), derandomize=True,
                          database=None)
settings.load_profile("ci" if os.environ.get("CI") else "suite")

# Markers set from what a test uses, so `make test-fast` can leave out the costly kinds (all
# run in `make test`); `slow` is set by hand on tests measured over ~5 s in a full run.
_MODEL_WORDS = ("DEFAULT_MODEL", "all-MiniLM", "OnnxEmbedder", "SentenceTransformer",
                "served_vectors")
_SUBPROCESS_WORDS = ("subprocess.", "Popen", "sys.executable", "_wiki_with_import_hook")


def _test_source(item) -> str:
    try:
        return inspect.getsource(item.function)
    except (AttributeError, OSError, TypeError):
        return ""


def pytest_collection_modifyitems(items) -> None:
    """Mark each test ``pg`` (it uses the test PostgreSQL), ``model`` (the real embedding
    model or its server) and ``subprocess`` (it starts processes), from its fixtures and
    its own code."""
    for item in items:
        source, fixtures = _test_source(item), set(getattr(item, "fixturenames", ()))
        if "pg_url" in fixtures:
            item.add_marker("pg")
        if fixtures & {"remote", "served_runtime"} or any(w in source for w in _MODEL_WORDS):
            item.add_marker("model")
        if any(w in source for w in _SUBPROCESS_WORDS):
            item.add_marker("subprocess")


_click_commands: dict[tuple, object] = {}
_build_click_command = typer.testing._get_command


def _click_command(app):
    """The click command tree of typer ``app``, built once per worker instead of on every
    ``CliRunner.invoke`` (typer rebuilds it from every command's signature on each call:
    12 % of the whole suite's CPU, measured with py-spy; docs/decisions.md, "A faster
    suite, part 3"). Rebuilt when the app gains commands (``wiki_cli.app.build`` loads
    modules lazily) or when the variable typer reads while building its completion
    options changes."""
    key = (id(app), len(app.registered_commands), len(app.registered_groups),
           os.environ.get("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION"))
    if key not in _click_commands:
        _click_commands[key] = _build_click_command(app)
    return _click_commands[key]


typer.testing._get_command = _click_command


ALICE = Identity("Alice Author", "alice@example.com")
BOB = Identity("Bob Reviewer", "bob@example.com")


def identity_env(who: Identity) -> dict[str, str]:
    return {"GIT_AUTHOR_NAME": who.name, "GIT_AUTHOR_EMAIL": who.email,
            "GIT_COMMITTER_NAME": who.name, "GIT_COMMITTER_EMAIL": who.email}


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory) -> Path:
    """One cache folder for the whole run: the ONNX copy of the embedding model is exported
    into it once, not once per test (each test has its own HOME)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def hermetic(tmp_path_factory, monkeypatch, model_cache) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(model_cache))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.delenv("WIKI_BRANCH", raising=False)
    monkeypatch.delenv("WIKI_MODEL", raising=False)  # no LLM unless a test installs a fake
    monkeypatch.setenv("NO_COLOR", "1")
    # the vector leg is off unless a test turns it on (fake or real model, by name)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "none")
    monkeypatch.setenv("WIKI_EMBED_SERVER", "off")
    for key, value in identity_env(ALICE).items():
        monkeypatch.setenv(key, value)


@contextmanager
def acting_as(who: Identity) -> Iterator[None]:
    """Temporarily act as ``who`` (git resolves identity from these variables)."""
    saved = {k: os.environ.get(k) for k in identity_env(who)}
    os.environ.update(identity_env(who))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh git repository with one commit on main and a clean work tree."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "first")
    return path


@pytest.fixture
def wiki(repo: Path) -> Wiki:
    """An initialised wiki in ``repo``."""
    w = Wiki(repo)
    w.init()
    return w


# wikis built once per worker process, keyed by the build function and the WIKI_ settings
# it ran under (a model changes what the derived index holds): see `from_template`
_TEMPLATES: dict[tuple, Path] = {}


@pytest.fixture
def from_template(wiki: Wiki, repo: Path, tmp_path_factory) -> Callable[..., Wiki]:
    """``from_template(build)``: ``repo`` (and the ``wiki`` fixture's object) becomes a
    copy of a repository that ``build(wiki, repo)`` filled once per worker process, from
    the state ``repo`` and ``wiki`` start in: the same commits, branches, work tree and
    derived index as building it here, at the cost of a copy (~0.05 s against ~1-2 s for a
    propose + approve). The copy is the test's own, so a test may write to it."""

    def make(build: Callable[[Wiki, Path], object]) -> Wiki:
        settings = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("WIKI_")))
        key = (build.__module__, build.__qualname__, settings)
        source = _TEMPLATES.get(key)
        if source is None:
            source = tmp_path_factory.mktemp("template") / "repo"
            shutil.copytree(repo, source, symlinks=True)
            built = Wiki(source)
            build(built, source)
            if built._repo is not None:
                built._repo.close()
            _TEMPLATES[key] = source
        if wiki._repo is not None:
            wiki._repo.close()  # its git processes read the repository being replaced
        shutil.rmtree(repo)
        shutil.copytree(source, repo, symlinks=True)
        # git's index holds the files' stat data: fresh again, or git takes every work-tree
        # file for modified until something refreshes it (a clone or checkout would have)
        subprocess.run(["git", "-C", str(repo), "update-index", "-q", "--refresh"],
                       capture_output=True, check=False)
        wiki.__init__(repo)  # nothing cached from the repository before the copy
        return wiki

    return make


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def ingest_and_land(w: Wiki, *paths: Path):
    """Ingest as Alice, approve as Bob; returns the ingest report."""
    report = ingest(w, list(paths), author=ALICE)
    assert report.proposal is not None, report
    approve(w, report.proposal.name, approver=BOB)
    return report


def entry_text(entry_id: str, title: str, body: str, **fields) -> str:
    lines = [f"id: {entry_id}", f"title: {title}"]
    lines += [f"{k}: {v}" for k, v in fields.items()]
    return "---\n" + "\n".join(lines) + f"\n---\n{body}\n"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def cli(runner: CliRunner, repo: Path):
    """Run ``wiki -C repo ARGS`` in-process; returns the click Result."""
    from wiki_cli.app import app

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["-C", str(repo), *args], input=input)

    return run


@pytest.fixture
def vectors_on(monkeypatch):
    """The vector leg on, through the deterministic hashing embedder of tests/test_hybrid.py
    (registered as ``fake-hash``); returns the embedder."""
    from test_hybrid import HashingEmbedder

    from indexes.embedding import embedders

    model = HashingEmbedder()
    embedders.register("fake-hash", lambda: model)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-hash")
    return model


@pytest.fixture(scope="module")
def served_runtime():
    """A private runtime dir for the test module's real embedding server (every server
    started there is stopped at the end): tests/served_vectors.py."""
    from served_vectors import runtime_dir

    with runtime_dir("sv-") as path:
        yield path


@pytest.fixture()
def remote(served_runtime: Path, monkeypatch):
    """A ``RemoteEmbedder`` of the real model whose server runs in ``served_runtime``."""
    from served_vectors import MODEL

    from indexes.embedding.embed_server import RemoteEmbedder

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(served_runtime))
    return RemoteEmbedder(MODEL, idle_seconds=120)
