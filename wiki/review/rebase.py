"""Rebasing a stale proposal onto the current wiki head.

Each path the proposal changes is merged three ways (base = the proposal's base, ours =
the wiki head, theirs = the proposal tip). For an entry, frontmatter merges field by field
(a field changed on one side takes that side; ``updated`` takes the later time) and the
body with ``git merge-file``; other files merge as text. Edits to different parts of the
same entry combine; overlapping edits are a conflict, reported with the paths and nothing
moved. The rebased proposal is one new commit on the head, authored by the original
proposer and committed by whoever rebases (who therefore cannot approve it either).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import git

from wiki.errors import EntryError, StaleProposalError
from wiki.review import approval_policy, overviews
from wiki.review.metadata import escaped
from wiki.review.proposals import (
    BASE_TRAILER,
    PROPOSAL_TRAILER,
    Proposal,
    get_proposal,
)
from wiki.store import indextree
from wiki.store.entry import Entry
from wiki.store.gitrepo import Identity, current_committer, current_identity
from wiki.store.snapshot import Snapshot, with_indexes
from wiki.store.workspace import Wiki


def rebase(wiki: Wiki, name: str, rebaser: Identity | None = None) -> Proposal:
    """Move proposal ``name`` onto the wiki head (a no-op when it is already there).
    Raises ``StaleProposalError`` listing the conflicting paths, ``NotFoundError``, and
    ``RefMovedError`` if the proposal branch moved meanwhile."""
    proposal = get_proposal(wiki, name)
    head = wiki.require_head()
    if proposal.base == head:
        return proposal
    committer = rebaser or current_committer(wiki.repo)  # who really runs it
    rebaser = rebaser or current_identity(wiki.repo)
    base, tip, ours = (Snapshot(wiki.store, c) for c in (proposal.base, proposal.tip, head))
    merged: dict[str, bytes | None] = {}
    conflicts: list[str] = []
    for path in sorted(overviews.changed(wiki.store, base.files, tip.files)):
        if overviews.is_index(path):  # people write its overview; the listing is generated
            texts = [overviews.overview(wiki.store, path, s.files.get(path)).encode("utf-8")
                     for s in (base, ours, tip)]
            result = _merge_text(wiki.repo, *texts)
            result = (result if result is _CONFLICT
                      else overviews.with_marker(result.decode("utf-8", "replace")))
        else:
            result = _merge(wiki.repo, path, base.read(path), ours.read(path), tip.read(path))
        if result is _CONFLICT:
            conflicts.append(path)
        else:
            merged[path] = result
    if conflicts:
        raise StaleProposalError(
            f"proposal {proposal.name} cannot be rebased: {', '.join(conflicts)} changed "
            "in overlapping places on both sides; redo the change on the current wiki")
    author = proposal.authors[0] if proposal.authors else rebaser
    tree = wiki.store.write_tree(ours.files, with_indexes(ours, merged))
    message = (f"{escaped(proposal.subject)}\n\nRebased onto {head[:12]} by {rebaser}.\n\n"
               f"{PROPOSAL_TRAILER}: {escaped(proposal.name)}\n{BASE_TRAILER}: {head}\n")
    commit = wiki.store.commit(tree, [head, proposal.tip], message, author=author,
                               committer=committer, sign=approval_policy.signing(wiki))
    wiki.store.update_ref(proposal.ref, commit, proposal.tip, f"wiki rebase {proposal.name}")
    return get_proposal(wiki, proposal.name)


_CONFLICT = object()


def _merge(repo: git.Repo, path: str, base: bytes | None, ours: bytes | None,
           theirs: bytes | None):
    """Three-way merge of one file; bytes, ``None`` (deleted) or ``_CONFLICT``."""
    if ours == base:
        return theirs
    if theirs in (base, ours):
        return ours
    if ours is None or theirs is None or base is None:
        return _CONFLICT  # deleted on one side, changed on the other; or added twice
    if indextree.is_entry_path(path):
        merged = _merge_entry(repo, path, base, ours, theirs)
        if merged is not None:
            return merged
    return _merge_text(repo, base, ours, theirs)


_MISSING = object()


def _merge_entry(repo: git.Repo, path: str, base: bytes, ours: bytes, theirs: bytes):
    """Field-by-field merge of an entry; ``None`` when a side does not parse (then the
    caller merges text)."""
    try:
        old, mine, other = (Entry.parse(path, data) for data in (base, ours, theirs))
    except EntryError:
        return None
    fields: dict = {}
    for key in dict.fromkeys([*mine.meta, *other.meta]):
        was, now, new = (e.meta.get(key, _MISSING) for e in (old, mine, other))
        if new in (was, now):
            continue
        if now == was:
            fields[key] = None if new is _MISSING else new
        elif key == "updated" and _MISSING not in (now, new):
            fields[key] = max(str(now), str(new))
        else:
            return _CONFLICT
    body = _merge_text(repo, old.body.encode(), mine.body.encode(), other.body.encode())
    if body is _CONFLICT:
        return _CONFLICT
    return mine.updated_with(body=body.decode("utf-8"), **fields).to_bytes()


def _merge_text(repo: git.Repo, base: bytes, ours: bytes, theirs: bytes):
    """``git merge-file`` of three versions; bytes or ``_CONFLICT``."""
    if ours == base:
        return theirs
    if theirs in (base, ours):
        return ours
    with tempfile.TemporaryDirectory(prefix="wiki-merge-") as folder:
        paths = []
        for label, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / label
            path.write_bytes(data)
            paths.append(str(path))
        try:
            return repo.git.merge_file("-p", *paths, stdout_as_string=False,
                                       strip_newline_in_stdout=False)
        except git.GitCommandError:
            return _CONFLICT
