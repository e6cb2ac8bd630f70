"""File names for entries: Unicode kept, stable, and never silently merged.

Rule: NFC, case folded (so a checkout on a case-insensitive file system cannot clash),
whitespace and characters that break paths, shells, URLs or markdown links become ``-``,
runs of ``-`` collapse, ends are trimmed, at most 80 characters. Letters and digits of
every script, ``_``, ``.``, emoji and other symbols are kept (control and bidi characters
are not), so ``my_file`` and ``my-file`` stay distinct; names that still collide
(``my file`` -> ``my-file``) get a numeric suffix from :func:`unique_path`
(docs/robustness.md, F1-F2). A name made only of characters the rule drops (``???``,
``!!!``) is ``entry-`` and the first :data:`HASH_CHARS` hex digits of the sha256 of its
NFC, case-folded, space-collapsed text: distinct names stay distinct and the same name
always gives the same file, whichever comes first.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

MAX_SLUG_CHARS = 80
HASH_CHARS = 8
"""Hex digits of the hash that names an entry whose name has nothing a slug keeps."""
_UNSAFE = re.compile(r"""[\s/\\:*?"'<>|#%&$`;!=+,\[\](){}^~\x00-\x1f\x7f-\x9f"""
                     "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+")
"""Whitespace, path/shell/URL/markdown syntax, C0 and C1 controls (``\\x9b`` is a terminal
escape) and bidirectional controls (they make a name read differently than it sorts)."""
_DASHES = re.compile(r"-{2,}")
_RESERVED = {"con", "prn", "aux", "nul", "index", "wiki",
             *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}


def slugify(name: str) -> str:
    """A file-name stem for ``name`` (never empty, never a reserved name; ``entry-<hash>``
    for a name of symbols only, ``entry`` for a blank one)."""
    folded = unicodedata.normalize("NFC", name).casefold()
    text = _DASHES.sub("-", _UNSAFE.sub("-", folded)).strip("-._ ")
    text = text[:MAX_SLUG_CHARS].rstrip("-._ ")
    if not text:
        kept = " ".join(folded.split())
        if not kept:
            return "entry"
        return "entry-" + hashlib.sha256(kept.encode("utf-8", "surrogatepass")).hexdigest()[
            :HASH_CHARS]
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
