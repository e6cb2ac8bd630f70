"""Opening the user's repository safely and asking git who the user is.

Inherited location variables (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) are stripped before
any git call so a hook or an outer git process can never redirect us to another
repository or index (pre-commit does the same). Identity variables
(``GIT_AUTHOR_NAME``, ...) are kept: they are how a person says who they are.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import git

from wiki.errors import IdentityError, NotARepositoryError

LOCATION_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
    "GIT_CEILING_DIRECTORIES", "GIT_QUARANTINE_PATH",
)


def clean_environment() -> None:
    """Remove inherited git location variables from this process's environment."""
    for name in LOCATION_VARIABLES:
        os.environ.pop(name, None)


def open_repository(path: Path | str) -> git.Repo:
    """The repository containing ``path`` (a work tree, a linked worktree or a bare repo).

    Raises :class:`NotARepositoryError` when there is none.
    """
    clean_environment()
    try:
        return git.Repo(str(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise NotARepositoryError(
            f"{path}: not inside a git repository (run `git init` first)") from exc


def common_dir(repo: git.Repo) -> Path:
    """The git dir shared by all worktrees (``git rev-parse --git-common-dir``)."""
    return Path(repo.common_dir).resolve()


@dataclass(frozen=True)
class Identity:
    """A git identity: ``name`` and ``email`` as git resolves them."""

    name: str
    email: str

    def key(self) -> str:
        """What makes two identities the same person: the email, case-insensitively
        (the name when there is no email)."""
        return (self.email or self.name).strip().casefold()

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


_IDENT = re.compile(r"^(?P<name>.*?) <(?P<email>[^>]*)> \d+ [+-]\d{4}$")


def current_identity(repo: git.Repo) -> Identity:
    """Who is acting now: ``git var GIT_AUTHOR_IDENT`` (environment, then config).

    Raises :class:`IdentityError` when git cannot tell.
    """
    try:
        line = repo.git.var("GIT_AUTHOR_IDENT")
    except git.GitCommandError as exc:
        raise IdentityError(
            "git cannot tell who you are: set `git config user.name` and "
            "`git config user.email` (or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL)") from exc
    match = _IDENT.match(line.strip())
    if not match:
        raise IdentityError(f"unexpected identity from git: {line!r}")
    return Identity(match["name"], match["email"])
