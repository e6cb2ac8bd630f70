"""The ``index.md`` tree: one generated listing per folder, from the children's frontmatter.

Format (byte-stable: the same children always give the same bytes)::

    <free-text overview, kept as written>
    <!-- wiki:index ... -->

    ## Folders

    - [travel/](travel/index.md) — 12 entries

    ## Entries

    - [Per diem](per-diem.md) — What you may claim per day.

Folders sort by name, entries by title then file name. Everything above the marker is
the overview and is never rewritten; everything below is replaced. The LLM never writes
this list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

INDEX_NAME = "index.md"
MARKER = ("<!-- wiki:index: generated from the entries' frontmatter; "
          "write an overview above this line, edits below it are replaced -->")
SPECIAL_FILES = frozenset({INDEX_NAME})


def is_entry_path(path: str) -> bool:
    """True for a markdown file that is an entry (not an ``index.md``). A name git holds
    that is not UTF-8 (read with surrogate escapes) is no entry: nothing can index, list or
    print it as text (lint W007 reports it, the review check flags it)."""
    name = path.rpartition("/")[2]
    return name.endswith(".md") and name not in SPECIAL_FILES and is_text_name(path)


def is_text_name(path: str) -> bool:
    """Whether ``path`` is UTF-8 text (no surrogate escapes of undecodable bytes)."""
    return not any("\udc80" <= c <= "\udcff" for c in path)


def parent(path: str) -> str:
    """The folder of ``path`` (``""`` for the root)."""
    return path.rpartition("/")[0]


def index_path(folder: str) -> str:
    """Where the ``index.md`` of ``folder`` lives."""
    return f"{folder}/{INDEX_NAME}" if folder else INDEX_NAME


def ancestors(path: str) -> list[str]:
    """Every folder above ``path``, nearest first, ending with the root ``""``."""
    out, folder = [], parent(path)
    while folder:
        out.append(folder)
        folder = parent(folder)
    out.append("")
    return out


@dataclass(frozen=True)
class Listing:
    """What an index line shows for an entry: its ``title`` and one-sentence ``summary``."""

    title: str
    summary: str


def split_overview(text: str | None, folder: str) -> str:
    """The overview part of an existing ``index.md`` (all of it when it has no marker);
    a ``# heading`` for a new one."""
    if text is None:
        return f"# {folder.rpartition('/')[2] or 'Wiki'}\n\n"
    head, found, _ = text.partition(MARKER)
    return head if found else (text.rstrip("\n") + "\n\n" if text.strip() else "")


def listing_part(data: bytes | None) -> str:
    """The part of a generated ``index.md`` the generator writes itself: the marker and the
    listing below it, without the overview above (``""`` for ``None`` or a text without a
    marker). Whatever else a file holds was written by a person."""
    if data is None:
        return ""
    _, found, listing = data.decode("utf-8", "surrogateescape").partition(MARKER)
    return found + listing


def render(folder: str, overview: str, subfolders: Mapping[str, int],
           entries: Mapping[str, Listing]) -> str:
    """The ``index.md`` text of ``folder``: ``subfolders`` maps a child folder name to
    the number of entries below it; ``entries`` maps a child file name to its listing."""
    lines = [overview + MARKER, ""]
    if subfolders:
        lines += ["## Folders", ""]
        for name in sorted(subfolders, key=lambda n: (n.casefold(), n)):
            count = subfolders[name]
            noun = "entry" if count == 1 else "entries"
            lines.append(f"- [{_escape(name)}/]({_target(name + '/' + INDEX_NAME)})"
                         f" — {count} {noun}")
        lines.append("")
    if entries:
        lines += ["## Entries", ""]
        for name in sorted(entries, key=lambda n: (entries[n].title.casefold(), n)):
            item = entries[name]
            summary = " ".join(item.summary.split())
            tail = f" — {summary}" if summary else ""
            lines.append(f"- [{_escape(' '.join(item.title.split()))}]({_target(name)}){tail}")
        lines.append("")
    return "\n".join(lines)


def regenerate(entry_paths: Iterable[str], folders: Iterable[str],
               listing: Callable[[str], Listing],
               existing: Callable[[str], str | None]) -> dict[str, bytes | None]:
    """New ``index.md`` contents for ``folders``, given every entry path of the tree.

    ``listing(path)`` gives an entry's title and summary; ``existing(path)`` the current
    text of an ``index.md`` (or ``None``). Returns ``index path -> bytes``, or ``None``
    for a folder left without entries (its ``index.md`` goes; the root's never does).
    """
    paths = sorted(entry_paths)
    below: dict[str, int] = {}
    for path in paths:
        for folder in ancestors(path):
            below[folder] = below.get(folder, 0) + 1
    out: dict[str, bytes | None] = {}
    for folder in sorted(set(folders)):
        target = index_path(folder)
        if folder and folder not in below:
            out[target] = None
            continue
        prefix = f"{folder}/" if folder else ""
        subfolders = {f[len(prefix):]: n for f, n in below.items()
                      if f and parent(f) == folder}
        children = {p[len(prefix):]: listing(p) for p in paths if parent(p) == folder}
        text = render(folder, split_overview(existing(target), folder), subfolders, children)
        out[target] = text.encode("utf-8")
    return out


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _target(path: str) -> str:
    if any(c in path for c in " ()<>"):
        return "<" + path.replace("<", "%3C").replace(">", "%3E") + ">"
    return path
