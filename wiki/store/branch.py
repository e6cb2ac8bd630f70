"""Read and write a git branch from objects, never touching a work tree, index or HEAD.

A write stores blobs in the object database, builds trees from a sorted list of
``(mode, sha, path)`` entries, creates a commit with explicit parents and moves the ref
with ``git update-ref REF NEW OLD``: git's atomic compare-and-swap. A writer that lost the
race gets :class:`RefMovedError` and nothing is overwritten.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import git
from git.index.fun import write_tree_from_cache
from git.index.typ import BaseIndexEntry
from gitdb.base import IStream

from wiki.errors import RefMovedError, SigningError, TreePathError, WikiError, quoted
from wiki.store.disk_faults import writing
from wiki.store.gitrepo import Identity
from wiki.store.indextree import is_text_name
from wiki.store.treepaths import clashes

ZERO_SHA = "0" * 40
FILE_MODE = stat.S_IFREG | 0o644


@dataclass(frozen=True)
class TreeFile:
    """A file of a tree: its blob sha (hex) and git mode."""

    sha: str
    mode: int = FILE_MODE


class KeptTreeFiles:
    """The file lists of the last :attr:`SIZE` commits read, by full commit id, shared by
    every :class:`BranchStore` of the process (ids are content hashes, so one id names one
    tree in any repository). Thread-safe; a value is never changed once kept."""

    SIZE = 8
    """Commits kept: the wiki head, a proposal's base and tip, a few landed meanwhile (a
    100,000-entry tree's list is ~15 MB)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, dict[str, TreeFile]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, commit: str) -> dict[str, TreeFile] | None:
        """The kept list of ``commit`` (do not change it), or ``None``."""
        with self._lock:
            files = self._kept.get(commit)
            if files is not None:
                self._kept.move_to_end(commit)
            return files

    def put(self, commit: str, files: dict[str, TreeFile]) -> None:
        """Keep ``files`` for ``commit`` when it is a full id (a ref name can move)."""
        if not _FULL_ID.fullmatch(commit):
            return
        with self._lock:
            self._kept[commit] = files
            self._kept.move_to_end(commit)
            while len(self._kept) > self.SIZE:
                self._kept.popitem(last=False)


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_TREE_FILES = KeptTreeFiles()


class BranchStore:
    """Object-level access to the branches of ``repo``.

    Paths are POSIX, relative to the tree root, NFC Unicode. Shas are 40-char hex strings.
    """

    def __init__(self, repo: git.Repo):
        self.repo = repo

    # -- refs ------------------------------------------------------------------------
    def resolve(self, ref: str) -> str | None:
        """The commit sha ``ref`` points at, or ``None`` when it does not exist.

        Reads loose and packed refs without starting a git process (the hot path of
        every search)."""
        try:
            return git.SymbolicReference.dereference_recursive(self.repo, ref)
        except (ValueError, OSError):
            return None

    def update_ref(self, ref: str, new: str, expected_old: str | None, message: str) -> None:
        """Move ``ref`` to ``new`` only if it is still at ``expected_old`` (``None``: the
        ref must not exist yet). Raises :class:`RefMovedError` when it moved."""
        old = expected_old or ZERO_SHA
        try:
            with writing(self._ref_path(ref)):
                self.repo.git.update_ref("-m", message, "--", ref, new, old)
        except git.GitCommandError as exc:
            current = self.resolve(ref)
            if current != expected_old:
                raise RefMovedError(
                    f"{ref} moved to {(current or 'nothing')[:12]} while this change was "
                    f"being written on {(expected_old or 'nothing')[:12]}") from exc
            raise WikiError(f"git update-ref {ref} failed: {exc.stderr.strip()}") from exc

    def update_refs(self, updates: list[tuple[str, str | None, str | None]],
                    message: str) -> None:
        """Move several refs in one atomic transaction (``git update-ref --stdin``): each
        ``(ref, new, expected old)``; ``new=None`` deletes, ``old=None`` requires absence.
        Either every ref moves or none does (:class:`RefMovedError`)."""
        lines = ["start"]
        for ref, new, old in updates:
            lines.append(f"delete {ref} {old}" if new is None
                         else f"update {ref} {new} {old or ZERO_SHA}")
        lines += ["prepare", "commit", ""]
        with tempfile.TemporaryFile() as script:
            script.write("\n".join(lines).encode())
            script.seek(0)
            try:
                with writing(self._ref_path(updates[0][0] if updates else "refs")):
                    self.repo.git.update_ref("-m", message, "--stdin", istream=script)
            except git.GitCommandError as exc:
                raise RefMovedError(
                    "another change moved "
                    + ", ".join(ref for ref, _, _ in updates) + "; nothing was written"
                ) from exc

    def delete_ref(self, ref: str, expected_old: str) -> None:
        """Delete ``ref`` if it is still at ``expected_old``; :class:`RefMovedError` if not."""
        try:
            with writing(self._ref_path(ref)):
                self.repo.git.update_ref("-d", "--", ref, expected_old)
        except git.GitCommandError as exc:
            raise RefMovedError(f"{ref} moved; not deleted") from exc

    def _ref_path(self, ref: str) -> str:
        """Where git writes ``ref`` (for the message of a refused write)."""
        return str(Path(self.repo.common_dir) / ref)

    def _objects(self) -> str:
        return str(Path(self.repo.common_dir) / "objects")

    def list_refs(self, prefix: str) -> dict[str, str]:
        """``refname -> commit sha`` for every ref under ``prefix`` (e.g. ``refs/heads/x/``)."""
        out = self.repo.git.for_each_ref("--format=%(refname) %(objectname)", prefix)
        refs = {}
        for line in out.splitlines():
            name, _, sha = line.rpartition(" ")
            refs[name] = sha
        return refs

    # -- reading -----------------------------------------------------------------------
    def files(self, commit: str | None) -> dict[str, TreeFile]:
        """Every file of ``commit``'s tree as ``path -> TreeFile`` (empty for ``None``), a
        new dict the caller may change. Kept per commit id in this process
        (:class:`KeptTreeFiles`): a commit's tree never changes, and walking it costs one
        ``cat-file`` round trip per folder (a third of a ``wiki serve`` ask on the handbook).
        A tree GitPython refuses to read (a ``.git`` name, which only a branch made by hand
        can hold) is listed by ``git ls-tree`` instead, so the review check can flag it."""
        if commit is None:
            return {}
        kept = _TREE_FILES.get(commit)
        if kept is not None:
            return dict(kept)
        tree = self.repo.commit(commit).tree
        try:
            files = {item.path: TreeFile(item.hexsha, item.mode)
                     for item in tree.traverse() if item.type == "blob"}
        except ValueError:
            files = self._listed_files(commit)
        _TREE_FILES.put(commit, files)
        return dict(files)

    def _listed_files(self, commit: str) -> dict[str, TreeFile]:
        """:meth:`files` through ``git ls-tree -r -z`` (names that are not UTF-8 keep their
        bytes as surrogate escapes). Raises :class:`WikiError` when git fails."""
        done = subprocess.run(["git", f"--git-dir={self.repo.git_dir}", "ls-tree", "-r", "-z",
                               "--full-tree", commit], capture_output=True)
        if done.returncode != 0:
            raise WikiError(f"git ls-tree {commit[:12]} failed: "
                            + done.stderr.decode("utf-8", "replace").strip())
        files = {}
        for record in done.stdout.split(b"\0"):
            head, _, path = record.partition(b"\t")
            mode, kind, sha = (head.decode().split() + ["", "", ""])[:3]
            if kind == "blob":
                files[path.decode("utf-8", "surrogateescape")] = TreeFile(sha, int(mode, 8))
        return files

    def read(self, sha: str) -> bytes:
        """The content of blob ``sha``."""
        return self.repo.odb.stream(bytes.fromhex(sha)).read()

    def read_many(self, shas: list[str]) -> dict[str, bytes]:
        """``sha -> content`` of many blobs through ONE ``git cat-file --batch`` (all ids
        written at once, no round trip per object); ids git does not have are left out.
        Raises :class:`WikiError` when git fails."""
        if not shas:
            return {}
        done = subprocess.run(["git", f"--git-dir={self.repo.git_dir}", "cat-file", "--batch"],
                              input="".join(f"{sha}\n" for sha in shas).encode(),
                              capture_output=True)
        if done.returncode != 0:
            raise WikiError(f"git cat-file --batch failed: {done.stderr.decode().strip()}")
        out, found, pos = done.stdout, {}, 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) == 3:
                size = int(header[2])
                found[header[0].decode()] = out[pos:pos + size]
                pos += size + 1
        return found

    def read_path(self, commit: str | None, path: str) -> bytes | None:
        """The content of ``path`` in ``commit``, or ``None`` when absent."""
        if commit is None:
            return None
        try:
            blob = self.repo.commit(commit).tree / path
        except KeyError:
            return None
        return blob.data_stream.read() if blob.type == "blob" else None

    # -- writing -----------------------------------------------------------------------
    def store_blob(self, data: bytes) -> str:
        """Write ``data`` as a blob; returns its sha. Raises :class:`StorageError` when the
        object database cannot be written (read-only, full)."""
        with writing(self._objects()):
            istream = self.repo.odb.store(IStream(b"blob", len(data), BytesIO(data)))
        return istream.hexsha.decode() if isinstance(istream.hexsha, bytes) else istream.hexsha

    def write_tree(self, base: Mapping[str, TreeFile],
                   changes: Mapping[str, bytes | None]) -> str:
        """Store the tree of ``base`` with ``changes`` applied (``None`` deletes a path);
        returns the tree sha. Raises :class:`TreePathError` when ``changes`` make a path
        both a file and a folder (:mod:`wiki.store.treepaths`)."""
        files = dict(base)
        for path, data in changes.items():
            if data is None:
                files.pop(path, None)
            else:
                mode = files[path].mode if path in files else FILE_MODE
                files[path] = TreeFile(self.store_blob(data), mode)
        made = sorted(set(clashes(files)) - set(clashes(base)))
        if made:
            under = min(p for p in files if p.startswith(made[0] + "/"))
            raise TreePathError(f"{quoted(made[0])} would be both a file and a folder (of "
                                f"{quoted(under)}): git refuses such a tree; nothing was "
                                "written")
        if not all(map(is_text_name, files)):
            return self._git_write_tree(files)
        entries = [BaseIndexEntry((f.mode, bytes.fromhex(f.sha), 0, p))
                   for p, f in sorted(files.items(), key=lambda kv: kv[0].encode("utf-8"))]
        with writing(self._objects()):
            binsha, _ = write_tree_from_cache(entries, self.repo.odb, slice(0, len(entries)))
        return binsha.hex()

    def _git_write_tree(self, files: Mapping[str, TreeFile]) -> str:
        """The tree of ``files`` written by git itself (a throw-away index file): the path
        for a tree that keeps a name git holds but that is not UTF-8 (its bytes are in
        the name as surrogate escapes, which gitpython cannot write back)."""
        listing = b"".join(f"{f.mode:o} {f.sha} 0\t".encode() + p.encode("utf-8", "surrogateescape")
                           + b"\0" for p, f in files.items())
        with tempfile.TemporaryDirectory(prefix="wiki-tree-") as folder, \
                writing(self._objects()):
            env = {**os.environ, "GIT_INDEX_FILE": str(Path(folder) / "index")}
            git_dir = f"--git-dir={self.repo.git_dir}"
            added = subprocess.run(["git", git_dir, "update-index", "--add", "-z",
                                    "--index-info"], input=listing, env=env, capture_output=True)
            done = subprocess.run(["git", git_dir, "write-tree"], env=env, capture_output=True)
        if added.returncode or done.returncode:
            reason = (added.stderr or done.stderr).decode("utf-8", "replace").strip()
            raise WikiError(f"git could not write a tree: {reason}")
        return done.stdout.decode().strip()

    def commit(self, tree: str, parents: list[str], message: str, *,
               author: Identity, committer: Identity | None = None,
               sign: bool | None = None) -> str:
        """Create a commit object (no ref moves); returns its sha.

        ``sign``: ``True`` signs it with the user's signing key through git itself
        (``git commit-tree -S``: ``gpg.format``, ``user.signingkey``), ``False`` never
        signs, ``None`` (default) signs when git config ``commit.gpgsign`` is true, as
        ``git commit`` would. Raises :class:`SigningError` when signing fails."""
        committer = committer or author
        if sign is None:
            sign = self.gpgsign()
        if sign:
            return self._signed_commit(tree, parents, message, author, committer)
        with writing(self._objects()):
            commit = git.Commit.create_from_tree(
                self.repo, git.Tree(self.repo, bytes.fromhex(tree)), message,
                parent_commits=[self.repo.commit(p) for p in parents], head=False,
                author=git.Actor(author.name, author.email),
                committer=git.Actor(committer.name, committer.email))
        return commit.hexsha

    def gpgsign(self) -> bool:
        """Whether git config ``commit.gpgsign`` asks for signed commits (false when unset
        or not a boolean)."""
        try:
            value = self.repo.git.config("--type=bool", "--get", "commit.gpgsign")
        except git.GitCommandError:
            return False
        return value.strip() == "true"

    def _signed_commit(self, tree: str, parents: list[str], message: str, author: Identity,
                       committer: Identity) -> str:
        env = {**os.environ,
               "GIT_AUTHOR_NAME": author.name, "GIT_AUTHOR_EMAIL": author.email,
               "GIT_COMMITTER_NAME": committer.name, "GIT_COMMITTER_EMAIL": committer.email}
        args = ["git", f"--git-dir={self.repo.git_dir}", "commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        try:
            done = subprocess.run([*args, "-S", "-F", "-"], input=message.encode("utf-8"),
                                  capture_output=True, env=env,
                                  cwd=self.repo.working_tree_dir or self.repo.git_dir)
        except OSError as exc:
            raise SigningError(f"git could not be started to sign a commit: {exc}") from exc
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise SigningError(
                "git could not sign the commit"
                + (f" ({reason[-1].removeprefix('fatal: ').removeprefix('error: ')})"
                   if reason else "")
                + ": set a signing key (`git config gpg.format ssh` and `git config "
                "user.signingkey /path/to/key.pub`, or a GPG key), or turn off "
                "commit.gpgsign; `[review] require_signatures` in wiki.toml asks for "
                "signed proposals and approvals")
        return done.stdout.decode().strip()
