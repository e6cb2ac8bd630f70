"""A plain ``wiki search`` finds the repository, reads its config and resolves the wiki head
through the ``git`` command (:mod:`wiki.store.gitcli`), without importing GitPython; the
answers and the errors are those GitPython gives (:func:`wiki.store.gitrepo.open_repository`,
:meth:`wiki.store.branch.BranchStore.resolve`), from a subdirectory, a linked worktree, a
bare repository, with ``-C``, with ``GIT_DIR`` inherited, and when git refuses the
repository (dubious ownership, a broken config), where GitPython answers as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BOB, acting_as, git, write

from wiki.store.branch import BranchStore
from wiki.store.gitrepo import common_dir, open_repository
from wiki.store.workspace import Wiki

PROBE = """
import json, sys
from wiki.store.index_url import index_url
from wiki.store.workspace import Wiki
wiki = Wiki(sys.argv[1], sys.argv[2] or None)
print(json.dumps({"state_dir": str(wiki.state_dir), "branch": wiki.branch,
                  "head": wiki.head(), "url": index_url(wiki),
                  "git": "git" in sys.modules}))
"""


def probe(path: Path, branch: str = "", **env: str) -> dict:
    """What a fresh process's :class:`Wiki` of ``path`` says (and whether it loaded
    GitPython to say it)."""
    done = subprocess.run([sys.executable, "-c", PROBE, str(path), branch], text=True,
                          capture_output=True, timeout=60, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def gitpython_says(path: Path, branch: str = "wiki") -> dict:
    """The same facts as GitPython gives them (the code a search used before)."""
    repo = open_repository(path)
    return {"state_dir": str(common_dir(repo) / "wiki"), "branch": branch,
            "head": BranchStore(repo).resolve(f"refs/heads/{branch}")}


def wiki_cli(cwd: Path, *argv: str, **env: str) -> tuple[subprocess.CompletedProcess, bool]:
    """``python -X importtime -m wiki_cli ARGV`` in ``cwd``: the process (stderr without
    the import lines) and whether it imported GitPython."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "wiki_cli", *argv],
                          cwd=cwd, text=True, capture_output=True, timeout=120,
                          env={**os.environ, **env})
    lines = done.stderr.splitlines()
    loaded = any(line.startswith("import time:") and line.rsplit("|", 1)[1].strip() == "git"
                 for line in lines)
    done.stderr = "".join(f"{line}\n" for line in lines
                          if not line.startswith("import time:"))
    return done, loaded


@pytest.fixture
def landed(repo: Path, cli) -> Path:
    """``repo`` with one entry landed on its wiki branch and the index synced to it."""
    write(repo / "docs" / "deep" / "a.md", "# Alpha\n\nAlpha text about travel vouchers.\n")
    assert cli("init").exit_code == 0
    name = cli("ingest", "docs").stdout.strip()
    with acting_as(BOB):
        assert cli("approve", name).exit_code == 0
    assert cli("search", "alpha").exit_code == 0  # the index is fresh from here on
    return repo


def test_the_wiki_of_a_work_tree_and_its_subfolder_is_gitpythons(landed: Path) -> None:
    expected = gitpython_says(landed)
    assert expected["head"] is not None
    for where in (landed, landed / "docs" / "deep"):
        assert probe(where) == {**expected, "url": None, "git": False}


def test_a_linked_worktree_shares_the_main_repositorys_wiki(landed: Path,
                                                            tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(landed, "worktree", "add", "-q", str(linked))
    said = probe(linked)
    assert said == {**gitpython_says(linked), "url": None, "git": False}
    assert said["state_dir"] == str((landed / ".git" / "wiki").resolve())


def test_a_bare_repository_and_a_folder_inside_it(landed: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(landed, "clone", "-q", "--bare", str(landed), str(bare))
    git(bare, "fetch", "-q", str(landed), "refs/heads/wiki:refs/heads/wiki")
    for where in (bare, bare / "refs"):
        said = probe(where)
        assert said == {**gitpython_says(where), "url": None, "git": False}
        assert said["state_dir"] == str(bare.resolve() / "wiki")
    first, loaded = wiki_cli(bare, "search", "alpha")  # builds this repository's index
    assert loaded  # GitPython reads the entries
    done, loaded = wiki_cli(bare, "search", "alpha")
    assert (done.returncode, loaded) == (0, False), done.stderr
    assert "docs/deep/a.md" in done.stdout
    assert (done.stdout, done.stderr) == (first.stdout, first.stderr)


def test_an_inherited_git_dir_is_ignored(landed: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", str(other))
    said = probe(landed, GIT_DIR=str(other / ".git"), GIT_WORK_TREE=str(other))
    assert said == {**gitpython_says(landed), "url": None, "git": False}


def test_the_branch_and_index_url_come_from_git_config(landed: Path) -> None:
    git(landed, "config", "wiki.branch", "kb")
    git(landed, "config", "wiki.indexUrl", "  postgresql://h/db  ")
    said = probe(landed)
    assert said == {**gitpython_says(landed, "kb"), "url": "postgresql://h/db", "git": False}
    assert said["head"] is None
    assert probe(landed, "main")["head"] == git(landed, "rev-parse", "main")


def test_a_refused_repository_is_read_by_gitpython_as_before(landed: Path) -> None:
    """git refuses a repository someone else owns (``safe.directory``); GitPython never
    asked, and a search over a fresh index still answers from it, as it did before."""
    said = probe(landed, GIT_TEST_ASSUME_DIFFERENT_OWNER="1")
    assert said == {**gitpython_says(landed), "url": None, "git": True}
    done, loaded = wiki_cli(landed, "search", "alpha", GIT_TEST_ASSUME_DIFFERENT_OWNER="1")
    assert (done.returncode, loaded) == (0, True), done.stderr
    assert "docs/deep/a.md" in done.stdout


def test_a_config_git_cannot_read_falls_back_to_gitpython(landed: Path) -> None:
    with open(landed / ".git" / "config", "a", encoding="utf-8") as config:
        config.write("[broken\n")
    said = probe(landed)
    assert said["git"] is True
    assert said == {**gitpython_says(landed), "url": None, "git": True}


@pytest.mark.parametrize("where", [".", "docs/deep"])
def test_search_from_the_tree_or_with_dash_c_loads_no_gitpython(landed: Path, where: str,
                                                                tmp_path: Path) -> None:
    here, loaded = wiki_cli(landed / where, "search", "alpha")
    there, loaded_c = wiki_cli(tmp_path, "-C", str(landed / where), "search", "alpha")
    assert (here.returncode, loaded, loaded_c) == (0, False, False), here.stderr
    assert "docs/deep/a.md" in here.stdout
    assert (here.stdout, here.stderr) == (there.stdout, there.stderr)


def test_not_a_repository_says_so_as_before(tmp_path: Path) -> None:
    done, _ = wiki_cli(tmp_path, "search", "alpha")
    assert done.returncode == 2
    assert done.stderr == (f"error: {tmp_path}: not inside a git repository "
                           "(run `git init` first)\n")


def test_no_wiki_branch_says_so_as_before(repo: Path) -> None:
    done, _ = wiki_cli(repo / ".", "search", "alpha")
    assert done.returncode == 2
    assert done.stderr == f"error: no wiki branch 'wiki' in {repo}/.git: run `wiki init`\n"
    other, _ = wiki_cli(repo, "--branch", "other", "search", "alpha")
    assert other.stderr == f"error: no wiki branch 'other' in {repo}/.git: run `wiki init`\n"


def test_a_branch_that_is_not_a_wiki_is_refused_without_gitpython(landed: Path) -> None:
    done, loaded = wiki_cli(landed, "--branch", "main", "search", "alpha")
    assert (done.returncode, loaded) == (2, False)
    assert done.stderr == ("error: branch 'main' is not a wiki (it has no wiki.toml); pick "
                           "another --branch, or `wiki --branch NAME init` a new one\n")


@pytest.mark.parametrize(("name", "valid"), [("team/kb", True), ("a..b", False),
                                             ("x.lock", False), ("feature/é", True)])
def test_branch_names_are_checked_by_git(repo: Path, name: str, valid: bool) -> None:
    from wiki.errors import ConfigError

    if valid:
        assert Wiki(repo, name).branch == name
    else:
        with pytest.raises(ConfigError, match="see `git check-ref-format`"):
            Wiki(repo, name)


def test_the_repository_is_opened_where_the_wiki_was_made(landed: Path,
                                                          tmp_path: Path) -> None:
    """``Wiki(".")`` opens GitPython's repository on first use: a change of directory in
    between does not make it another repository."""
    code = ("import os, sys\n"
            "from wiki.store.workspace import Wiki\n"
            "wiki = Wiki('.')\n"
            "os.chdir(sys.argv[1])\n"
            "print('git' in sys.modules, wiki.repo.working_tree_dir)\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=landed / "docs",
                          text=True, capture_output=True, timeout=60)
    assert done.stdout == f"False {landed}\n", done.stderr


def test_gitcli_answers_what_gitpython_answers(wiki: Wiki, repo: Path, tmp_path: Path) -> None:
    """The functions of :mod:`wiki.store.gitcli` themselves, in this process."""
    from wiki.store import gitcli

    head = wiki.head()
    assert head is not None
    found = gitcli.locate(repo)
    assert found == gitcli.Location(repo / ".git", (repo / ".git").resolve())
    assert gitcli.resolve_ref(found.git_dir, "refs/heads/wiki") == head
    assert gitcli.resolve_ref(found.git_dir, "refs/heads/nothing") is None
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/wiki")
    assert gitcli.resolve_ref(found.git_dir, "refs/heads/alias") == head
    assert gitcli.has_file(found.git_dir, head, "wiki.toml")
    assert not gitcli.has_file(found.git_dir, head, "nothing.toml")
    assert not gitcli.has_file(found.git_dir, git(repo, "rev-parse", "main"), "wiki.toml")
    assert gitcli.config_value(found.git_dir, "wiki.branch") is None
    git(repo, "config", "wiki.branch", "one")
    git(repo, "config", "--add", "wiki.branch", "two")
    assert gitcli.config_value(found.git_dir, "wiki.branch") == "two"  # the last one
    assert open_repository(repo).config_reader().get_value("wiki", "branch") == "two"
    with pytest.raises(gitcli.GitUnclear):
        gitcli.locate(tmp_path / "elsewhere")
    with pytest.raises(gitcli.GitUnclear):
        gitcli.locate(repo / ".git")  # GitPython takes it as the work tree's repository
    (repo / ".git" / "refs" / "heads" / "broken").write_text("1" * 40 + "\n")
    with pytest.raises(gitcli.GitUnclear):  # GitPython returns the sha, git refuses
        gitcli.resolve_ref(found.git_dir, "refs/heads/broken")
    assert BranchStore(open_repository(repo)).resolve("refs/heads/broken") == "1" * 40
