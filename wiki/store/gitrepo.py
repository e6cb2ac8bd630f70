"""Opening the user's repository safely and asking git who the user is.

Inherited location variables (``GIT_DIR``, ``GIT_INDEX_FILE``, ...) are stripped before
any git call so a hook or an outer git process can never redirect us to another
repository or index (pre-commit does the same). Identity variables
(``GIT_AUTHOR_NAME``, ...) are kept: they are how a person says who they are.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wiki.errors import IdentityError, NotARepositoryError

if TYPE_CHECKING:  # GitPython is imported where a repository is opened, not before
    import git

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
    import git

    clean_environment()
    try:
        return git.Repo(str(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise NotARepositoryError(
            f"{Path(path).absolute()}: not inside a git repository (run `git init` first)"
        ) from exc


_CONFIG_LEVELS = ("system", "user", "global", "repository")
SETTLED_NS = 2_000_000_000
"""A file's status is trusted to tell its content only when it was last modified and
changed at least this long (ns) before it was read: a file system with coarse times can
give an edit made just after the status was read the same times (git's "racy" entries)."""


def config_value(repo: git.Repo, section: str, name: str, default=None):
    """``git config`` value ``section.name`` of ``repo`` as gitpython's
    ``config_reader().get_value`` gives it (typed: ``"true"`` is ``True``, digits an
    ``int``), or ``default``. The parsed configuration is kept (:data:`GIT_CONFIGS`) while
    the system, user, global and repository files keep their status: reading them for
    every served call was 7 % of its CPU (measured with py-spy). Raises as
    ``get_value`` does for an unreadable file."""
    return GIT_CONFIGS.reader(repo).get_value(section, name, default)


class KeptGitConfigs:
    """The last configuration reader of each git dir (at most :attr:`REPOS`), reused while
    the paths of its files (they follow ``HOME`` and ``XDG_CONFIG_HOME``) and each file's
    status (times in ns, size, inode) are unchanged, and only once every file is
    :data:`SETTLED_NS` old. A configuration that includes other files (``[include]``,
    ``[includeIf ...]``, any case) is read anew each time. Values read by ``git config``
    itself are kept by :meth:`kept`, whose rule follows git's own reading. Thread-safe."""

    REPOS = 32

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, object]] = {}
        self._values: dict[tuple[str, str, str],
                           tuple[tuple[str, ...], tuple, object, float | None]] = {}
        """``(git dir, work tree, name) -> (files, stamp, value, retry_at)``: ``retry_at``
        ``None`` for a kept value, else when to look again (ns; ``inf``: once the stamp
        changes) while ``make()`` runs every time."""
        self._lock = threading.Lock()

    def reader(self, repo: git.Repo):
        """A read ``GitConfigParser`` of ``repo``'s whole configuration (read only)."""
        files = tuple(repo._get_config_path(level) for level in _CONFIG_LEVELS)
        stamp = (files, tuple(file_status(path) for path in files))
        key = os.path.realpath(repo.git_dir)
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        settled = time.time_ns() - SETTLED_NS
        reader = repo.config_reader()
        reader.read()
        includes = any(section.partition('"')[0].strip().lower().startswith("include")
                       for section in reader.sections())
        if not includes and all(st is None or (st[0] < settled and st[1] < settled)
                                for st in stamp[1]):
            with self._lock:
                self._kept.pop(key, None)
                self._kept[key] = (stamp, reader)
                while len(self._kept) > self.REPOS:
                    self._kept.pop(next(iter(self._kept)))
        return reader

    def kept(self, repo: git.Repo, name: str, make):
        """``make()`` (a value read by running ``git config``), computed once and kept
        under ``name`` while what git read it from is unchanged: the files ``git config
        --show-origin --list`` names (so git's own system prefix, ``config.worktree`` and
        the like), the files git would read that do not exist yet, each file's status,
        the work tree's ``.git`` entry and the owners of it, the git dir and the work
        tree (git ignores a repository of another owner), ``HOME``, ``XDG_CONFIG_HOME``
        and every ``GIT_CONFIG*`` variable. Never kept when the configuration includes
        files (any scope, as git sees it), names settings outside files (``GIT_CONFIG``,
        ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``, a relative
        ``GIT_CONFIG_GLOBAL``/``GIT_CONFIG_SYSTEM``), git cannot list it, or a file is
        younger than :data:`SETTLED_NS`; that verdict is itself kept under the same
        stamp, so such a configuration costs ``make()``'s git run alone. Least recently
        used entries go first past :attr:`REPOS`. Raises what ``make`` raises."""
        if any(os.environ.get(variable) for variable in _UNKEPT_VARIABLES) or any(
                not os.path.isabs(os.environ.get(variable) or "/")
                for variable in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")):
            return make()
        key = (os.path.realpath(repo.git_dir), os.path.realpath(repo.working_tree_dir or
                                                                repo.git_dir), name)
        with self._lock:
            found = self._values.get(key)
        if found is not None and _config_stamp(repo, found[0]) == found[1]:
            files, _, value, retry_at = found
            if retry_at is None:
                with self._lock:  # most recently used last
                    if self._values.get(key) is found:
                        self._values[key] = self._values.pop(key)
                return value
            if time.time_ns() < retry_at:
                return make()
        files, keepable = _config_files(repo)
        stamp = _config_stamp(repo, files)
        value = make()
        if _config_stamp(repo, files) != stamp:  # changed while it ran: nothing to keep
            return value
        times = [t for st in stamp[0] if st is not None for t in st[:2]]
        settled_at = max(times, default=0) + SETTLED_NS
        if not keepable:
            entry = (files, stamp, None, float("inf"))
        elif settled_at > time.time_ns():
            entry = (files, stamp, None, settled_at)
        else:
            entry = (files, stamp, value, None)
        with self._lock:
            self._values.pop(key, None)
            self._values[key] = entry
            while len(self._values) > self.REPOS:
                self._values.pop(next(iter(self._values)))
        return value


_UNKEPT_VARIABLES = ("GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")
"""Variables that give ``git config`` settings or a file of its own: a reading under
them is never kept."""


def _config_files(repo: git.Repo) -> tuple[tuple[str, ...], bool]:
    """``(files, keepable)``: every file ``git config`` of ``repo`` reads or would read
    (those it reports settings from with ``--show-origin``, and where the system, user,
    global, repository and work-tree files are or would be), and whether a reading may be
    kept: not when git cannot list the configuration (a repository it refuses), a setting
    comes from outside a file, or any setting includes another file."""
    import git as gitpython

    files = {str(repo._get_config_path(level)) for level in _CONFIG_LEVELS}
    files.add(os.path.join(repo.git_dir, "config.worktree"))
    files.update(os.environ[name] for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM")
                 if os.environ.get(name))
    try:
        listed = repo.git.config("--show-origin", "--list", "-z", with_exceptions=True,
                                 strip_newline_in_stdout=False)
    except gitpython.GitCommandError:
        return tuple(sorted(files)), False
    fields = listed.split("\0")
    where = repo.working_tree_dir or repo.git_dir
    keepable = True
    for origin, setting in zip(fields[0::2], fields[1::2], strict=False):
        if origin.startswith("file:"):
            files.add(os.path.join(where, origin[len("file:"):]))
        else:
            keepable = False
        if setting.partition("\n")[0].lower().startswith(("include.", "includeif.")):
            keepable = False
    return tuple(sorted(files)), keepable


def _config_stamp(repo: git.Repo, files: tuple[str, ...]) -> tuple:
    """The status of ``files``, the work tree's ``.git`` entry (a file naming the git dir
    in a linked worktree or submodule: not followed), the owners of the git dir, the
    work tree and that entry, and the variables that move git's configuration files
    (what :meth:`KeptGitConfigs.kept` compares)."""
    owners = []
    tree = repo.working_tree_dir
    for path, follow in ((repo.git_dir, True), (tree, True),
                         (os.path.join(tree, ".git") if tree else None, False)):
        try:
            st = (os.stat(path) if follow else os.lstat(path)) if path else None
        except OSError:
            st = None
        owners.append((st.st_uid, st.st_dev) if st else None)
    entry = file_status(os.path.join(tree, ".git"), follow=False) if tree else None
    if entry is not None and stat.S_ISDIR(entry[4]):
        entry = entry[3:]  # a folder's times move with every git write inside it
    variables = tuple(sorted((k, v) for k, v in os.environ.items()
                             if k.startswith("GIT_CONFIG") or k in ("HOME", "XDG_CONFIG_HOME")))
    return tuple(file_status(path) for path in files), entry, tuple(owners), variables


def file_status(path: str, *, follow: bool = True) -> tuple | None:
    """``(mtime_ns, ctime_ns, size, inode, mode)`` of ``path`` (``follow=False``: of a
    symbolic link itself, as git tracks it), ``None`` when it cannot be read: what the
    caches of this process compare to know a file is as it was."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)


GIT_CONFIGS = KeptGitConfigs()
"""The process's kept git configuration readers."""


class ThreadRepos:
    """GitPython repositories opened once per thread and kept for that thread's later calls
    (a long-lived process: ``wiki serve``, the MCP server). A fresh ``git.Repo`` per call
    cost a third of a served search or ask: its ``git cat-file`` helper processes are
    started again on first use. A kept repository is reused while its git dir is still the
    same directory (device, inode and change time); one deleted or replaced is opened again, which
    raises :class:`NotARepositoryError` when it is gone. A repository is never shared
    between threads (GitPython's helper processes are not thread-safe)."""

    def __init__(self) -> None:
        import threading

        self._local = threading.local()

    def get(self, path: Path | str) -> tuple[git.Repo, Path]:
        """This thread's repository containing ``path`` and its common git dir (symbolic
        links resolved, as :func:`common_dir`). Raises :class:`NotARepositoryError`."""
        kept: dict[str, tuple[git.Repo, Path, tuple]] = self._local.__dict__.setdefault(
            "kept", {})
        key = str(Path(path).absolute())
        found = kept.get(key)
        if found is not None:
            repo, common, stamp = found
            try:
                same = _stamp(repo.git_dir) == stamp
            except OSError:
                same = False
            if same:
                return repo, common
            del kept[key]
            repo.close()
        repo = open_repository(key)
        common = common_dir(repo)
        kept[key] = (repo, common, _stamp(repo.git_dir))
        return repo, common


def _stamp(path: str) -> tuple[int, int, int]:
    """Device, inode and change time (ns) of ``path``; raises ``OSError`` when it is gone.
    The change time tells a directory made again at the same path from the old one when
    the file system hands it the freed inode (ext4 does, right after a delete); it also
    moves when an entry directly in the git dir is added or removed (a lock file, a
    fetch's ``FETCH_HEAD``), which costs only a reopen."""
    info = os.stat(path)
    return info.st_dev, info.st_ino, info.st_ctime_ns


def common_dir(repo: git.Repo) -> Path:
    """The git dir shared by all worktrees (``git rev-parse --git-common-dir``)."""
    return Path(repo.common_dir).resolve()


@dataclass(frozen=True)
class Identity:
    """A git identity: ``name`` and ``email`` as git resolves them (self-declared: anyone
    can set any name and email; only a signature binds a commit to a key)."""

    name: str
    email: str

    def key(self) -> str:
        """The normalised email (:func:`normalise_email`), or the normalised name when
        there is no email: what the approval rule compares first."""
        email = normalise_email(self.email)
        return email or normalise_name(self.name)

    def keys(self) -> frozenset[str]:
        """Every normalised handle of this identity: ``email:<normalised email>`` and
        ``name:<normalised name>`` (each only when not empty)."""
        email, name = normalise_email(self.email), normalise_name(self.name)
        return frozenset(([f"email:{email}"] if email else [])
                         + ([f"name:{name}"] if name else []))

    def same_person(self, other: Identity) -> str | None:
        """Why ``other`` counts as the same person as this identity (``"the same email"``
        or ``"the same name"``, compared normalised), or ``None`` when they differ."""
        shared = self.keys() & other.keys()
        if any(k.startswith("email:") for k in shared):
            return "the same email"
        return "the same name" if shared else None

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


def normalise_email(email: str) -> str:
    """``email`` as a comparison key: Unicode NFKC, case-folded, surrounding spaces and
    angle brackets dropped, and a ``+tag`` dropped from the local part
    (``Alice+Laptop@Example.com`` -> ``alice@example.com``). ``""`` for an empty email."""
    text = unicodedata.normalize("NFKC", email).strip().strip("<>").strip().casefold()
    local, at, domain = text.rpartition("@")
    if not at:
        return text
    return f"{local.split('+', 1)[0] or local}@{domain}"


def normalise_name(name: str) -> str:
    """``name`` as a comparison key: Unicode NFKC, case-folded, runs of white space made
    one space (``"  alice   AUTHOR"`` -> ``"alice author"``). ``""`` for an empty name."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


_IDENT = re.compile(r"^(?P<name>.*?) <(?P<email>[^>]*)> \d+ [+-]\d{4}$")


def current_identity(repo: git.Repo) -> Identity:
    """Who is acting now as author: ``git var GIT_AUTHOR_IDENT`` (environment, then config).

    Raises :class:`IdentityError` when git cannot tell.
    """
    return _git_identity(repo, "GIT_AUTHOR_IDENT")


def current_committer(repo: git.Repo) -> Identity:
    """Who is committing now: ``git var GIT_COMMITTER_IDENT`` (``GIT_COMMITTER_NAME`` /
    ``GIT_COMMITTER_EMAIL``, then config). It differs from :func:`current_identity` when
    only the author variables were changed. Raises :class:`IdentityError`."""
    return _git_identity(repo, "GIT_COMMITTER_IDENT")


def _git_identity(repo: git.Repo, variable: str) -> Identity:
    import git

    try:
        line = repo.git.var(variable)
    except git.GitCommandError as exc:
        raise IdentityError(
            "git cannot tell who you are: set `git config user.name` and "
            "`git config user.email` (or GIT_AUTHOR_NAME/GIT_AUTHOR_EMAIL and "
            "GIT_COMMITTER_NAME/GIT_COMMITTER_EMAIL)") from exc
    match = _IDENT.match(line.strip())
    if not match:
        raise IdentityError(f"unexpected identity from git: {line!r}")
    return Identity(match["name"], match["email"])


def committed_at(commit: git.Commit) -> dt.datetime:
    """When ``commit`` was committed, as an aware UTC time (see :func:`_utc_seconds`)."""
    return _utc_seconds(commit.committed_date)


def authored_at(commit: git.Commit) -> dt.datetime:
    """When ``commit`` was authored, as an aware UTC time (see :func:`_utc_seconds`)."""
    return _utc_seconds(commit.authored_date)


def _utc_seconds(seconds: int) -> dt.datetime:
    """A commit's epoch seconds as UTC, clamped to years 1-9999. A commit object written
    by hand (``git hash-object --literally``) can carry any number and any zone
    (``18446744073709551617 +9959``); gitpython's ``committed_datetime`` raises
    ``ValueError``/``OverflowError`` on those, from every command that lists the commit."""
    try:
        return dt.datetime.fromtimestamp(seconds, dt.UTC)
    except (OverflowError, ValueError, OSError):
        bound = dt.datetime.max if seconds > 0 else dt.datetime.min
        return bound.replace(tzinfo=dt.UTC)
