"""Whether a new path of a proposal is a safe, portable wiki file name (rule ``R003``,
:mod:`wiki.review.check`): every problem a checkout, a terminal or a reader would have
with it, one sentence each."""

from __future__ import annotations

import unicodedata

from wiki.config import CONFIG_PATH
from wiki.store import indextree
from wiki.store.treepaths import MAX_PATH_BYTES

MAX_NAME_BYTES = 255
"""The longest component most file systems hold."""
_WINDOWS_INVALID = set('\\:*?"<>|') | {chr(c) for c in range(32)}
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                     *(f"lpt{i}" for i in range(1, 10))}


def name_problems(path: str, twin: str | None = None) -> list[str]:
    """Why ``path`` (decoded with surrogate escapes) is no name a wiki file should have, in
    a tree where ``twin`` is the other spelling a case-insensitive file system takes it
    for (:func:`wiki.store.treepaths.case_twins`): not UTF-8, not NFC, a character that is
    not printable (tab, line and paragraph separators, no-break spaces: a terminal does
    not show it as itself), an empty, dot, hidden, Windows-invalid or reserved component,
    a component or path too long to check out, not a wiki file, or the same name as
    another path (or folder) on a case-insensitive file system. Empty when it is fine."""
    problems = []
    hidden = next((c for c in path if not c.isprintable()), None)
    if not indextree.is_text_name(path):
        problems.append("not UTF-8 text (bytes no name can be read as)")
    elif unicodedata.normalize("NFC", path) != path:
        problems.append("not in Unicode NFC form")
    elif hidden is not None:
        label = unicodedata.name(hidden, unicodedata.category(hidden))
        problems.append(f"holds U+{ord(hidden):04X} ({label}), which a terminal does not "
                        "show as itself")
    for part in path.split("/"):
        stem = part.partition(".")[0].strip().lower()
        if part in ("", ".", ".."):
            problems.append(f"an empty, '.' or '..' component {part!r}")
        elif part.startswith("."):
            problems.append(f"a hidden component {part!r} (.git*, dot files)")
        elif _WINDOWS_INVALID & set(part) or part[-1] in ". ":
            problems.append(f"a component {part!r} no Windows checkout can hold")
        elif stem in _WINDOWS_RESERVED:
            problems.append(f"a Windows device name {part!r}")
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            problems.append(f"a component longer than {MAX_NAME_BYTES} bytes")
    if len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        problems.append(f"a path longer than {MAX_PATH_BYTES} bytes (no macOS checkout "
                        "holds it)")
    if not (path == CONFIG_PATH or path.endswith(".md")):
        problems.append("not a wiki file (an entry .md, an index.md or wiki.toml)")
    if twin is not None:
        problems.append(f"the same name as {twin!r} on a case-insensitive file system")
    return problems
