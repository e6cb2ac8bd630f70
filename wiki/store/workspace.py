"""The wiki of one repository: where its branch, proposals and derived state live."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from wiki.config import CONFIG_PATH, WikiConfig
from wiki.config_template import TEMPLATE
from wiki.errors import AlreadyInitializedError, ConfigError, NotInitializedError
from wiki.store import gitcli
from wiki.store.gitcli import GitUnclear, Location
from wiki.store.gitrepo import (
    ThreadRepos,
    clean_environment,
    common_dir,
    config_value,
    current_identity,
    open_repository,
)

if TYPE_CHECKING:
    import git

    from wiki.store.branch import BranchStore
    from wiki.store.snapshot import Snapshot

DEFAULT_BRANCH = "wiki"
_WIKI_COMMITS: set[str] = set()
"""Commits seen to hold ``wiki.toml`` in this process (a commit's tree never changes, so a
server checks each head once, not once per call); cleared at 4,096."""
_SIMPLE_BRANCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def _valid_branch(wiki: Wiki, name: str) -> str:
    """``name`` if git accepts it as a new branch name; :class:`ConfigError` otherwise."""
    if _SIMPLE_BRANCH.match(name) and name != "HEAD":
        return name  # the common case needs no git process
    if not name or name == "HEAD" or name.startswith(("refs/", "-")):
        raise ConfigError(f"invalid wiki branch name {name!r}: give a plain branch name "
                          "such as 'wiki' or 'team/kb'")
    if not gitcli.branch_name_ok(wiki.git_dir, name):
        raise ConfigError(f"invalid wiki branch name {name!r} (see `git check-ref-format`)")
    return name


class Wiki:
    """The wiki kept on a branch of the repository that contains ``path``.

    The branch name comes from ``branch``, else ``$WIKI_BRANCH``, else
    ``git config wiki.branch``, else ``wiki``. Proposals live under
    ``refs/heads/<branch>-proposals/`` (git cannot hold both ``wiki`` and ``wiki/x``).
    Derived state (search database, gap log) lives in ``<git common dir>/wiki/``.

    In a process that has not loaded GitPython, the repository is found, its config read
    and the head resolved by the ``git`` command (:mod:`wiki.store.gitcli`) and
    GitPython's :attr:`repo` is opened on first use (reading entries, writing); it is
    opened at once when GitPython is loaded already or git does not answer plainly. Raises
    :class:`NotARepositoryError` when ``path`` is in no repository, ``ConfigError`` for an
    invalid branch name. ``repos`` (a long-lived process's :class:`ThreadRepos`): the
    calling thread's repository, opened once and reused.
    """

    def __init__(self, path: Path | str = ".", branch: str | None = None, *,
                 repos: ThreadRepos | None = None):
        clean_environment()
        self._path = Path(path).absolute()  # a later `cd` must not change the repository
        self._repo: git.Repo | None = None
        self._store: BranchStore | None = None
        self._wiki_settings: dict[str, str] | None = None
        found = None
        if repos is not None:  # a long-lived process: this thread's repository, reused
            self._repo, common = repos.get(self._path)
            found = Location(Path(self._repo.git_dir), common)
        elif "git" not in sys.modules:  # loaded already (a server): it answers, no process
            with contextlib.suppress(GitUnclear):
                found = gitcli.locate(self._path)
        if found is None:  # NotARepositoryError as before
            found = Location(Path(self.repo.git_dir), common_dir(self.repo))
        self.git_dir = found.git_dir
        chosen = branch if branch is not None else (
            os.environ.get("WIKI_BRANCH") or self._configured_branch())
        self.branch = _valid_branch(self, chosen)
        self._checked_heads: set[str] = set()
        self.ref = f"refs/heads/{self.branch}"
        self.proposal_prefix = f"refs/heads/{self.branch}-proposals/"
        self.state_dir = found.common_dir / "wiki"

    @property
    def repo(self) -> git.Repo:
        """The repository as GitPython opens it (on first use). Raises
        :class:`NotARepositoryError`."""
        if self._repo is None:
            self._repo = open_repository(self._path)
        return self._repo

    @property
    def store(self) -> BranchStore:
        """Object-level access to the repository's branches (GitPython, on first use)."""
        if self._store is None:
            from wiki.store.branch import BranchStore

            self._store = BranchStore(self.repo)
        return self._store

    def setting(self, key: str) -> str | None:
        """The git config value ``key`` (``section.name``) of this repository, surrounding
        spaces dropped; ``None`` when unset or empty, or when the config cannot be read
        (that is git's to report, not ours)."""
        if self._repo is None:
            with contextlib.suppress(GitUnclear):
                return (self._git_settings(key) or "").strip() or None
        section, _, name = key.partition(".")
        try:
            value = config_value(self.repo, section, name, "")
        except Exception:
            return None
        return str(value).strip() or None

    def _configured_branch(self) -> str:
        if self._repo is None:
            with contextlib.suppress(GitUnclear):
                value = self._git_settings("wiki.branch")
                return DEFAULT_BRANCH if value is None else value
        try:
            value = config_value(self.repo, "wiki", "branch", DEFAULT_BRANCH)
        except Exception:  # an unreadable config is git's to report, not ours
            return DEFAULT_BRANCH
        return str(value)

    def _git_settings(self, key: str) -> str | None:
        """git config ``key`` read by the ``git`` command: a ``wiki.*`` key from one read
        of the whole ``[wiki]`` section (kept: the branch and the index URL cost one git
        process, not two), another by itself. Raises :class:`GitUnclear`."""
        section, _, name = key.partition(".")
        if section.lower() != "wiki" or "." in name:
            return gitcli.config_value(self.git_dir, key)
        if self._wiki_settings is None:
            self._wiki_settings = gitcli.section_values(self.git_dir, "wiki")
        return self._wiki_settings.get(key.lower())

    @property
    def root(self) -> Path | None:
        """The work tree root of the repository (``None`` for a bare repository)."""
        return Path(self.repo.working_tree_dir) if self.repo.working_tree_dir else None

    def head(self) -> str | None:
        """The commit at the tip of the wiki branch, or ``None`` before ``init``."""
        if self._repo is None:  # not opened: one git process instead of GitPython
            with contextlib.suppress(GitUnclear):
                return gitcli.resolve_ref(self.git_dir, self.ref)
        return self.store.resolve(self.ref)

    def require_head(self) -> str:
        """The wiki head. Raises :class:`NotInitializedError` when there is no branch, or
        when the branch is not a wiki (no ``wiki.toml``: e.g. ``--branch main``)."""
        head = self.head()
        if head is None:
            raise NotInitializedError(
                f"no wiki branch '{self.branch}' in {self.repo.common_dir}: run `wiki init`")
        if head not in self._checked_heads and head not in _WIKI_COMMITS:
            if not self._has_config(head):
                raise NotInitializedError(
                    f"branch '{self.branch}' is not a wiki (it has no {CONFIG_PATH}); pick "
                    "another --branch, or `wiki --branch NAME init` a new one")
            if len(_WIKI_COMMITS) >= 4096:
                _WIKI_COMMITS.clear()
            _WIKI_COMMITS.add(head)
            self._checked_heads.add(head)
        return head

    def _has_config(self, head: str) -> bool:
        if self._repo is None:
            with contextlib.suppress(GitUnclear):
                return gitcli.has_file(self.git_dir, head, CONFIG_PATH)
        return self.store.read_path(head, CONFIG_PATH) is not None

    def resolve_base(self, rev: str) -> str:
        """The full sha of ``rev`` (a sha, possibly abbreviated, or any revision git
        understands) when it is a commit of the wiki branch's history (the head or an
        ancestor): the base a proposal is built on. Raises ``ConfigError`` otherwise."""
        head = self.require_head()
        import git

        try:
            found = self.repo.rev_parse(rev.strip()) if rev.strip() else None
            sha = found.hexsha if found is not None and found.type == "commit" else ""
        except (ValueError, git.BadName, git.BadObject) as exc:
            raise ConfigError(f"base {rev!r}: not a commit in this repository") from exc
        if not sha or not (sha == head or self.repo.is_ancestor(sha, head)):
            raise ConfigError(f"base {rev!r}: not a commit of the wiki branch "
                              f"'{self.branch}' (give the commit `wiki show` reported)")
        return sha

    def checked_out_in(self, ref: str | None = None) -> str | None:
        """The worktree path where ``ref`` (default: the wiki branch) is checked out, if
        any: moving it there would make that worktree revert the change on its next commit."""
        ref = ref or self.ref
        listing = self.repo.git.worktree("list", "--porcelain")
        path = None
        for line in listing.splitlines():
            if line.startswith("worktree "):
                path = line.split(" ", 1)[1]
            elif line == f"branch {ref}":
                return path
        return None

    def snapshot(self, commit: str | None = None) -> Snapshot:
        """The wiki at ``commit`` (default: the head; raises when not initialised)."""
        from wiki.store.snapshot import Snapshot  # entries and YAML: not for every read

        return Snapshot(self.store, commit or self.require_head())

    def config(self) -> WikiConfig:
        """Settings from ``wiki.toml`` on the wiki head."""
        return self.snapshot().config()

    def database_path(self) -> Path:
        """The derived search database of this branch."""
        return self.state_dir / (self.branch.replace("/", "__") + ".sqlite")

    def init(self) -> str:
        """Create the wiki branch with ``wiki.toml`` and a root ``index.md`` in one commit
        authored by the current git identity. Raises :class:`AlreadyInitializedError`."""
        if self.head() is not None:
            raise AlreadyInitializedError(f"the wiki branch '{self.branch}' already exists")
        author = current_identity(self.repo)
        from wiki.store.snapshot import Snapshot, write_commit

        empty = Snapshot(self.store, None)
        commit = write_commit(empty, {CONFIG_PATH: TEMPLATE.encode("utf-8")},
                              "wiki: initialise the wiki\n", author=author)
        self.store.update_ref(self.ref, commit, None, "wiki init")
        return commit
