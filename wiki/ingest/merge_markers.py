"""Unresolved merge-conflict markers in a source (``git merge`` left the file half-merged).

Git writes a conflict as a sequence of lines: ``<<<<<<< ours``, optionally ``|||||||
base`` (``merge.conflictStyle = diff3``), ``=======``, ``>>>>>>> theirs``, each marker
seven characters at the start of its line. Only the whole sequence, in that order, counts:
a lone ``=======`` is a setext heading underline, and markers inside fenced code (a page
that shows what a conflict looks like) are text, like the fence-aware line scanning of
:mod:`wiki.store.markdown_text`.
"""

from __future__ import annotations

import re

_OURS = re.compile(r"<{7}(?:[ \t].*)?")
_BASE = re.compile(r"\|{7}(?:[ \t].*)?")
_SPLIT = re.compile(r"={7}[ \t]*")
_THEIRS = re.compile(r">{7}(?:[ \t].*)?")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def conflict_line(text: str) -> int | None:
    """The 1-based line number of the ``<<<<<<<`` that opens the first complete conflict
    in ``text`` (newline-normalised), or ``None`` when there is none."""
    fence = ""
    start = None  # line number of the open <<<<<<<
    stage = ""  # "ours", "base", "theirs" once each marker is seen
    for number, line in enumerate(text.split("\n"), start=1):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence = ""
            continue
        if opened and start is None:
            fence = opened[1]
            continue
        if _OURS.fullmatch(line):
            start, stage = number, "ours"
        elif start is None:
            continue
        elif _BASE.fullmatch(line) and stage == "ours":
            stage = "base"
        elif _SPLIT.fullmatch(line) and stage in ("ours", "base"):
            stage = "theirs"
        elif _THEIRS.fullmatch(line) and stage == "theirs":
            return start
    return None
