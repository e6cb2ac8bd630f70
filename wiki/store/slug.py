"""File names for entries: Unicode kept, stable, and never silently merged.

Rule: NFC, case folded (so a checkout on a case-insensitive file system cannot clash),
whitespace and characters that break paths, shells, URLs or markdown links become ``-``,
runs of ``-`` collapse, ends are trimmed, at most 80 characters. Letters and digits of
every script, ``_``, ``.``, emoji and other symbols are kept (control and bidi characters
are not), so ``my_file`` and ``my-file`` stay distinct; names that still collide
(``my file`` -> ``my-file``) get a numeric suffix from :func:`unique_path`
(docs/robustness.md, F1-F2).
"""

from __future__ import annotations

import re
import unicodedata

MAX_SLUG_CHARS = 80
_UNSAFE = re.compile(r"""[\s/\\:*?"'<>|#%&$`;!=+,\[\](){}^~\x00-\x1f\x7f-\x9f"""
                     "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+")
"""Whitespace, path/shell/URL/markdown syntax, C0 and C1 controls (``\\x9b`` is a terminal
escape) and bidirectional controls (they make a name read differently than it sorts)."""
_DASHES = re.compile(r"-{2,}")
_RESERVED = {"con", "prn", "aux", "nul", "index", "wiki",
             *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def slugify(name: str) -> str:
    """A file-name stem for ``name`` (never empty, never a reserved name)."""
    text = unicodedata.normalize("NFC", name).casefold()
    text = _DASHES.sub("-", _UNSAFE.sub("-", text)).strip("-._ ")
    text = text[:MAX_SLUG_CHARS].rstrip("-._ ")
    if not text:
        return "entry"
    if text in _RESERVED:
        return text + "-entry"
    return text


def unique_path(folder: str, stem: str, taken: set[str], suffix: str = ".md") -> str:
    """``folder/stem.md``, or ``folder/stem-2.md``, ``-3``... the first not in ``taken``
    (compared case-insensitively). Adds the result to ``taken``."""
    folded = {p.casefold() for p in taken}
    prefix = f"{folder}/" if folder else ""
    candidate = f"{prefix}{stem}{suffix}"
    number = 2
    while candidate.casefold() in folded:
        candidate = f"{prefix}{stem}-{number}{suffix}"
        number += 1
    taken.add(candidate)
    return candidate


def slug_path(path: str) -> str:
    """Slug every segment of a folder path (``Travel & Leave/Per Diem`` ->
    ``travel-leave/per-diem``); empty, ``.`` and ``..`` segments are dropped."""
    return "/".join(slugify(part) for part in path.split("/") if part.strip(" ."))
