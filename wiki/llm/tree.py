"""Reading the ``index.md`` tree for the LLM walk: each folder's overview, subfolders and
entries, parsed back from the generated listing (:mod:`wiki.store.indextree`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from wiki.store.indextree import MARKER, index_path

_LINE = re.compile(r"^- \[(?P<label>(?:\\.|[^\]\\])*)\]\((?P<target><[^>]*>|[^)]*)\)"
                   r"(?: — (?P<tail>.*))?$")
_UNESCAPE = re.compile(r"\\(.)")


@dataclass
class FolderListing:
    """One folder's ``index.md``: its ``overview`` (free text above the marker, heading
    removed), ``folders`` as ``(path, entry count)`` and ``entries`` as ``(path, title,
    summary)``; paths are full paths on the branch."""

    path: str
    overview: str = ""
    folders: list[tuple[str, int]] = field(default_factory=list)
    entries: list[tuple[str, str, str]] = field(default_factory=list)


def read_listing(read: Callable[[str], bytes | None], folder: str) -> FolderListing | None:
    """The parsed ``index.md`` of ``folder`` (``""`` for the root) read with
    ``read(path) -> bytes | None``; ``None`` when the folder has none."""
    raw = read(index_path(folder))
    if raw is None:
        return None
    return parse_listing(raw.decode("utf-8", "replace"), folder)


def parse_listing(text: str, folder: str) -> FolderListing:
    """Parse an ``index.md`` text of ``folder``. Lines that are not list items of the
    generated part are ignored (hand edits below the marker are tolerated)."""
    overview, found, generated = text.partition(MARKER)
    if not found:
        overview, generated = "", text
    listing = FolderListing(folder, _overview(overview))
    prefix = f"{folder}/" if folder else ""
    for line in generated.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        label = _UNESCAPE.sub(r"\1", match["label"])
        target = unquote(match["target"].strip("<>"))
        tail = (match["tail"] or "").strip()
        if target.endswith("/index.md"):
            count = re.match(r"(\d+)", tail)
            listing.folders.append((prefix + target[:-len("/index.md")],
                                    int(count[1]) if count else 0))
        elif target.endswith(".md"):
            listing.entries.append((prefix + target, label, tail))
    return listing


def _overview(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if not line.startswith("#")]
    return " ".join(" ".join(lines).split())
