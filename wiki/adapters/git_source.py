"""``git:<path>`` sources: a file of the repository that holds the wiki.

The path is relative to the repository root and read either from the work tree (the
default, ``[sources] git_ref = ""``: what `git status` sees, so an edit not yet committed
counts) or from the tree of a ref (``git_ref = "HEAD"``, ``"origin/main"``; always
``HEAD`` in a bare repository).

Speed: git already knows each file's object id. One listing of the whole repository
(``git ls-tree -r`` of the ref, or ``git ls-files -s`` plus ``git diff-files`` for the
work tree) gives every path's blob id; a source whose blob id equals the ``blob`` its entry
recorded is unchanged without being read. Only the others are read and compared by the
fingerprint of their canonical text, so an edit confined to frontmatter or whitespace is
still not a content change.

Policy (:mod:`wiki.adapters.policy`): a path is read only inside the repository: no
``..`` out of it, nothing in the ``.git`` folder, in the work tree nothing resolving
through a symbolic link outside it and no file git ignores; a refused path is a
:class:`Check` with ``refused`` set, never read.

Renames: :meth:`GitSource.renamed` follows git's rename detection for paths that no
longer exist (see docs/decisions.md).
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import git

from wiki.adapters.file_source import file_check
from wiki.adapters.policy import git_path_refusal
from wiki.adapters.registry import Check, Recorded, SourceEnv, register
from wiki.adapters.sources import decode_text, read_text, too_large
from wiki.errors import ConfigError, SourceError, SourceNotAllowedError
from wiki.store.gitrepo import SETTLED_NS, file_status
from wiki.store.indextree import is_text_name

_SKIPPED_MODES = ("160000",)  # submodules are not files


def _split_z(out: str) -> list[str]:
    return [item for item in out.split("\0") if item]


def work_tree_blobs(repo: git.Repo) -> dict[str, tuple[str, str]]:
    """``path -> (mode, blob id)`` of every tracked work-tree file whose content equals its
    staged blob (``git ls-files -s`` less what ``git diff-files`` reports changed): for
    those files the blob id names exactly the bytes on disk. The last listing of each
    repository is reused while its git index and every tracked file are as they were
    before it was taken (:class:`KeptListings`)."""
    return dict(LISTINGS.listing(repo))


def _list_work_tree_files(repo: git.Repo) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """One listing by git: the clean files' ``(mode, blob id)`` and every tracked path. A
    file marked assume-unchanged (tag in lower case) or skip-worktree (``S``) is never
    clean: ``git diff-files`` does not look at it, so its staged id may not be its bytes."""
    dirty = set(_split_z(repo.git.diff_files("--name-only", "-z")))
    found, tracked = {}, []
    for item in _split_z(repo.git.ls_files("-s", "-v", "-z")):
        meta, _, path = item.partition("\t")
        tag, mode, sha, stage = meta.split()
        tracked.append(path)
        flagged = tag.islower() or tag == "S"
        if stage == "0" and mode not in _SKIPPED_MODES and path not in dirty and not flagged:
            found[path] = (mode, sha)
    return found, tracked


def _with_folders(paths: list[str]) -> list[str]:
    """``paths`` and every folder above them: a folder swapped for a symbolic link (or
    moved) leaves the files' own status as it was, not the folder's."""
    folders: set[str] = set()
    for path in paths:
        folder = posixpath.dirname(path)
        while folder and folder not in folders:
            folders.add(folder)
            folder = posixpath.dirname(folder)
    return [*paths, *sorted(folders)]


def _stat(path: str) -> tuple | None:
    return file_status(path, follow=False)




class KeptListings:
    """The last work-tree listing of each repository (at most :attr:`REPOS`), reused while
    the git index file, every tracked file and every folder above one have the status
    (modification and change times in ns, size, inode, mode) they had *before* the
    listing was taken, all at least :data:`~wiki.store.gitrepo.SETTLED_NS` old: a file
    written during or after it moves its times, and the next call lists again. Statting
    the tracked files costs ~2 us each in this process; the two git processes of a
    listing cost 7.6 ms of CPU on the 247-file handbook, on every served ask (measured).
    Thread-safe."""

    REPOS = 16
    MAX_PATHS = 4_000
    """Repositories tracking more files are listed by git every time: a listing costs git
    ~7.6 ms plus ~1.5 us a file, checking a kept one ~3.3 us a file here (0.8 ms for the
    handbook's 247 and their folders), so keeping stops paying near 4,000 files."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, dict[str, tuple], dict[str, tuple[str, str]]]] = {}
        self._paths: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def listing(self, repo: git.Repo) -> dict[str, tuple[str, str]]:
        """``path -> (mode, blob id)`` of the clean tracked files of ``repo``'s work tree
        (read only: callers copy). The first listing of a repository only learns its
        tracked paths; the next one, with those statted before git runs, is kept."""
        root = repo.working_tree_dir
        if root is None:
            return _list_work_tree_files(repo)[0]
        index_file = os.path.join(repo.git_dir, "index")
        key = os.path.realpath(repo.git_dir)
        with self._lock:
            kept, known = self._kept.get(key), self._paths.get(key, [])
        if kept is not None:
            index_stat, files, found = kept
            if index_stat == _stat(index_file) and all(
                    _stat(os.path.join(root, path)) == st for path, st in files.items()):
                return found
        settled = time.time_ns() - SETTLED_NS
        index_stat = _stat(index_file)
        before = {path: _stat(os.path.join(root, path)) for path in _with_folders(known)}
        found, tracked = _list_work_tree_files(repo)
        if len(tracked) > self.MAX_PATHS:  # statting them would cost more than git does
            with self._lock:
                self._kept.pop(key, None)
                self._paths.pop(key, None)
            return found
        files = {path: before.get(path) for path in _with_folders(tracked)}
        stats = [index_stat, *files.values()]
        with self._lock:
            self._kept.pop(key, None)
            self._paths.pop(key, None)
            self._paths[key] = tracked
            if all(st is not None and st[0] < settled and st[1] < settled for st in stats):
                self._kept[key] = (index_stat, files, found)
            for table in (self._kept, self._paths):
                while len(table) > self.REPOS:
                    table.pop(next(iter(table)))
        return found


LISTINGS = KeptListings()
"""The process's kept work-tree listings."""


@register("git")
class GitSource:
    """Adapter for ``git:<path>`` uris (see the module docstring)."""

    def __init__(self, env: SourceEnv):
        self.env = env
        self.ref = env.config.sources.git_ref or (None if env.root is not None else "HEAD")
        self._blobs: dict[str, str] | None = None  # path -> blob id (clean files only)
        self._modes: dict[str, str] = {}
        self._root = env.root.resolve() if env.root is not None else None

    # -- paths and the one listing ------------------------------------------------------
    @staticmethod
    def relative(uri: str) -> str | None:
        """The repository path of ``uri`` (normalised), or ``None`` when it leaves the
        repository."""
        path = posixpath.normpath(uri[4:].lstrip("/") or ".")
        return None if path == "." or path == ".." or path.startswith("../") else path

    def blobs(self) -> dict[str, str]:
        """``path -> blob id`` of every file as git sees it (one listing, memoised); a
        work-tree file with unstaged changes is left out (its content has no id yet).
        Raises :class:`ConfigError` when ``git_ref`` names no commit."""
        if self._blobs is None:
            self._blobs = {}
            if self.ref:
                self._list_ref()
            else:
                self._list_work_tree()
        return self._blobs

    def _list_ref(self) -> None:
        try:
            out = self.env.repo.git.ls_tree("-r", "-z", "--full-tree", self.ref)
        except git.GitCommandError:
            raise ConfigError(f"wiki.toml [sources] git_ref: {self.ref!r} names no commit "
                              "in this repository") from None
        for item in _split_z(out):
            meta, _, path = item.partition("\t")
            mode, kind, sha = meta.split()
            if kind == "blob":
                self._blobs[path], self._modes[path] = sha, mode

    def _list_work_tree(self) -> None:
        for path, (mode, sha) in work_tree_blobs(self.env.repo).items():
            self._blobs[path], self._modes[path] = sha, mode

    # -- the adapter --------------------------------------------------------------------
    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """The source's fingerprint now (unchanged without a read when its blob id equals
        the recorded one), or why it is missing or may not be read."""
        try:
            path = self._allowed_path(uri)
        except SourceNotAllowedError as exc:
            return Check.not_allowed(exc)
        sha = self.blobs().get(path)
        if sha and recorded.blob == sha and recorded.fingerprint:
            return Check(uri, recorded.fingerprint, validators={"blob": sha}, unchanged=True)
        if self.ref is None:
            try:
                local = self._local(uri, path)
            except SourceNotAllowedError as exc:
                return Check.not_allowed(exc)
            return file_check(self.env, uri, local, {"blob": sha} if sha else None)
        if sha is None:
            return Check(uri, error=f"no longer exists at {self.ref}")
        try:
            text = self._read_blob(path, sha)
        except SourceError as exc:
            return Check(uri, error=f"is unreadable ({exc.reason})")
        return Check(uri, self.env.fingerprint(text), validators={"blob": sha})

    def local_path(self, uri: str) -> Path:
        """The real work-tree file of ``uri`` when the policy allows reading it (see
        :meth:`_local`); raises :class:`SourceNotAllowedError` otherwise, or when the
        repository is bare."""
        path = self._allowed_path(uri)
        if self._root is None:
            raise SourceNotAllowedError(uri, "a bare repository has no work tree")
        return self._local(uri, path)

    def _allowed_path(self, uri: str) -> str:
        """The repository path of ``uri``; raises :class:`SourceNotAllowedError` when it
        leaves the repository or lies in the ``.git`` folder."""
        path = self.relative(uri)
        if path is None:
            raise SourceNotAllowedError(uri, "the path leaves the repository")
        if "\0" in path:
            raise SourceNotAllowedError(uri, "a NUL byte in the path")
        reason = git_path_refusal(path)
        if reason is not None:
            raise SourceNotAllowedError(uri, reason)
        return path

    def _local(self, uri: str, path: str) -> Path:
        """The real work-tree file of the repository ``path``: symbolic links resolved, it
        must stay inside the work tree, and a file git does not know (or knows with
        changes) must not be one git ignores (``.env``). Raises
        :class:`SourceNotAllowedError`."""
        local = Path(os.path.realpath(self._root / path))
        if not local.is_relative_to(self._root):
            raise SourceNotAllowedError(uri, "the path leaves the repository (through a "
                                             "symbolic link)")
        # every rule applies to the file a link leads to as well: a tracked link to
        # `.git/config` or to an ignored `.env` is the file it names
        real = local.relative_to(self._root).as_posix()
        reason = git_path_refusal(real) or next(
            ("a path inside the .git folder" for folder in self._git_dirs()
             if local.is_relative_to(folder)), None)
        if reason is not None:
            raise SourceNotAllowedError(uri, reason + (f" (through a symbolic link to {real})"
                                                       if real != path else ""))
        for name in dict.fromkeys([path, real]):
            if name not in self.blobs():
                status, _, _ = self.env.repo.git.check_ignore(
                    "-q", "--", name, with_extended_output=True, with_exceptions=False)
                if status == 0:
                    raise SourceNotAllowedError(uri, "a file git ignores in this repository")
        return local

    def _git_dirs(self) -> list[Path]:
        """The repository's git folders, wherever they are (a linked worktree's, the
        common one)."""
        repo = self.env.repo
        return [Path(os.path.realpath(d)) for d in dict.fromkeys([repo.git_dir, repo.common_dir])]

    def _read_blob(self, path: str, sha: str) -> str:
        if self._modes.get(path) == "120000":
            raise SourceError(path, "a symbolic link")
        limits = self.env.config.ingest
        binsha = bytes.fromhex(sha)
        size = self.env.repo.odb.info(binsha).size
        if size > limits.max_bytes:
            raise too_large(path, size, limits.max_bytes)
        data = self.env.repo.odb.stream(binsha).read()
        return decode_text(data, path, max_lines=limits.max_lines)

    def read(self, uri: str) -> str:
        """The source's text at the ref or in the work tree (raises :class:`SourceError`,
        :class:`SourceNotAllowedError` for a path the policy refuses)."""
        path = self._allowed_path(uri)
        limits = self.env.config.ingest
        if self.ref is None:
            return read_text(self._local(uri, path), max_bytes=limits.max_bytes,
                             max_lines=limits.max_lines)
        sha = self.blobs().get(path)
        if sha is None:
            raise SourceError(uri, f"no longer exists at {self.ref}")
        return self._read_blob(path, sha)

    def close(self) -> None:
        """Nothing to release."""

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file where sources are read (the ref, or the work tree)."""
        if self.ref:
            return path in self.blobs()
        return (self.env.root / path).is_file()

    # -- renames ------------------------------------------------------------------------
    def renamed(self, paths: Iterable[str]) -> dict[str, str]:
        """``old path -> new path`` for those of ``paths`` (missing files) that git's
        rename detection followed to a file that exists now; paths deleted outright,
        renamed to a name that is not UTF-8, or never seen in history, are left out.

        Changes not yet committed come first (``git diff -M HEAD``, work-tree mode); then
        one ``git log -M --diff-filter=DR`` walks back from the ref until every path's most
        recent deletion or rename is found. A chain of renames is followed to its end."""
        wanted = set(paths)
        events: dict[str, str | None] = {}  # path -> where its newest rename took it
        if wanted and self.ref is None and self._has_head():
            out = self.env.repo.git.diff("-M", "--name-status", "-z", "HEAD")
            for old, new in _changes(_split_z(out)):
                events.setdefault(old, new)
        if wanted - events.keys():
            self._walk_history(wanted, events)
        found = {}
        for path in wanted:
            target, seen = events.get(path), {path}
            while target is not None and target in events and not self.exists(target) \
                    and target not in seen:
                seen.add(target)
                target = events[target]
            # a name that is not UTF-8 cannot be written in an entry: not followed
            if target is not None and self.exists(target) and is_text_name(target):
                found[path] = target
        return found

    def _has_head(self) -> bool:
        try:
            self.env.repo.git.rev_parse("--verify", "-q", "HEAD")
        except git.GitCommandError:
            return False
        return True

    def _walk_history(self, wanted: set[str], events: dict[str, str | None]) -> None:
        start = self.ref or "HEAD"
        if not self._has_head() and start == "HEAD":
            return
        process = self.env.repo.git.log("-M", "--diff-filter=DR", "--name-status", "-z",
                                        "--format=%x01%H", start, "--", as_process=True)
        try:
            for old, new in _changes(_stream_z(process.proc.stdout)):
                events.setdefault(old, new)
                if wanted <= events.keys():
                    break
        finally:
            process.proc.kill()
            process.proc.wait()


def _stream_z(stream) -> Iterator[str]:
    """NUL-separated items of a byte ``stream``, read in chunks."""
    pending = b""
    while chunk := stream.read(65536):
        *items, pending = (pending + chunk).split(b"\0")
        yield from (i.decode("utf-8", "surrogateescape") for i in items if i)
    if pending:
        yield pending.decode("utf-8", "surrogateescape")


def _changes(items: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """``(old path, new path or None)`` from ``--name-status -z`` items: renames and
    deletions; commit headers and other statuses are skipped."""
    items = iter(items)
    for item in items:
        status = item.strip()
        if not status or status.startswith("\x01"):
            continue
        kind = status[0]
        if kind in "RC":
            old, new = next(items, ""), next(items, "")
            if kind == "R":
                yield old, new
        elif kind == "D":
            yield next(items, ""), None
        else:
            next(items, None)
