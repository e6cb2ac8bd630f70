"""Renamed sources keep their entries: ingest's side of lint's W011.

A source that ingest meets under a new uri while the entries of an old uri lose their file
is the same source when one of these says so, tried in this order (each pairing is one to
one; an ambiguous one is left alone):

1. **Unicode normalisation**: the two uris are equal in NFC (a file renamed from its
   NFC to its NFD spelling, as macOS and some archivers write names). The old uri needs
   only to be absent from this run; on a file system that folds the two spellings it
   still "exists".
2. **git's rename detection**: :meth:`wiki.adapters.git_source.GitSource.renamed`, the
   same follow W011 uses (``git mv``, committed or only staged; a move with edits git
   still calls a rename).
3. **Same content**: the new file's fingerprint equals the one the old uri's entries
   recorded (a plain ``mv``, a ``file://`` source, a rename git did not see).

Before these, sources that **exchanged names** (``a.md`` and ``b.md`` swapped, or any
cycle) are found by content alone: each file now holds exactly the text another one's
entries recorded. A swap with edits looks like two edits and is compiled as such.

Ingest then compiles the new uri against the old uri's entries: they keep their ids and
paths, their ``sources:`` uri and body reference follow the new name, and nothing is
retracted. The entry files are not moved: a path is what links and bookmarks hold, and a
move would be a second change to review (docs/decisions.md).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from pathlib import Path

import git

from wiki.adapters import sources_for
from wiki.adapters.file_source import FileSource
from wiki.adapters.git_source import GitSource
from wiki.adapters.sources import fingerprint, read_text, source_uri
from wiki.config import WikiConfig
from wiki.errors import SourceError, WikiError
from wiki.store.entry import Entry


def carry_renames(wiki, config: WikiConfig, paths: Iterable[Path],
                  by_uri: dict[str, list[Entry]]) -> dict[str, str]:
    """Find the renamed sources among ``paths`` (the files of this ingest run) and move
    their entries in ``by_uri`` (``source uri -> entries``, changed in place) from the old
    uri to the new one. Returns ``new uri -> old uri``. Never raises for a source it
    cannot read or a git that cannot answer: that pairing is simply not made."""
    present = {source_uri(path, wiki.root): path for path in paths}
    swapped = _swapped(config, present, by_uri)
    if swapped:
        moved = {old: by_uri.pop(old) for old in swapped.values()}
        by_uri.update({new: moved[old] for new, old in swapped.items()})
    orphans = {uri: path for uri, path in present.items() if uri not in by_uri}
    absent = [uri for uri, entries in by_uri.items()
              if uri not in present and any(e.status != "retracted" for e in entries)]
    if not orphans or not absent:
        return swapped
    pairs = _same_nfc(orphans, absent)
    folders = {path.resolve().parent for path in present.values()}
    gone = [uri for uri in absent
            if uri not in pairs.values() and _missing(wiki, uri, folders)]
    pairs.update(_git_renames(wiki, config, [u for u in orphans if u not in pairs], gone))
    gone = [uri for uri in gone if uri not in pairs.values()]
    left = {uri: path for uri, path in orphans.items() if uri not in pairs}
    pairs.update(_same_content(config, left, {uri: by_uri[uri] for uri in gone}))
    for new, old in pairs.items():
        by_uri[new] = by_uri.pop(old)
    return {**swapped, **pairs}


def _swapped(config: WikiConfig, present: dict[str, Path],
             by_uri: dict[str, list[Entry]]) -> dict[str, str]:
    """Sources that exchanged names (``a -> b``, ``b -> a``, or any cycle): each present
    file now holds exactly the text another present uri's entries recorded, and the
    pairing closes on itself, so every entry follows its own text. Without this a swap
    looked like two edits and each entry took the other's content under its id."""
    recorded: dict[str, str] = {}  # uri -> the one fingerprint its live entries recorded
    for uri in present:
        prints = {e.sources[0].fingerprint for e in by_uri.get(uri, [])
                  if e.status != "retracted" and e.sources and e.sources[0].fingerprint}
        if len(prints) == 1:
            recorded[uri] = prints.pop()
    if len(recorded) < 2:
        return {}
    holders: dict[str, list[str]] = {}
    for uri, fp in recorded.items():
        holders.setdefault(fp, []).append(uri)
    pairs: dict[str, str] = {}
    for uri in recorded:
        try:
            text = read_text(present[uri], max_bytes=config.ingest.max_bytes,
                             max_lines=config.ingest.max_lines)
        except SourceError:
            continue
        fp = fingerprint(text, ignore_frontmatter=config.sources.ignore_frontmatter,
                         ignore_whitespace=config.sources.ignore_whitespace)
        olds = holders.get(fp, [])
        if fp != recorded[uri] and len(olds) == 1:
            pairs[uri] = olds[0]
    # keep only closed cycles: every old uri gives its entries to one new uri and takes
    # another's, so no entries are left without a source
    closed = {new: old for new, old in pairs.items() if old in pairs}
    while True:
        kept = {new: old for new, old in closed.items() if new in closed.values()}
        if kept == closed:
            return closed
        closed = kept


def _same_nfc(orphans: dict[str, Path], absent: list[str]) -> dict[str, str]:
    def nfc(uri: str) -> str:
        return unicodedata.normalize("NFC", uri)

    olds: dict[str, list[str]] = {}
    for uri in absent:
        olds.setdefault(nfc(uri), []).append(uri)
    news: dict[str, list[str]] = {}
    for uri in orphans:
        news.setdefault(nfc(uri), []).append(uri)
    return {found[0]: olds[key][0] for key, found in news.items()
            if len(found) == 1 and len(olds.get(key, [])) == 1}


def git_file_exists(wiki, uri: str) -> bool:
    """Whether the work-tree file of ``git:`` source ``uri`` exists inside the repository
    (``False`` for a uri leaving it, a name the file system refuses, no work tree)."""
    relative = GitSource.relative(uri) if uri.startswith("git:") else None
    if wiki.root is None or relative is None:
        return False
    try:
        return (wiki.root / relative).exists()
    except (OSError, ValueError):
        return False


def _missing(wiki, uri: str, folders: set[Path]) -> bool:
    """Whether the file of a ``git:`` source (inside the repository) or of a ``file://``
    source (in a folder this run reads: a uri from the branch never makes ingest look
    elsewhere on the disk) is gone."""
    try:
        if uri.startswith("git:"):
            return wiki.root is not None and GitSource.relative(uri) is not None and \
                not git_file_exists(wiki, uri)
        if uri.startswith("file:"):
            path = FileSource.path(uri)
            return path.is_absolute() and path.parent in folders and not path.exists()
    except (OSError, ValueError):
        pass
    return False


def _git_renames(wiki, config: WikiConfig, orphans: list[str],
                 gone: list[str]) -> dict[str, str]:
    wanted = [uri for uri in gone if uri.startswith("git:")]
    if wiki.root is None or not wanted or not any(u.startswith("git:") for u in orphans):
        return {}
    sources = sources_for(wiki, config)
    try:
        adapter = sources.adapter("git:")
        paths = {adapter.relative(uri): uri for uri in wanted}
        paths.pop(None, None)
        moved = adapter.renamed(paths)
    except (git.GitCommandError, WikiError):
        return {}
    finally:
        sources.close()
    targets: dict[str, list[str]] = {}
    for old, new in moved.items():
        targets.setdefault(f"git:{new}", []).append(paths[old])
    return {new: olds[0] for new, olds in targets.items()
            if new in orphans and len(olds) == 1}


def _same_content(config: WikiConfig, orphans: dict[str, Path],
                  gone: dict[str, list[Entry]]) -> dict[str, str]:
    if not orphans or not gone:
        return {}
    recorded: dict[str, set[str]] = {}
    for uri, entries in gone.items():
        for entry in entries:
            if entry.status != "retracted" and entry.sources[0].fingerprint:
                recorded.setdefault(entry.sources[0].fingerprint, set()).add(uri)
    found: dict[str, list[str]] = {}
    for uri, path in orphans.items():
        try:
            text = read_text(path, max_bytes=config.ingest.max_bytes,
                             max_lines=config.ingest.max_lines)
        except SourceError:
            continue
        fp = fingerprint(text, ignore_frontmatter=config.sources.ignore_frontmatter,
                         ignore_whitespace=config.sources.ignore_whitespace)
        found.setdefault(fp, []).append(uri)
    return {news[0]: next(iter(recorded[fp])) for fp, news in found.items()
            if len(news) == 1 and len(recorded.get(fp, ())) == 1}
