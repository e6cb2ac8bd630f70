"""The branch store: writes from objects, compare-and-swap, never touching the work tree."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest
from conftest import ALICE, BOB, git

from wiki.errors import AlreadyInitializedError, NotInitializedError, RefMovedError
from wiki.store.branch import BranchStore
from wiki.store.snapshot import Snapshot, write_commit
from wiki.store.workspace import Wiki


def _state(repo: Path) -> tuple[str, str, str]:
    """What the user sees: HEAD, staged index and work-tree status."""
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True, text=True).stdout
    index = (repo / ".git" / "index").read_bytes().hex() if (repo / ".git" / "index").exists() \
        else ""
    return head, index, git(repo, "status", "--porcelain", "--untracked-files=all")


def test_init_creates_branch_without_touching_work_tree(repo: Path) -> None:
    (repo / "dirty.txt").write_text("uncommitted\n")
    git(repo, "add", "dirty.txt")
    before = _state(repo)
    wiki = Wiki(repo)
    commit = wiki.init()
    assert wiki.head() == commit
    assert git(repo, "ls-tree", "--name-only", "wiki").splitlines() == ["index.md", "wiki.toml"]
    assert _state(repo) == before
    assert git(repo, "symbolic-ref", "HEAD") == "refs/heads/main"
    with pytest.raises(AlreadyInitializedError):
        wiki.init()


def test_works_in_repo_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    wiki = Wiki(tmp_path)
    wiki.init()
    assert git(tmp_path, "rev-parse", "--verify", "-q", "wiki") == wiki.head()
    assert subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--verify", "-q", "HEAD"],
                          capture_output=True).returncode != 0  # HEAD still unborn


def test_works_with_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    wiki = Wiki(repo)
    wiki.init()
    assert git(repo, "rev-parse", "HEAD") == git(repo, "rev-parse", "main")
    assert wiki.snapshot().read("wiki.toml")


def test_works_from_linked_worktree(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "feature")
    wiki = Wiki(tmp_path / "wt")
    wiki.init()
    assert Wiki(repo).head() == wiki.head()  # one branch, shared by all worktrees
    assert wiki.state_dir == (repo / ".git" / "wiki").resolve()


def test_not_initialized_is_reported(repo: Path) -> None:
    with pytest.raises(NotInitializedError, match="run `wiki init`"):
        Wiki(repo).snapshot()


def test_cas_race_one_writer_loses_and_nothing_is_lost(wiki: Wiki) -> None:
    base = wiki.require_head()
    snapshot = Snapshot(wiki.store, base)
    first = write_commit(snapshot, {"a.md": b"from writer one\n"}, "one", author=ALICE)
    second = write_commit(snapshot, {"b.md": b"from writer two\n"}, "two", author=BOB)
    wiki.store.update_ref(wiki.ref, first, base, "one")
    with pytest.raises(RefMovedError):
        wiki.store.update_ref(wiki.ref, second, base, "two")
    assert wiki.head() == first
    assert wiki.snapshot().read("a.md") == b"from writer one\n"
    # the loser's commit still exists: it can be retried on the new head
    assert git(wiki.root, "cat-file", "-t", second) == "commit"


def test_concurrent_writers_threads_exactly_one_wins(wiki: Wiki) -> None:
    base = wiki.require_head()
    snapshot = Snapshot(wiki.store, base)
    commits = [write_commit(snapshot, {f"f{i}.md": b"x"}, f"w{i}", author=ALICE)
               for i in range(8)]
    outcomes: list[str] = []

    def attempt(commit: str) -> None:
        store = BranchStore(Wiki(wiki.root).repo)
        try:
            store.update_ref(wiki.ref, commit, base, "race")
            outcomes.append("won")
        except RefMovedError:
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(c,)) for c in commits]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert wiki.head() in commits


def test_tree_paths_unicode_and_ordering_pass_fsck(wiki: Wiki) -> None:
    snapshot = wiki.snapshot()
    changes = {"a/b.md": b"1", "a-b/c.md": b"2", "a.md": b"3", "café/日本.md": b"4",
               "x/y/z/deep.md": b"5"}
    tree = wiki.store.write_tree(snapshot.files, changes)
    commit = wiki.store.commit(tree, [snapshot.commit], "m", author=ALICE)
    git(wiki.root, "fsck", "--strict", "--no-dangling")
    files = wiki.store.files(commit)
    assert {p for p in changes} <= set(files)
    assert wiki.store.read(files["café/日本.md"].sha) == b"4"


def test_inherited_git_dir_is_ignored(repo: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    wiki = Wiki(repo)
    wiki.init()
    monkeypatch.delenv("GIT_DIR", raising=False)
    assert git(repo, "rev-parse", "--verify", "-q", "wiki")
    assert subprocess.run(["git", "-C", str(other), "rev-parse", "--verify", "-q", "wiki"],
                          capture_output=True).returncode != 0


def test_read_many_reads_blobs_in_one_batch(wiki: Wiki) -> None:
    store = wiki.store
    blobs = [b"plain\n", b"two\nlines\r\n\n", b"\x00binary\xff", b""]
    shas = [store.store_blob(data) for data in blobs]
    missing = "1" * 40
    found = store.read_many([*shas, missing])
    assert [found[sha] for sha in shas] == blobs and missing not in found
    assert store.read_many([]) == {}


def test_a_threads_repository_is_reused_and_reopened_when_replaced(wiki: Wiki, repo: Path,
                                                                   tmp_path: Path) -> None:
    """``ThreadRepos`` (a server's per-thread ``git.Repo``): the same object on the same
    thread, another on another thread, a new one once the repository was replaced at the
    same path, and ``NotARepositoryError`` once it is gone; every Wiki over it sees the
    branch move."""
    import shutil

    from wiki.errors import NotARepositoryError
    from wiki.store.gitrepo import ThreadRepos

    repos = ThreadRepos()
    first, common = repos.get(repo)
    assert repos.get(repo)[0] is first and common == (repo / ".git").resolve()
    elsewhere: list = []
    thread = threading.Thread(target=lambda: elsewhere.append(repos.get(repo)[0]))
    thread.start()
    thread.join()
    assert elsewhere[0] is not first
    head = Wiki(repo, repos=repos).require_head()
    moved = write_commit(Snapshot(wiki.store, head), {"notes.md": b"# moved\n"}, "move",
                         author=ALICE)
    wiki.store.update_ref(wiki.ref, moved, head, "move")
    assert Wiki(repo, repos=repos).require_head() == moved
    assert "notes.md" in Wiki(repo, repos=repos).snapshot().files

    copy = tmp_path / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    shutil.rmtree(repo)
    shutil.copytree(copy, repo, symlinks=True)  # replaced: another git dir, same path
    again, _ = repos.get(repo)
    assert again is not first and Wiki(repo, repos=repos).require_head() == moved
    shutil.rmtree(repo)
    with pytest.raises(NotARepositoryError):
        repos.get(repo)


def test_a_commits_file_list_is_kept_and_never_shared_for_writing(wiki: Wiki) -> None:
    """``BranchStore.files`` keeps a commit's list (its tree never changes) and hands out
    a copy: a caller changing it changes no later answer."""
    from wiki.store.branch import _TREE_FILES

    head = wiki.require_head()
    files = wiki.store.files(head)
    assert _TREE_FILES.get(head) == files
    files["spurious.md"] = files["wiki.toml"]
    assert "spurious.md" not in wiki.store.files(head)
    assert "spurious.md" not in BranchStore(wiki.repo).files(head)


def test_kept_git_configuration_sees_every_later_change(repo: Path, tmp_path: Path,
                                                        monkeypatch) -> None:
    """``config_value`` keeps the parsed configuration per git dir, but a change to the
    repository's file, to the user's (also one reached through another ``HOME``) and to a
    file the configuration includes is seen by the next read."""
    import git as gitpython

    from wiki.store import gitrepo
    from wiki.store.gitrepo import config_value

    monkeypatch.setattr(gitrepo, "SETTLED_NS", 0)  # this test's files count as settled
    handle = gitpython.Repo(repo)
    assert config_value(handle, "wiki", "model", "") == ""
    git(repo, "config", "wiki.model", "first")
    assert config_value(handle, "wiki", "model", "") == "first"
    git(repo, "config", "wiki.model", "other")  # the file rewritten, maybe the same size
    assert config_value(handle, "wiki", "model", "") == "other"
    git(repo, "config", "--unset", "wiki.model")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[wiki]\n\tmodel = from-home\n")
    monkeypatch.setenv("HOME", str(home))
    assert config_value(handle, "wiki", "model", "") == "from-home"
    extra = tmp_path / "extra.gitconfig"
    extra.write_text("[wiki]\n\tbranch = kb\n")
    git(repo, "config", "include.path", str(extra))
    assert config_value(handle, "wiki", "branch", "") == "kb"
    extra.write_text("[wiki]\n\tbranch = notes\n")  # only the included file changes
    assert config_value(handle, "wiki", "branch", "") == "notes"
    git(repo, "config", "--unset", "include.path")  # git and gitpython ignore the case:
    config = repo / ".git" / "config"
    config.write_text(config.read_text() + f"[Include]\n\tpath = {extra}\n")
    assert config_value(handle, "wiki", "branch", "") == "notes"
    extra.write_text("[wiki]\n\tbranch = kb2\n")
    assert config_value(handle, "wiki", "branch", "") == "kb2"
