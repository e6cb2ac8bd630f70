"""The few reads of a plain search asked of the ``git`` command itself, without GitPython.

Where the repository is (``git rev-parse``), config values (``git config``), where
a ref points (``git show-ref --verify``) and whether a commit has a file
(``git cat-file --batch-check``): one short git process each, instead of importing GitPython (which
also runs ``git version`` twice when imported). Each function answers only what git says
plainly, by its exit status; anything else (git missing, a repository git refuses, an
unreadable config, a broken ref) raises :class:`GitUnclear`, and the caller asks
GitPython as before, so the answers and the errors stay those of
:mod:`wiki.store.gitrepo`. The caller strips inherited location variables first
(:func:`wiki.store.gitrepo.clean_environment`).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


class GitUnclear(Exception):
    """git did not answer plainly (see the module): ask GitPython instead. Internal to
    ``wiki/store``; never reaches a user."""


@dataclass(frozen=True)
class Location:
    """Where a repository is: ``git_dir`` (absolute; a linked worktree's own git dir) and
    ``common_dir`` (the git dir shared by all worktrees, symbolic links resolved)."""

    git_dir: Path
    common_dir: Path


def _git(args: list[str], *, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], input=stdin, capture_output=True, check=False,
                              env={**os.environ, "LC_ALL": "C"})  # untranslated words
    except OSError as exc:  # no git at all: GitPython will say so its own way
        raise GitUnclear(str(exc)) from exc


def locate(path: Path | str) -> Location:
    """The repository containing ``path``: a work tree (or a folder inside one), a linked
    worktree or a bare repository (or a folder inside it). Raises :class:`GitUnclear`
    when git finds none or refuses it (not a repository, dubious ownership, a bad config
    file), and when ``path`` is inside the ``.git`` folder of a work tree."""
    where = Path(path).absolute()
    done = _git(["-C", str(where), "rev-parse", "--absolute-git-dir", "--git-common-dir",
                 "--is-bare-repository", "--is-inside-git-dir"])
    lines = done.stdout.decode("utf-8", "surrogateescape").split("\n")
    if done.returncode != 0 or len(lines) != 5 or lines[4] != "":
        raise GitUnclear(done.stderr.decode("utf-8", "replace").strip())
    git_dir, common, bare, inside = lines[:4]
    if inside == "true" and bare != "true":
        raise GitUnclear("inside the .git folder of a work tree")
    return Location(Path(git_dir), (where / common).resolve())


def config_value(git_dir: Path, key: str) -> str | None:
    """The value of git config ``key`` (``section.name``) as git reads it (system, global,
    repository and worktree files, includes), the last one when set several times;
    ``None`` when unset. Raises :class:`GitUnclear` when git cannot read the config."""
    done = _git([f"--git-dir={git_dir}", "config", "--get", key])
    if done.returncode == 1:
        return None
    if done.returncode != 0:
        raise GitUnclear(done.stderr.decode("utf-8", "replace").strip())
    return done.stdout.decode("utf-8", "surrogateescape").removesuffix("\n")


def section_values(git_dir: Path, section: str) -> dict[str, str]:
    """Every ``section.name`` git config value of the repository (as
    :func:`config_value` reads them, the last one when a key is set several times), in one
    git process: ``{"section.name": value}`` with the key lowercased (git config keys are
    case-insensitive; ``git config`` prints them so). Raises :class:`GitUnclear` when git
    cannot read the config."""
    done = _git([f"--git-dir={git_dir}", "config", "-z", "--get-regexp",
                 "^" + section.lower() + r"\.[^.]*$"])
    if done.returncode == 1:
        return {}
    if done.returncode != 0:
        raise GitUnclear(done.stderr.decode("utf-8", "replace").strip())
    values: dict[str, str] = {}
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]:
        key, _, value = item.partition("\n")  # -z: a key without "=" has no newline
        values[key.lower()] = value  # "" then, as `git config --get` prints it
    return values


def resolve_ref(git_dir: Path, ref: str) -> str | None:
    """The sha (40 hex) the full ref name ``ref`` (``refs/heads/...``) points at, symbolic
    refs followed; ``None`` when there is no such ref. Raises :class:`GitUnclear` for
    anything else (a ref to a missing object, a damaged ref file)."""
    done = _git([f"--git-dir={git_dir}", "show-ref", "--verify", "--", ref])
    if done.returncode == 1 or (done.returncode == 128 and b"not a valid ref" in done.stderr):
        return None
    fields = done.stdout.decode("ascii", "replace").split()
    if done.returncode != 0 or len(fields) != 2 or fields[1] != ref:
        raise GitUnclear(done.stderr.decode("utf-8", "replace").strip())
    return fields[0]


def branch_name_ok(git_dir: Path, name: str) -> bool:
    """Whether git accepts ``name`` as a branch name (``git check-ref-format --branch``,
    run in the repository as GitPython ran it)."""
    return _git([f"--git-dir={git_dir}", "check-ref-format", "--branch", name]
                ).returncode == 0


def has_file(git_dir: Path, commit: str, path: str) -> bool:
    """Whether ``commit``'s tree holds a file (a blob) at ``path`` (``git cat-file
    --batch-check`` of ``commit:path``). Raises :class:`GitUnclear` when git fails
    otherwise than by not finding it."""
    done = _git([f"--git-dir={git_dir}", "cat-file", "--batch-check"],
                stdin=f"{commit}:{path}\n".encode())
    if done.returncode != 0:
        raise GitUnclear(done.stderr.decode("utf-8", "replace").strip())
    fields = done.stdout.decode("utf-8", "surrogateescape").split()
    return len(fields) == 3 and fields[1] == "blob"


def objects_of_type(git_dir: Path | str, shas: set[str], kind: str) -> set[str]:
    """The objects among ``shas`` (hex ids) that are of ``kind`` (``blob``, ``tree``,
    ``commit``, ``tag``), by one ``git cat-file --batch-check``; an id git does not have
    is in none."""
    if not shas:
        return set()
    done = subprocess.run(["git", f"--git-dir={git_dir}", "cat-file",
                           "--batch-check=%(objectname) %(objecttype)"],
                          input="".join(f"{sha}\n" for sha in sorted(shas)).encode(),
                          capture_output=True)
    return {line.split()[0] for line in done.stdout.decode().splitlines()
            if line.endswith(f" {kind}")}
