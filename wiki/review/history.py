"""The wiki's history: every landing (``wiki log``) and every revision of one entry across
renames, with who proposed and who approved it (``wiki history``).

Only the first-parent chain of the wiki branch is read: each commit on it is ``init`` or a
landing merge whose trailers name the proposal, its proposers and its approver; a commit
made by hand on the branch shows its author as the proposer and no approver.

In a shallow clone a walk that reaches the edge of the fetched history raises
:class:`wiki.store.shallow.ShallowHistoryError` carrying what it found (:mod:`wiki.store.shallow`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from wiki.errors import NotFoundError
from wiki.store.gitrepo import committed_at
from wiki.store.lookup import find_entry
from wiki.store.shallow import ShallowHistoryError, boundary, is_cut
from wiki.store.workspace import Wiki


@dataclass
class Landing:
    """One commit of the wiki branch: when, what, proposal, proposers and approver."""

    commit: str
    date: dt.datetime
    subject: str
    proposal: str
    proposed_by: str
    approved_by: str


@dataclass
class Revision:
    """One state of an entry: the landing that made it, the ``path`` it had then and how
    it changed (added, modified, renamed from ``old_path``, deleted)."""

    landing: Landing
    path: str
    change: str
    old_path: str = ""


def _landing(commit) -> Landing:
    trailers: dict[str, str] = {}
    for line in commit.message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in ("Proposed-by", "Approved-by", "Wiki-Proposal"):
            trailers[key] = value.strip()
    return Landing(commit.hexsha, committed_at(commit),
                   commit.summary, trailers.get("Wiki-Proposal", ""),
                   trailers.get("Proposed-by", f"{commit.author.name} <{commit.author.email}>"),
                   trailers.get("Approved-by", ""))


def log(wiki: Wiki, *, limit: int | None = None) -> list[Landing]:
    """Landings on the wiki branch, newest first (at most ``limit``). Raises
    ``NotInitializedError``, and :class:`ShallowHistoryError` (``partial``: the landings
    found) when a shallow clone lacks landings that ``limit`` asks for."""
    head = wiki.require_head()
    commits = list(wiki.repo.iter_commits(head, first_parent=True, max_count=limit))
    landings = [_landing(c) for c in commits]
    if commits and (limit is None or len(commits) < limit) \
            and is_cut(wiki.repo, commits[-1]):
        raise ShallowHistoryError(commits[-1].hexsha, "the wiki's history", landings)
    return landings


def history(wiki: Wiki, target: str) -> tuple[str, list[Revision]]:
    """``(entry id, revisions newest first)`` of the entry with id or path ``target``,
    following renames (git's rename detection) back to when it was added. Raises
    ``NotFoundError`` when no current entry matches, and :class:`ShallowHistoryError`
    (``partial``: the ``(entry id, revisions)`` found) when a shallow clone lacks the
    commits before the entry was added."""
    entry = find_entry(wiki, target)
    path = entry.path
    revisions: list[Revision] = []
    edge = boundary(wiki.repo)
    for commit in wiki.repo.iter_commits(wiki.require_head(), first_parent=True):
        if is_cut(wiki.repo, commit, edge):
            raise ShallowHistoryError(commit.hexsha, f"the history of {path}",
                                      (entry.id, revisions))
        parent = commit.parents[0].hexsha if commit.parents else None
        change = _change_of(wiki, parent, commit.hexsha, path)
        if change is None:
            continue
        kind, old_path = change
        revisions.append(Revision(_landing(commit), path, kind, old_path))
        if kind == "added":
            break
        if kind == "renamed":
            path = old_path
    if not revisions:
        raise NotFoundError(f"no history for {target!r}")
    return entry.id, revisions


def _change_of(wiki: Wiki, parent: str | None, commit: str,
               path: str) -> tuple[str, str] | None:
    """How ``commit`` changed ``path`` relative to ``parent`` (None: it did not)."""
    if parent is None:
        listed = wiki.repo.git.ls_tree("-r", "--name-only", commit, "--", path)
        return ("added", "") if listed.strip() else None
    out = wiki.repo.git.diff_tree("-r", "-M", "--name-status", "-z", "--no-commit-id",
                                  parent, commit)
    fields = out.split("\0")
    i = 0
    while i < len(fields) - 1:
        status = fields[i]
        if status.startswith(("R", "C")):
            old, new = fields[i + 1], fields[i + 2]
            i += 3
            if new == path:
                return ("renamed", old) if status.startswith("R") else ("added", "")
        else:
            name = fields[i + 1]
            i += 2
            if name == path:
                return {"A": "added", "D": "deleted"}.get(status, "modified"), ""
    return None
