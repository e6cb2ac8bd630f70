"""The kept source policy (``KeptGitConfigs.kept``: one ``git config`` run kept while what
git read it from is unchanged) against what a fresh ``git config`` says, after each change
a user or an attacker can make: includes git follows (in ``config.worktree``, in the
``GIT_CONFIG_GLOBAL`` file, through ``GIT_CONFIG_COUNT`` / ``GIT_CONFIG_PARAMETERS``, behind
a value gitpython's parser misreads, on a branch condition), ``GIT_CONFIG``, a symlink
retargeted, a same-size rewrite with its mtime restored, a linked worktree, threads, and an
owner change. Reproductions of helper-33's review (session 22); each failed before."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import git

from wiki.adapters import SourcePolicy


@pytest.fixture
def setup(repo: Path, tmp_path: Path, monkeypatch):
    """``(repo, tmp_path, handle, roots, truth)``: the kept policy's root names and a fresh
    ``git config``'s, for the test repository."""
    import git as gitpython

    from wiki.store import gitrepo

    monkeypatch.setattr(gitrepo, "SETTLED_NS", 0)  # this test's files count as settled
    for n in "abcde":
        (tmp_path / n).mkdir()
    handle = gitpython.Repo(repo)
    return repo, tmp_path, handle, lambda: _names(handle), lambda: _truth(repo)


def _truth(folder: Path) -> list[str]:
    out = subprocess.run(["git", "config", "--type=path", "--get-regexp",
                          r"^wiki\.sourceroots$"], cwd=folder, capture_output=True,
                         text=True).stdout
    return sorted(Path(line.split(" ", 1)[1]).name for line in out.splitlines())


def _names(handle) -> list[str]:
    return sorted(p.name for p in SourcePolicy.load(handle).roots)


def _allow(path: Path, tmp: Path, name: str) -> None:
    """A config file at ``path`` that allows the source root ``tmp/name``."""
    path.write_text(f"[wiki]\n\tsourceRoots = {tmp / name}\n")


def _follows_a_revocation(path: Path, tmp: Path, roots, truth) -> None:
    """The kept policy and git both allow ``a`` through ``path``; once ``path`` allows
    ``b`` instead (``a`` revoked), both say so."""
    assert roots() == truth() == ["a"]
    _allow(path, tmp, "b")
    assert roots() == truth()


def test_include_in_config_worktree(setup):
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    git(repo, "config", "extensions.worktreeConfig", "true")
    (Path(handle.git_dir) / "config.worktree").write_text(f"[include]\n\tpath = {inc}\n")
    _follows_a_revocation(inc, tmp, roots, truth)


def test_onbranch_in_config_worktree(setup):
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    git(repo, "config", "extensions.worktreeConfig", "true")
    (Path(handle.git_dir) / "config.worktree").write_text(
        f'[includeIf "onbranch:main"]\n\tpath = {inc}\n')
    assert roots() == truth() == ["a"]
    git(repo, "checkout", "-q", "-b", "other")
    assert roots() == truth()


def test_include_in_git_config_global_file(setup, monkeypatch):
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    g = tmp / "elsewhere.gitconfig"
    g.write_text(f"[include]\n\tpath = {inc}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(g))
    _follows_a_revocation(inc, tmp, roots, truth)


def test_git_config_variable_file(setup, monkeypatch):
    repo, tmp, handle, roots, truth = setup
    f = tmp / "only.gitconfig"
    _allow(f, tmp, "a")
    monkeypatch.setenv("GIT_CONFIG", str(f))   # git-config(1): used as --file
    _follows_a_revocation(f, tmp, roots, truth)


def test_include_via_git_config_count(setup, monkeypatch):
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "include.path")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(inc))
    _follows_a_revocation(inc, tmp, roots, truth)


def test_include_via_git_config_parameters(setup, monkeypatch):
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'include.path={inc}'")
    _follows_a_revocation(inc, tmp, roots, truth)


def test_symlink_retarget(setup):
    repo, tmp, handle, roots, truth = setup
    cfg = Path(handle.git_dir) / "config"
    x, y = tmp / "x.cfg", tmp / "y.cfg"
    base = cfg.read_text()
    x.write_text(base + f"[wiki]\n\tsourceRoots = {tmp/'a'}\n")
    y.write_text(base + f"[wiki]\n\tsourceRoots = {tmp/'b'}\n")
    cfg.unlink()
    cfg.symlink_to(x)
    assert roots() == truth() == ["a"]
    link = tmp / "l"
    link.symlink_to(y)
    os.replace(link, cfg)
    assert roots() == truth()


def test_same_size_touch_r_real_settle(setup, monkeypatch):
    from wiki.store import gitrepo
    monkeypatch.setattr(gitrepo, "SETTLED_NS", 2_000_000_000)
    repo, tmp, handle, roots, truth = setup
    cfg = Path(handle.git_dir) / "config"
    ref = tmp / "ref"
    cfg.write_text(cfg.read_text() + f"[wiki]\n\tsourceRoots = {tmp/'a'}\n")
    ref.touch()
    os.utime(ref, ns=(os.stat(cfg).st_atime_ns, os.stat(cfg).st_mtime_ns))
    time.sleep(2.2)
    assert roots() == truth() == ["a"]
    assert roots() == ["a"]
    with open(cfg, "r+") as fh:  # in place, same size, same inode, mtime restored
        text = fh.read().replace(f"{tmp/'a'}", f"{tmp/'b'}")
        fh.seek(0)
        fh.write(text)
    os.utime(cfg, ns=(os.stat(ref).st_atime_ns, os.stat(ref).st_mtime_ns))
    assert roots() == truth()


def test_hidden_include_real_settle(setup, monkeypatch):
    """gitpython's parser and git's disagree: git honours the [include], gitpython swallows
    it as the rest of a quoted value, so the policy is kept (real 2 s settle)."""
    from wiki.store import gitrepo
    monkeypatch.setattr(gitrepo, "SETTLED_NS", 2_000_000_000)
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    cfg = Path(handle.git_dir) / "config"
    cfg.write_text(cfg.read_text() + f'[wiki]\n\tnote = "x\\\ny" ;c\n[include]\n\tpath = {inc}\n')
    time.sleep(2.2)
    assert roots() == truth() == ["a"]
    inc.write_text(f"[wiki]\n\tsourceRoots = {tmp/'b'}\n")   # revoke a
    time.sleep(2.2)
    assert roots() == truth()


def test_worktree_include_real_settle(setup, monkeypatch):
    from wiki.store import gitrepo
    monkeypatch.setattr(gitrepo, "SETTLED_NS", 2_000_000_000)
    repo, tmp, handle, roots, truth = setup
    inc = tmp / "inc.gitconfig"
    _allow(inc, tmp, "a")
    git(repo, "config", "extensions.worktreeConfig", "true")
    git(repo, "config", "--worktree", "include.path", str(inc))
    time.sleep(2.2)
    assert roots() == truth() == ["a"]
    inc.write_text("")   # revoke every root
    assert roots() == truth()


def test_linked_worktree(setup):
    import git as gitpython

    repo, tmp, handle, roots, truth = setup
    wt = tmp / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "side")
    git(repo, "config", "extensions.worktreeConfig", "true")
    other = gitpython.Repo(wt)
    git(wt, "config", "--worktree", "wiki.sourceRoots", str(tmp / "a"))
    assert _names(other) == _truth(wt) == ["a"] and roots() == truth() == []
    git(wt, "config", "--worktree", "wiki.sourceRoots", str(tmp / "b"))
    assert _names(other) == _truth(wt) == ["b"] and roots() == truth() == []


def test_threads(setup):
    import threading

    import git as gitpython
    repo, tmp, handle, roots, truth = setup
    stop = [False]
    bad = []
    def reader():
        h = gitpython.Repo(repo)
        while not stop[0]:
            got = sorted(p.name for p in SourcePolicy.load(h).roots)
            if got and got != ["a"] and got != ["b"]:
                bad.append(got)
    ts = [threading.Thread(target=reader) for _ in range(3)]
    for t in ts:
        t.start()
    for i in range(30):
        git(repo, "config", "wiki.sourceRoots", str(tmp / "ab"[i % 2]))
    stop[0] = True
    for t in ts:
        t.join()
    final = truth()
    time.sleep(0.05)
    assert roots() == final and not bad


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a folder's owner needs root")
def test_ownership_change(setup):
    repo, tmp, handle, roots, truth = setup
    git(repo, "config", "wiki.sourceRoots", str(tmp / "a"))
    assert roots() == truth() == ["a"]
    os.chown(repo, 65534, 65534)   # the work tree now belongs to someone else
    assert roots() == truth()


def test_a_configuration_git_reads_and_gitpython_cannot_parse_still_loads(setup):
    """The kept policy reads git's own listing, not gitpython's parser, which raised on a
    continued value with a comment (a configuration git reads: the policy failed to load)."""
    repo, tmp, handle, roots, truth = setup
    cfg = Path(handle.git_dir) / "config"
    cfg.write_text(cfg.read_text() + f'[wiki]\n\tx = "a" \\\nb # c\n\tsourceRoots = {tmp / "a"}\n')
    assert roots() == truth() == ["a"]
    assert roots() == ["a"]


# -- a second review (helper-35): the repository as git finds it, and the cost ------------------

def _git_runs(monkeypatch) -> list:
    import git as gitpython

    runs: list = []
    real = gitpython.cmd.Git.execute

    def counted(self, command, *args, **kwargs):
        runs.append(command)
        return real(self, command, *args, **kwargs)

    monkeypatch.setattr(gitpython.cmd.Git, "execute", counted)
    return runs


def test_a_work_tree_pointed_at_another_git_dir(setup):
    import git as gitpython

    _, tmp, _, _, _ = setup
    tree = tmp / "wt"
    tree.mkdir()
    subprocess.run(["git", "init", "-q", "--separate-git-dir", str(tmp / "g1"), str(tree)],
                   check=True)
    subprocess.run(["git", "init", "-q", "--bare", str(tmp / "g2")], check=True)
    git(tmp / "g2", "config", "core.bare", "false")
    git(tree, "config", "wiki.sourceRoots", str(tmp / "a"))
    handle = gitpython.Repo(tree)
    assert _names(handle) == _truth(tree) == ["a"]
    (tree / ".git").write_text(f"gitdir: {tmp / 'g2'}\n")  # g2 allows nothing
    assert _names(handle) == _truth(tree) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="changing an owner needs root")
def test_a_linked_worktree_whose_git_file_changes_owner(setup):
    import git as gitpython

    _, tmp, _, _, _ = setup
    main = tmp / "r"
    main.mkdir()
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "x")
    git(main, "config", "wiki.sourceRoots", str(tmp / "a"))
    tree = tmp / "wt"
    git(main, "worktree", "add", "-q", str(tree))
    handle = gitpython.Repo(tree)
    assert _names(handle) == _truth(tree) == ["a"]
    os.chown(tree / ".git", 65534, 65534)  # git now ignores the repository's settings
    assert _names(handle) == _truth(tree)


@pytest.mark.skipif(os.geteuid() != 0, reason="changing an owner needs root")
def test_two_work_trees_of_one_git_dir_trusted_apart(setup):
    import git as gitpython

    _, tmp, _, _, _ = setup
    first, second = tmp / "r", tmp / "w"
    first.mkdir()
    second.mkdir()
    git(first, "init", "-q")
    git(first, "config", "wiki.sourceRoots", str(tmp / "a"))
    (second / ".git").write_text(f"gitdir: {first / '.git'}\n")
    for path in (first, first / ".git", second, second / ".git"):
        os.chown(path, 65534, 65534)  # someone else's repository
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(f"[safe]\n\tdirectory = {first}\n")
    assert _names(gitpython.Repo(first)) == _truth(first) == ["a"]
    assert _names(gitpython.Repo(second)) == _truth(second)


def test_a_relative_global_file_is_never_kept(setup, monkeypatch):
    repo, tmp, handle, _, _ = setup
    (repo / "sub").mkdir()
    (repo / "g.cfg").write_text("")
    monkeypatch.chdir(repo / "sub")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "g.cfg")  # git opens it in the work tree
    assert _names(handle) == _truth(repo) == []
    (repo / "g.cfg").write_text(f"[wiki]\n\tsourceRoots = {tmp / 'a'}\n")
    assert _names(handle) == _truth(repo) == ["a"]


def test_an_include_in_the_global_file_costs_one_git_run_per_load(setup, monkeypatch):
    repo, tmp, handle, _, _ = setup
    included = tmp / "inc.cfg"
    included.write_text("[user]\n\tname = x\n")
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(f"[include]\n\tpath = {included}\n")
    assert _names(handle) == []
    runs = _git_runs(monkeypatch)
    for _ in range(5):
        assert _names(handle) == []
    assert len(runs) == 5  # the policy's own run, not a listing too (was 10)
    included.write_text(f"[wiki]\n\tsourceRoots = {tmp / 'a'}\n")
    assert _names(handle) == _truth(repo) == ["a"]
