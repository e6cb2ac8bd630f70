"""Keeping the derived search database in step with the wiki branch (docs/architecture.md,
"Derived state").

Every read calls :func:`open_synced`: it compares the indexed commit with the branch head
and, when they differ, re-indexes exactly the entry files whose blob changed (the blob sha
is the content hash), inside one write transaction, so the index never serves a stale or
deleted entry (docs/robustness.md, I1) and two processes never both rebuild it.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from indexes.backend import IndexBackend, open_backend
from indexes.documents import Document
from indexes.sqlite.dbfile import borrow_embeddings
from indexes.sqlite.engine import SearchIndex
from indexes.sqlite.faults import DatabaseError
from wiki.config import CONFIG_PATH, WikiConfig, parsed_config
from wiki.errors import EntryError, NotFoundError, WikiError
from wiki.store.derived_db import (
    OK,
    TEMPORARY,
    Opened,
    on_storage_fault,
    open_database,
    recover,
)
from wiki.store.disk_faults import is_damaged, storage_error
from wiki.store.gitrepo import committed_at
from wiki.store.index_url import index_exists, index_space, index_url
from wiki.store.lifetimes import as_time, dated, iso
from wiki.store.markdown_text import answer_sentences, plain_text
from wiki.store.notices import notify
from wiki.store.treepaths import MAX_PATH_BYTES
from wiki.store.workspace import Wiki

if TYPE_CHECKING:
    from wiki.store.entry import Entry

COMMIT_KEY = "indexed_commit"
CONFIG_KEY = "config"
INVALID_KEY = "invalid_entries"


@dataclass
class SyncReport:
    """What a sync did: the ``commit`` now indexed and the paths ``added``, ``updated``,
    ``removed``; ``invalid`` lists ``(path, message)`` of entries left out as malformed."""

    commit: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    invalid: list[tuple[str, str]] = field(default_factory=list)
    config: str | None = None
    """The indexed ``wiki.toml`` text, as read with the commit (``None``: not read)."""


def to_document(entry: Entry, blob_sha: str) -> Document:
    """The searchable form of an entry (frontmatter fields in their own columns)."""
    return Document(
        key=entry.path, doc_id=entry.id, title=entry.title, summary=entry.summary,
        body=plain_text(entry.body), aliases=tuple(entry.aliases), tags=tuple(entry.tags),
        status=entry.status, category=entry.category, doc_type=entry.type,
        content_hash=blob_sha, extra=_extra(entry), scope=entry.scope,
        valid_until=iso(as_time(entry.meta.get("valid_until"), end_of_day=True)),
        dated=iso(dated(entry)), sentences=index_sentences(entry.title, entry.body),
    )


def embedded(title: str, sentence: str) -> str:
    """The text embedded for a sentence of an entry titled ``title``: the title gives the
    sentence its subject ("Term renewals are not automatic." of which term?). Measured
    on the tune half: AUROC answerable vs unanswerable of the best sentence's cosine 0.873
    with the title, 0.827 without (docs/decisions.md)."""
    return f"{title}: {sentence}"


def index_sentences(title: str, body: str) -> tuple[str, ...]:
    """What the index embeds for an entry (:attr:`indexes.documents.Document.sentences`):
    its :func:`~wiki.store.markdown_text.answer_sentences`, each as :func:`embedded`."""
    return tuple(embedded(title, s) for s in answer_sentences(body))


def _extra(entry: Entry) -> dict:
    """Attributes kept as JSON: sources, and the relations and ranking signals that the
    graph expansion and the re-scoring read (only when the entry has them)."""
    extra: dict = {"sources": [s.to_dict() for s in entry.sources]}
    if entry.relations:
        extra["relations"] = entry.relations
    for key in ("importance", "confidence"):
        if isinstance(entry.meta.get(key), (int, float)):
            extra[key] = float(entry.meta[key])
    return extra


def open_index(wiki: Wiki, *, write: bool = False) -> IndexBackend:
    """The derived database of ``wiki`` (created on first use), not yet synced. Derived
    state is disposable: a damaged file is set aside and a new one created, and a git
    dir that cannot be written gives a temporary copy (:mod:`wiki.store.derived_db`; with
    ``write``, :class:`StorageError` instead). Raises :class:`WikiError` when the path
    cannot hold a database at all."""
    return open_derived(wiki, write=write).index


def open_derived(wiki: Wiki, *, write: bool = False) -> Opened:
    """:func:`open_index` with how the database was found (``Opened.state``). With an
    index URL configured (:mod:`wiki.store.index_url`) the index is this wiki's space in
    that database; raises ``IndexUnavailableError`` when it cannot be reached."""
    url = index_url(wiki)
    if url:
        return Opened(open_backend(url, index_space(wiki)), OK)
    path = wiki.database_path()
    if path.parent.exists() and not path.parent.is_dir():
        raise WikiError(f"{path.parent} exists but is not a directory; remove it "
                        "(it only holds derived state)")
    if path.is_dir():
        raise WikiError(f"{path} is a directory, not the derived database; remove it")
    return open_database(path, write=write)


def sync(wiki: Wiki, index: IndexBackend) -> SyncReport:
    """Bring ``index`` up to the wiki head and apply the branch's search settings to it.
    Raises ``NotInitializedError`` without a branch. A head already indexed was found to
    be a wiki (it has ``wiki.toml``) when it was indexed, so it is not read from git
    again."""
    head = wiki.head()
    found = index.get_metas(_SYNCED_KEYS)  # one read of what an indexed head needs
    if head is None or found.get(COMMIT_KEY) != head:
        head = wiki.require_head()
        if found.get(COMMIT_KEY) != head:
            with index.transaction():
                if index.get_meta(COMMIT_KEY) != head:  # not synced by another meanwhile
                    return _index_head(wiki, index, head)
            found = index.get_metas(_SYNCED_KEYS)
    config = found.get(CONFIG_KEY) or ""
    _configure(index, config)
    invalid = json.loads(found.get(INVALID_KEY) or "{}")
    return SyncReport(head, invalid=[(p, m) for p, (_, m) in sorted(invalid.items())],
                      config=config)


_SYNCED_KEYS = (COMMIT_KEY, CONFIG_KEY, INVALID_KEY)


def _index_head(wiki: Wiki, index: IndexBackend, head: str, *,
                settle: bool = True) -> SyncReport:
    """Inside a write transaction: index ``head`` and record it; ``settle``: then bring
    what the index derives as a whole up to date (``IndexBackend.settle``: a large
    index's BM25 postings; not for a throwaway ``--as-of`` snapshot, which would build
    them to search once)."""
    report = _apply(wiki, index, head)
    index.set_meta(COMMIT_KEY, head)
    config = wiki.store.read_path(head, CONFIG_PATH)
    report.config = config.decode("utf-8") if config else ""
    index.set_meta(CONFIG_KEY, report.config)
    _configure(index)
    if settle:
        index.settle()  # with the column weights just configured
    return report


CONSISTENT_TRIES = 3
"""Searches of one call when the index moves to a newer head while it runs (a server's
other calls, or another process, synced it): the answer names one commit and shows only
that commit's rows (docs/decisions.md, "Parallel reads in wiki serve")."""


def still_at(index: IndexBackend, commit: str) -> bool:
    """Whether ``index`` still holds ``commit`` (no reader synced it to another head since
    this call's sync): what it read meanwhile was all of ``commit``."""
    return index.get_meta(COMMIT_KEY) == commit


def indexed_config(index: IndexBackend, text: str | None = None) -> WikiConfig:
    """The ``wiki.toml`` settings of the indexed commit (read without touching git);
    ``text``: that file's text as already read with the commit (:attr:`SyncReport.config`)."""
    return parsed_config((index.get_meta(CONFIG_KEY) or "") if text is None else text)


def _configure(index: IndexBackend, text: str | None = None) -> None:
    index.weights = tuple(indexed_config(index, text).search.weights)


def _apply(wiki: Wiki, index: IndexBackend, head: str) -> SyncReport:
    from wiki.store import indextree
    from wiki.store.entry import Entry

    files = {p: f.sha for p, f in wiki.store.files(head).items() if indextree.is_entry_path(p)}
    indexed = index.content_hashes()
    previous = json.loads(index.get_meta(INVALID_KEY) or "{}")
    invalid: dict[str, list[str]] = {}
    report = SyncReport(head)
    stale = [p for p in indexed if p not in files]
    report.removed = len(stale)
    documents = []
    for path, sha in sorted(files.items()):
        if indexed.get(path) == sha:
            continue
        if path in previous and previous[path][0] == sha:
            invalid[path] = previous[path]
            continue
        try:
            if len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
                raise EntryError(path[:80] + "...", f"a path longer than {MAX_PATH_BYTES} "
                                 "bytes is not indexed (review refuses it too)")
            entry = Entry.parse(path, wiki.store.read(sha))
        except EntryError as exc:
            invalid[path] = [sha, str(exc)]
            if path in indexed:
                stale.append(path)
            continue
        documents.append(to_document(entry, sha))
        if path in indexed:
            report.updated += 1
        else:
            report.added += 1
    index.delete(stale)
    index.upsert(documents)
    index.set_meta(INVALID_KEY, json.dumps(invalid, sort_keys=True))
    report.invalid = [(p, m) for p, (_, m) in sorted(invalid.items())]
    return report


@dataclass(frozen=True)
class Synced:
    """An index brought up to the wiki head (:func:`open_synced`): the open ``index`` (the
    caller closes it) and the ``report`` of what syncing did."""

    index: IndexBackend
    report: SyncReport


def open_synced(wiki: Wiki, *, write: bool = False) -> Synced:
    """The derived database, brought up to the wiki head first. A database found damaged
    while syncing is set aside and rebuilt; one the disk will not let us update is
    replaced by a temporary copy (``write``: :class:`StorageError` instead)."""
    opened = open_derived(wiki, write=write)
    for attempt in (1, 2):
        try:
            report = sync(wiki, opened.index)
        except DatabaseError as exc:
            opened.index.close()
            path = wiki.database_path()
            if attempt == 2 or opened.state == TEMPORARY:
                raise
            if is_damaged(exc):
                opened = recover(path, str(exc), write=write)
                continue
            opened = on_storage_fault(path, exc, write=write)
            continue
        except BaseException:
            opened.index.close()
            raise
        return Synced(opened.index, report)
    raise AssertionError("unreachable")  # pragma: no cover


def refresh(wiki: Wiki) -> None:
    """Bring an existing index up to the wiki head right after the branch moved (approve,
    sync), so that what reports read next (``wiki status``, lint W010) is the landed state.
    A wiki with no index yet is left alone (its first read builds one). A fault while
    syncing is a notice (:func:`wiki.store.notices.notify`), never a failure of the change
    that already landed: the next read syncs again."""
    if not index_exists(wiki):
        return
    try:
        index = open_synced(wiki).index
    except (WikiError, DatabaseError, OSError) as error:
        notify(f"the search index was not brought up to the new head ({error}); "
               "the next search or `wiki index` will")
        return
    index.close()


def rebuild(wiki: Wiki) -> SyncReport:
    """Re-index everything from the wiki head in one write transaction: concurrent readers
    keep seeing the old index until it commits, then the new one (WAL snapshots), so no
    file is ever swapped under an open connection. A damaged database is set aside and
    built anew. Raises ``NotInitializedError`` without a wiki branch and
    :class:`StorageError` when the disk refuses the write."""
    head = wiki.require_head()
    path = wiki.database_path()
    opened = open_derived(wiki, write=True)
    for attempt in (1, 2):
        try:
            with opened.index, opened.index.transaction():
                opened.index.clear()
                return _index_head(wiki, opened.index, head)
        except DatabaseError as exc:
            if attempt == 1 and is_damaged(exc):
                opened = recover(path, str(exc), write=True)
                continue
            converted = storage_error(exc, path)
            if converted is None:
                raise
            raise converted from exc
    raise AssertionError("unreachable")  # pragma: no cover


def commit_as_of(wiki: Wiki, when: dt.datetime) -> str:
    """The wiki commit that was the head at ``when`` (the newest first-parent commit
    committed at or before it). Raises ``NotFoundError`` if the wiki did not exist then,
    :class:`wiki.store.shallow.ShallowHistoryError` when a shallow clone lacks that time."""
    from wiki.store.shallow import ShallowHistoryError, is_cut

    commit = None
    for commit in wiki.repo.iter_commits(wiki.require_head(), first_parent=True):
        if committed_at(commit) <= when:
            return commit.hexsha
    if commit is not None and is_cut(wiki.repo, commit):
        raise ShallowHistoryError(commit.hexsha, "the wiki's history",
                                  needed=f"--as-of {when.isoformat()}")
    raise NotFoundError(f"the wiki branch '{wiki.branch}' did not exist yet at "
                        f"{when.isoformat()}")


@contextmanager
def snapshot_index(wiki: Wiki, commit: str) -> Iterator[IndexBackend]:
    """A throwaway search index of the wiki as it was at ``commit`` (``--as-of``), on the
    engine the wiki's live index uses, removed when the block ends: an SQLite file in a
    temporary folder, reusing the embeddings the live file already holds; or a space of
    its own in the PostgreSQL database (``<space>@<commit>-<random>``, whose embeddings
    are shared by every space anyway), cleared at the end."""
    url = index_url(wiki)
    if url:
        index = open_backend(url, f"{index_space(wiki)}@{commit[:12]}-{uuid.uuid4().hex[:8]}",
                             transient=True)
        try:
            with index.transaction():
                _index_head(wiki, index, commit, settle=False)
            yield index
        finally:
            try:
                index.clear()
            finally:
                index.close()
        return
    with tempfile.TemporaryDirectory(prefix="wiki-asof-") as folder, \
            SearchIndex(Path(folder) / "index.sqlite") as index:
        with index.transaction():
            _index_head(wiki, index, commit, settle=False)
        live = wiki.database_path()
        if live.exists():  # outside the transaction: SQLite cannot ATTACH/DETACH inside one
            borrow_embeddings(index, live)
        yield index
