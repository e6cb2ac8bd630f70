"""Which wiki commit a file exported earlier was read from.

``wiki show ID > a.md`` today, an edit of ``a.md``, ``wiki propose a.md --edit ID``
tomorrow: the tool cannot know when the file was read, and building the edit on the
head would silently revert whatever landed in between (the lost update). ``wiki show``
reports the commit it read (stderr and ``--json``) for ``--base``; without it,
:func:`infer_base` picks the revision of the entry that the submitted text resembles
most and returns the last commit at which that revision was current. When that is not
the head, the proposal is behind and lands only if nobody else changed the entry.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from wiki.store.lookup import find_entry
from wiki.store.workspace import Wiki

MAX_REVISIONS = 50
"""Revisions of the entry compared, newest first (older ones are not considered)."""


@dataclass(frozen=True)
class Inferred:
    """``commit``: the base to build on; ``revision``: the commit that wrote the revision
    the text resembles most; ``similarity`` (0..1, line-based) to it; ``current``: whether
    that revision is the entry on the head (then ``commit`` is the head)."""

    commit: str
    revision: str
    similarity: float
    current: bool


def infer_base(wiki: Wiki, target: str, text: bytes) -> Inferred:
    """The base of an edit ``text`` of entry ``target`` (id or path, as on the head).
    Ties between revisions that differ go to the older one (a base too old is only
    behind; one too new loses the changes in between); revisions that differ only in
    ``updated:`` count as one.
    Raises ``NotFoundError`` for an unknown entry."""
    head = wiki.require_head()
    path = find_entry(wiki, target).path
    listed = wiki.repo.git.rev_list("--first-parent", f"--max-count={MAX_REVISIONS}",
                                    head, "--", path).split()
    wanted = _lines(text)
    best: Inferred | None = None
    best_lines: list[str] | None = None
    current_until = head
    for changed in listed:  # newest first: each revision is current until the next one
        data = wiki.store.read_path(changed, path)
        if data is not None:
            lines = _lines(data)
            score = difflib.SequenceMatcher(None, wanted, lines, autojunk=False).ratio()
            # a tie between two different revisions goes to the older one: the text may
            # repeat part of a later change (the same typo fixed twice) without having
            # seen the rest of it; too old a base only makes the proposal behind (approve
            # refuses, rebase merges), too new a one reverts what the writer never saw
            if best is None or score > best.similarity or (
                    score == best.similarity and lines != best_lines):
                best = Inferred(current_until, changed, score, current_until == head)
                best_lines = lines
        parents = wiki.repo.commit(changed).parents
        if not parents:
            break
        current_until = parents[0].hexsha
    return best or Inferred(head, head, 0.0, True)


def _lines(data: bytes) -> list[str]:
    """The lines compared: the ``updated:`` stamp left out (every edit changes it)."""
    return [line for line in data.decode("utf-8", "replace").splitlines()
            if not line.startswith("updated:")]
