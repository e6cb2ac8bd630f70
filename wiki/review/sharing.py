"""``wiki sync``: exchange the wiki branch and the proposal branches with a remote.

Never force-pushes. The remote's refs are fetched into ``refs/remotes/<remote>/``; then:

* same commit: nothing to do;
* the local wiki is behind: fast-forward it (compare-and-swap);
* ahead: push (a plain push, which the remote refuses if it moved meanwhile);
* diverged (including a remote that was force-pushed): the local landings are replayed
  on top of the remote head as one merge commit when the two sides changed different
  paths, the old local head is kept as ``refs/wiki-rescue/<branch>/<time>``, and the result
  is pushed. When both changed the same path, nothing is forced: the local changes become a
  proposal on the remote head (``sync-...``), the local wiki follows the remote, and the
  rescue ref keeps the old head. Headless runs never block.

Proposal branches go both ways: local ones the remote lacks (or that are ahead) are pushed;
remote ones missing locally are created.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import git

from wiki.errors import BranchCheckedOutError, ConfigError, RemoteError, StorageError
from wiki.review import overviews
from wiki.review.proposals import BASE_TRAILER, PROPOSAL_TRAILER, rejected_prefix
from wiki.store.derived import refresh
from wiki.store.disk_faults import disk_cause, storage_cause
from wiki.store.gitrepo import current_identity
from wiki.store.snapshot import Snapshot, with_indexes
from wiki.store.workspace import Wiki


@dataclass
class SyncResult:
    """What ``wiki sync`` did: ``action`` on the wiki branch (up-to-date, fast-forward,
    pushed, merged, conflict-proposal, created-local, created-remote), the resulting
    ``head``, a ``rescue`` ref when the local head was set aside, the ``proposal`` made
    from a conflict, proposal branches ``pushed`` and ``fetched``, ``closed`` (landed or
    rejected, removed here and on the remote) and ``diverged`` (changed differently on
    both sides: left alone, for their authors)."""

    remote: str
    action: str
    head: str | None
    rescue: str | None = None
    proposal: str | None = None
    pushed: list[str] = field(default_factory=list)
    fetched: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)


def sync_remote(wiki: Wiki, remote: str = "origin") -> SyncResult:
    """Synchronise with ``remote``. Raises ``ConfigError`` for an unknown remote and
    ``WikiError`` when git cannot reach it."""
    if remote not in [r.name for r in wiki.repo.remotes]:
        raise ConfigError(f"no git remote named {remote!r} (see `git remote -v`)")
    where = wiki.checked_out_in(wiki.ref)
    if where is not None:
        raise BranchCheckedOutError(
            f"the wiki branch '{wiki.branch}' is checked out in {where}; sync would move it "
            "under that worktree — use `git worktree add --detach` to browse the wiki")
    tracking = f"refs/remotes/{remote}/"
    branch, proposals = wiki.branch, wiki.proposal_prefix.removeprefix("refs/heads/")
    rejected = rejected_prefix(wiki).removeprefix("refs/heads/")
    heads = {line.split("\t", 1)[1] for line in
             _git(wiki, remote, "ls-remote", "--heads", remote).splitlines() if "\t" in line}
    specs = [f"+refs/heads/{proposals}*:{tracking}{proposals}*",
             f"+refs/heads/{rejected}*:{tracking}{rejected}*"]
    if f"refs/heads/{branch}" in heads:
        specs.insert(0, f"+refs/heads/{branch}:{tracking}{branch}")
    _git(wiki, remote, "fetch", "--quiet", "--prune", remote, *specs)
    local = wiki.head()
    theirs = wiki.store.resolve(f"{tracking}{branch}") if specs[0].endswith(branch) else None
    result = _sync_branch(wiki, remote, local, theirs)
    _sync_rejections(wiki, remote, tracking, rejected, result)
    _sync_proposals(wiki, remote, tracking, proposals, result)
    if result.head != local:
        refresh(wiki)  # status and lint read the state sync brought (wiki.store.derived)
    return result


def _sync_branch(wiki: Wiki, remote: str, local: str | None,
                 theirs: str | None) -> SyncResult:
    push = f"refs/heads/{wiki.branch}"
    if theirs is None and local is None:
        raise ConfigError(f"neither this repository nor {remote} has a wiki branch "
                          f"'{wiki.branch}': run `wiki init`")
    if theirs is None:
        _git(wiki, remote, "push", "--quiet", remote, f"{local}:{push}")
        return SyncResult(remote, "created-remote", local)
    if local is None:
        wiki.store.update_ref(wiki.ref, theirs, None, f"wiki sync from {remote}")
        return SyncResult(remote, "created-local", theirs)
    if local == theirs:
        return SyncResult(remote, "up-to-date", local)
    if wiki.repo.is_ancestor(local, theirs):
        wiki.store.update_ref(wiki.ref, theirs, local, f"wiki sync from {remote}")
        return SyncResult(remote, "fast-forward", theirs)
    if wiki.repo.is_ancestor(theirs, local):
        _git(wiki, remote, "push", "--quiet", remote, f"{local}:{push}")
        return SyncResult(remote, "pushed", local)
    return _replay(wiki, remote, local, theirs)


def _replay(wiki: Wiki, remote: str, local: str, theirs: str) -> SyncResult:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    rescue = f"refs/wiki-rescue/{wiki.branch}/{stamp}"
    wiki.store.update_ref(rescue, local, None, "wiki sync: the local head before replay")
    bases = wiki.repo.merge_base(local, theirs)
    base = Snapshot(wiki.store, bases[0].hexsha if bases else None)
    mine, other = Snapshot(wiki.store, local), Snapshot(wiki.store, theirs)
    ours = overviews.changed(wiki.store, base.files, mine.files)  # index.md: its overview
    both = sorted(p for p in ours & overviews.changed(wiki.store, base.files, other.files)
                  if not overviews.same(wiki.store, p, mine.files.get(p), other.files.get(p)))
    changes = {p: mine.read(p) for p in ours}
    me = current_identity(wiki.repo)
    if not both:
        tree = wiki.store.write_tree(other.files, with_indexes(other, changes))
        message = f"wiki sync: replay local landings onto {remote}\n\nWiki-Rescue: {rescue}\n"
        merged = wiki.store.commit(tree, [theirs, local], message, author=me)
        wiki.store.update_ref(wiki.ref, merged, local, f"wiki sync replay onto {remote}")
        _git(wiki, remote, "push", "--quiet", remote, f"{merged}:refs/heads/{wiki.branch}")
        return SyncResult(remote, "merged", merged, rescue)
    name = f"sync-{stamp}-{local[:7]}"
    tree = wiki.store.write_tree(other.files, with_indexes(other, changes))
    message = (f"wiki sync: local changes that conflict with {remote}\n\n"
               f"Conflicting paths: {', '.join(both)}\n\n"
               f"{PROPOSAL_TRAILER}: {name}\n{BASE_TRAILER}: {theirs}\n")
    # the local landings are parents, so their authors and approvers count as proposers
    commit = wiki.store.commit(tree, [theirs, local], message, author=me)
    wiki.store.update_ref(wiki.proposal_prefix + name, commit, None, "wiki sync conflict")
    wiki.store.update_ref(wiki.ref, theirs, local, f"wiki sync: follow {remote}")
    return SyncResult(remote, "conflict-proposal", theirs, rescue, name)


def _sync_rejections(wiki: Wiki, remote: str, tracking: str, prefix: str,
                     result: SyncResult) -> None:
    """Rejections travel both ways, so a rejected proposal is closed in every clone."""
    mine = wiki.store.list_refs(f"refs/heads/{prefix}")
    theirs = wiki.store.list_refs(f"{tracking}{prefix}")
    for ref, sha in sorted(mine.items()):
        name = ref.removeprefix("refs/heads/")
        if theirs.get(f"{tracking}{name}") != sha:
            _git(wiki, remote, "push", "--quiet", remote, f"{sha}:refs/heads/{name}")
    for ref, sha in sorted(theirs.items()):
        name = ref.removeprefix(tracking)
        if f"refs/heads/{name}" not in mine:
            wiki.store.update_ref(f"refs/heads/{name}", sha, None, f"wiki sync from {remote}")


def _closed(wiki: Wiki, name: str, sha: str) -> bool:
    """True when proposal branch ``name`` at ``sha`` has landed or was rejected."""
    head = wiki.head()
    if head and wiki.repo.is_ancestor(sha, head):
        return True
    short = name.removeprefix(wiki.proposal_prefix.removeprefix("refs/heads/"))
    rejected = wiki.store.resolve(rejected_prefix(wiki) + short)
    return bool(rejected and wiki.repo.is_ancestor(sha, rejected))


def _sync_proposals(wiki: Wiki, remote: str, tracking: str, prefix: str,
                    result: SyncResult) -> None:
    mine = wiki.store.list_refs(wiki.proposal_prefix)
    theirs = wiki.store.list_refs(f"{tracking}{prefix}")
    for ref, sha in sorted(theirs.items()):  # closed elsewhere: close here and there
        name = ref.removeprefix(tracking)
        if _closed(wiki, name, sha):
            _git(wiki, remote, "push", "--quiet", remote, f":refs/heads/{name}")
            local = mine.pop(f"refs/heads/{name}", None)
            if local and _closed(wiki, name, local):
                wiki.store.delete_ref(f"refs/heads/{name}", local)
            result.closed.append(name)
            theirs.pop(ref)
    for ref, sha in sorted(mine.items()):
        name = ref.removeprefix("refs/heads/")
        remote_sha = theirs.get(f"{tracking}{name}")
        if _closed(wiki, name, sha):
            wiki.store.delete_ref(ref, sha)
            result.closed.append(name)
            continue
        if remote_sha == sha or (remote_sha and wiki.repo.is_ancestor(sha, remote_sha)):
            continue
        if remote_sha and not wiki.repo.is_ancestor(remote_sha, sha):
            result.diverged.append(name)
            continue
        _git(wiki, remote, "push", "--quiet", remote, f"{sha}:refs/heads/{name}")
        result.pushed.append(name)
    for ref, sha in sorted(theirs.items()):
        name = ref.removeprefix(tracking)
        local = mine.get(f"refs/heads/{name}")
        if local is None:
            wiki.store.update_ref(f"refs/heads/{name}", sha, None, f"wiki sync from {remote}")
            result.fetched.append(name)
        elif local != sha and wiki.repo.is_ancestor(local, sha):  # rebased or amended there
            wiki.store.update_ref(f"refs/heads/{name}", sha, local, f"wiki sync from {remote}")
            result.fetched.append(name)


def _git(wiki: Wiki, remote: str, *args: str) -> str:
    try:
        return wiki.repo.git.execute(["git", *args])
    except git.GitCommandError as exc:
        detail = [line.strip(" '") for line in (exc.stderr or "").strip().splitlines()
                  if line.strip(" '")]
        reason = detail[0].removeprefix("stderr: ").strip(" '") if detail else str(exc)
        objects = Path(wiki.repo.common_dir) / "objects"
        cause = storage_cause(exc) and disk_cause(objects, "")
        if cause and not any(line.removeprefix("stderr: ").lstrip(" '").startswith("remote:")
                             for line in detail):
            # this clone's disk refused what was fetched (not an ssh "Permission denied",
            # not the remote's full disk): the storage fault, exit 74
            raise StorageError(str(objects), cause) from None
        raise RemoteError(f"git {args[0]} with remote {remote!r} failed: {reason}") from None
