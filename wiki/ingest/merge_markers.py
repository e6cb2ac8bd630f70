"""Unresolved merge-conflict markers in a source (``git merge`` left the file half-merged).

Git writes a conflict as a sequence of lines: ``<<<<<<< ours``, optionally ``|||||||
base`` (``merge.conflictStyle = diff3``), ``=======``, ``>>>>>>> theirs``, each marker
seven characters at the start of its line. Only the whole sequence, in that order, counts:
a lone ``=======`` is a setext heading underline, and a conflict that opens inside code
(fenced or indented, as the CommonMark parser of :mod:`wiki.store.markdown_blocks` finds
it: a page that shows what a conflict looks like) is text. Once a conflict has opened,
its markers count wherever they fall: a fence that opens inside one side of a conflict
does not hide the rest of it.
"""

from __future__ import annotations

import re

from wiki.store.markdown_blocks import code_lines

_OURS = re.compile(r"<{7}(?:[ \t].*)?")
_BASE = re.compile(r"\|{7}(?:[ \t].*)?")
_SPLIT = re.compile(r"={7}[ \t]*")
_THEIRS = re.compile(r">{7}(?:[ \t].*)?")


def conflict_line(text: str) -> int | None:
    """The 1-based line number of the ``<<<<<<<`` that opens the first complete conflict
    in ``text`` (newline-normalised), or ``None`` when there is none."""
    code = code_lines(text) if "<" * 7 in text else set()
    start = None  # line number of the open <<<<<<<
    stage = ""  # "ours", "base", "theirs" once each marker is seen
    for number, line in enumerate(text.split("\n"), start=1):
        if start is None and number - 1 in code:
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
