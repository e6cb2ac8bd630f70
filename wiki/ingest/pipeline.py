"""Ingest: compile markdown and text sources into entries, without any model.

One entry per source; a source longer than ``[ingest] split_words`` is split at its
``##`` headings (sections shorter than ``min_section_words`` merge into a neighbour).
Each entry gets its title (source title, ``: heading`` for sections), a summary (first
sentences), tags and aliases from the source's own frontmatter, a folder from the
source's folder, and ``sources:`` with the uri, fingerprint and time. A source whose
fingerprint is unchanged is skipped; a changed one updates its entries in place (same id
and path); sections that disappeared are marked ``retracted``, never deleted. The result
is one proposal. A bad file is reported and skipped; it never stops the run. So is a file
holding a secret (:mod:`wiki.safety.scan`), unless ``redact`` replaces its secrets, and a file
left half-merged with conflict markers (:mod:`wiki.ingest.merge_markers`).

Entries it writes record ``compiled:`` (:mod:`wiki.ingest.compiled`); one edited since is left
alone and listed in ``conflicts`` (``Wiki-Conflict:`` trailers) unless ``overwrite``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from wiki.adapters.git_source import work_tree_blobs
from wiki.adapters.policy import remember_roots
from wiki.adapters.sources import fingerprint, read_text, source_uri
from wiki.config import IngestConfig, WikiConfig
from wiki.errors import EntryError, SecretError, SourceError
from wiki.ingest.compiled import COMPILED_FIELD, HAND_EDITED, Guard, hand_edited, stamped
from wiki.ingest.merge_markers import conflict_line
from wiki.ingest.renames import carry_renames, git_file_exists
from wiki.ingest.report import Distiller, IngestReport, Progress, Skipped, SourceText
from wiki.ingest.sections import compile_sections
from wiki.review.proposals import CONFLICT_TRAILER, get_proposal, list_proposals, propose
from wiki.safety.scan import screen
from wiki.store import markdown_text as md
from wiki.store.entry import Entry, Source, new_id, now_iso
from wiki.store.frontmatter import TEXT_FIELDS
from wiki.store.frontmatter import parse as parse_frontmatter
from wiki.store.gitrepo import Identity
from wiki.store.slug import slug_path, slugify, unique_path
from wiki.store.workspace import Wiki


@dataclass
class _Candidate:
    path: Path
    root: Path | None


def ingest(wiki: Wiki, paths: Iterable[Path | str], *, progress: Progress | None = None,
           author: Identity | None = None, dry_run: bool = False,
           redact: bool = False, distiller: Distiller | None = None,
           remember: bool = True, overwrite: bool = False) -> IngestReport:
    """Compile the sources under ``paths`` and propose the resulting entry changes.

    The paths are the reader's own choice, so with ``remember`` (and not ``dry_run``)
    those outside the repository's work tree become source roots of this clone
    (:func:`wiki.adapters.policy.remember_roots`, git config ``wiki.sourceRoots``): the
    reader who ingested them may revalidate them later. Callers that re-ingest uris
    recorded in entries pass ``remember=False``.

    Returns an :class:`IngestReport`; ``report.proposal`` is ``None`` when nothing changed
    (or with ``dry_run``). A source holding a secret is skipped with the kind and place in
    ``report.skipped``; with ``redact`` it is ingested with ``[REDACTED:<kind>]`` instead.
    With ``distiller``, each new or changed source goes through it first (a source already
    distilled at its fingerprint is unchanged). ``overwrite``: see the module docstring.
    Raises ``NotInitializedError`` without a wiki branch.
    """
    snapshot = wiki.snapshot()
    run = Guard(snapshot.commit, overwrite)
    config = snapshot.config()
    entries, _ = snapshot.entries()
    by_uri: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.sources and not (entry.meta.get("relations") or {}).get("derived_from"):
            by_uri.setdefault(entry.sources[0].uri, []).append(entry)  # not saved answers
    taken = set(snapshot.files)
    ids = {e.id for e in entries}
    report = IngestReport()
    paths = list(paths)
    if remember and not dry_run:
        remember_roots(wiki.repo, wiki.root, paths)
    candidates, folders = _collect(paths, config.ingest, report)
    report.renamed = carry_renames(wiki, config, [c.path for c in candidates], by_uri)
    pending = _pending(wiki, snapshot)
    blobs = work_tree_blobs(wiki.repo) if wiki.root is not None and candidates else {}
    waiting: list[str] = []
    changes: dict[str, bytes | None] = {}
    touched: list[str] = []
    for done, candidate in enumerate(candidates, start=1):
        shown = _display(candidate.path)
        try:
            result = _compile(wiki, config, candidate, by_uri, taken, ids, pending, blobs,
                              run, redact, distiller)
        except (SourceError, EntryError, SecretError) as exc:
            report.skipped.append(Skipped(shown, getattr(exc, "reason", str(exc))
                                          if not isinstance(exc, EntryError) else str(exc)))
        else:
            report.sources += 1
            if isinstance(result, str):  # already in an open proposal on this head
                report.unchanged_sources += 1
                waiting.append(result)
            elif result is None:
                report.unchanged_sources += 1
            else:
                file_changes, added, updated, retracted = result
                changes.update(file_changes)
                report.added += added
                report.updated += updated
                report.retracted += retracted
                touched.append(shown)
        if progress:
            progress(done, len(candidates), shown)
    stamp = now_iso()
    for uri, old in _vanished(wiki, candidates, folders, by_uri):
        if run.keeps(old):
            continue
        changes[old.path] = stamped(old.updated_with(status="retracted", updated=stamp)
                                     ).to_bytes()
        report.retracted += 1
        if uri not in touched:
            touched.append(f"{uri} (deleted)")
    report.conflicts = run.conflicts
    if changes and not dry_run:
        subject = (f"ingest: {len(touched)} source{'s' * (len(touched) != 1)} "
                   f"({report.added} new, {report.updated} updated, "
                   f"{report.retracted} retracted entries)")
        body = "Sources:\n" + "\n".join(f"- {t}" for t in touched[:200])
        if len(touched) > 200:
            body += f"\n- ... and {len(touched) - 200} more"
        if run.conflicts:
            body += "\n\nLeft alone, edited since compiled (decide: edit by hand, or "
            body += "`wiki ingest --overwrite`):\n\n" + "".join(
                f"{CONFLICT_TRAILER}: {path}: {HAND_EDITED}\n" for path in run.conflicts)
        opened = propose(
            wiki, changes, base=snapshot.commit, kind="ingest", subject=subject, body=body,
            author=author, redact=redact)
        report.proposal, report.proposal_created = opened.proposal, opened.created
    elif waiting and not changes:
        report.proposal, report.proposal_created = get_proposal(wiki, waiting[0]), False
    return report


def _pending(wiki: Wiki, snapshot) -> dict[str, tuple[str, str]]:
    """``source uri -> (fingerprint, proposal name)`` for sources compiled by an open
    proposal made on the current head: ingesting them again would only duplicate it."""
    pending: dict[str, tuple[str, str]] = {}
    for proposal in list_proposals(wiki):
        if proposal.base != snapshot.commit:
            continue
        tip = wiki.snapshot(proposal.tip)
        for path in proposal.paths:
            try:
                entry = tip.entry(path)
            except (KeyError, EntryError):
                continue
            for source in entry.sources[:1]:
                pending.setdefault(source.uri, (source.fingerprint, proposal.name))
    return pending


def _display(path: Path) -> str:
    """``path`` as the report shows it (relative to the working folder when inside it); a
    name that is not valid UTF-8 shows its bytes as ``\\xNN``."""
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shown.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _check_name(path: Path, shown: str) -> None:
    """Raise :class:`SourceError` when ``path``'s name is not valid UTF-8 (the file system
    gave bytes Python keeps as surrogates): its uri, entry id and path need text."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise SourceError(shown, "the file name is not valid UTF-8 text; rename it (e.g. "
                                 "`convmv -f latin1 -t utf-8`) and ingest it again") from None


def _vanished(wiki: Wiki, candidates: list[_Candidate], folders: list[Path],
              by_uri: dict[str, list[Entry]]):
    """``(uri, entry)`` of live entries whose source lay in an ingested folder and is gone."""
    present = {source_uri(c.path, wiki.root) for c in candidates}
    prefixes = tuple(source_uri(f, wiki.root).rstrip("/") + "/" for f in folders)
    for uri, entries in sorted(by_uri.items()):
        if prefixes and uri.startswith(prefixes) and uri not in present:
            if git_file_exists(wiki, uri):
                continue  # still there, only excluded (extension, hidden): not deleted
            for entry in entries:
                if entry.status != "retracted":
                    yield uri, entry


def _collect(paths: Iterable[Path | str], config: IngestConfig,
             report: IngestReport) -> tuple[list[_Candidate], list[Path]]:
    """Files to ingest (symbolic links and hidden paths left out) and the folders named."""
    seen: set[Path] = set()
    out: list[_Candidate] = []
    folders: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_symlink():
            report.skipped.append(Skipped(str(path), "symbolic link (name its target instead)"))
            continue
        if path.is_dir():
            folders.append(path)
            root = path.resolve()
            files = []
            for item in sorted(path.rglob("*")):
                inner = item.relative_to(path).parts
                if any(part.startswith(".") for part in inner) or \
                        item.suffix.lower() not in config.extensions or item.is_dir():
                    continue
                if item.is_symlink() or not item.resolve().is_relative_to(root):
                    report.skipped.append(Skipped(_display(item), "symbolic link (not followed)"))
                elif item.is_file():
                    files.append(item)
                else:  # a pipe, socket or device: never opened (a FIFO blocks a read)
                    report.skipped.append(Skipped(_display(item), "not a regular file"))
            root = path
        elif path.is_file():
            files, root = [path], None  # a file named on its own goes to the wiki root
        elif path.exists():
            report.skipped.append(Skipped(str(path), "not a regular file"))
            continue
        else:
            report.skipped.append(Skipped(str(path), "no such file or directory"))
            continue
        for file in files:
            resolved = file.resolve()
            if resolved not in seen:
                seen.add(resolved)
                out.append(_Candidate(file, root))
    return out, folders


def _category(wiki: Wiki, candidate: _Candidate, config: IngestConfig) -> str:
    folder = candidate.path.resolve().parent
    relative = None
    if wiki.root is not None:
        try:
            relative = folder.relative_to(wiki.root.resolve()).as_posix()
        except ValueError:
            relative = None
    if relative is None and candidate.root is None:
        relative = ""
    if relative is None:
        base = candidate.root.resolve()
        inner = folder.relative_to(base).as_posix() if folder.is_relative_to(base) else ""
        relative = "/".join(p for p in (base.name, inner) if p and p != ".")
    relative = "" if relative == "." else relative
    best = max((p for p in config.categories if (relative + "/").startswith(p)
                or relative == p.rstrip("/")), key=len, default=None)
    if best is not None:
        rest = relative[len(best.rstrip("/")):].strip("/")
        relative = "/".join(p for p in (config.categories[best].strip("/"), rest) if p)
    return slug_path(relative)


def _compile(wiki: Wiki, config: WikiConfig, candidate: _Candidate,
             by_uri: dict[str, list[Entry]], taken: set[str], ids: set[str],
             pending: dict[str, tuple[str, str]], blobs: dict[str, tuple[str, str]],
             run: Guard, redact: bool = False, distiller: Distiller | None = None):
    path = candidate.path
    _check_name(path, _display(path))
    text = read_text(path, max_bytes=config.ingest.max_bytes, max_lines=config.ingest.max_lines)
    shown = _display(path)
    if (line := conflict_line(text)) is not None:
        raise SourceError(shown, f"unresolved merge-conflict markers at line {line} "
                                 "(finish the merge, then ingest it)")
    fp = fingerprint(text, ignore_frontmatter=config.sources.ignore_frontmatter,
                     ignore_whitespace=config.sources.ignore_whitespace)
    text, _ = screen(text, shown, redact_secrets=redact)  # the fingerprint is the source's
    front = parse_frontmatter(text, shown, text_fields=TEXT_FIELDS.union(
        config.ingest.tag_fields, config.ingest.alias_fields))
    _check_text_fields(front, shown, ("title", "summary", *config.ingest.tag_fields,
                                      *config.ingest.alias_fields))
    if not md.plain_text(front.body).strip():
        raise SourceError(shown, "no text to compile (empty, or frontmatter only)")
    uri = source_uri(path, wiki.root)
    if uri in pending and pending[uri][0] == fp:
        return pending[uri][1]
    existing = [e for e in by_uri.get(uri, []) if not _distilled(e)]  # the plain compile's
    atomic = [e for e in by_uri.get(uri, []) if _distilled(e) and e.status != "retracted"]
    live = [e for e in existing if e.status != "retracted"]
    current = any(e.sources[0].fingerprint == fp for e in atomic)  # distilled at fp
    if current and (distiller is not None or not live) or \
            distiller is None and live and all(e.sources[0].fingerprint == fp and
                                               e.sources[0].uri == uri for e in live):
        return None
    title = " ".join((md.inline_plain(_scalar(front.data.get("title"))) or  # one line
                      md.first_heading(front.body) or path.stem).splitlines())
    tags = _values(front.data, config.ingest.tag_fields)
    aliases = _values(front.data, config.ingest.alias_fields)
    drafts = compile_sections(title, front.body, config.ingest)
    category = _category(wiki, candidate, config.ingest)
    stamp = now_iso()
    if distiller is not None:
        blob = blobs[uri[4:]][1] if uri.startswith("git:") and uri[4:] in blobs else ""
        distilled = distiller(SourceText(uri, fp, shown, title, front.body, category, blob,
                                         base=run.base), taken, ids)
        if distilled is not None:
            return distilled
    matched = {(e.sources[0].locator, _occurrence(e)): e for e in existing}
    changes: dict[str, bytes | None] = {}
    added = updated = retracted = 0
    used: set[str] = set()
    multi = len(drafts) > 1
    for draft in drafts:
        source = Source(uri, fp, stamp, draft.locator).to_dict()
        if draft.occurrence > 1:
            source["occurrence"] = draft.occurrence
        if uri.startswith("git:") and uri[4:] in blobs:
            source["blob"] = blobs[uri[4:]][1]  # lets lint skip reading it while unchanged
        body = draft.body.rstrip("\n") + f"\n\n[1]: {uri}\n"
        fields = {"title": draft.title, "summary": draft.summary, "type": "note",
                  "status": "active", "tags": tags or None, "aliases": aliases or None,
                  "sources": [source], "updated": stamp}
        old = matched.get((draft.locator, draft.occurrence))
        if old is not None:
            used.add(old.path)
            entry = stamped(old.updated_with(body=body, **fields))
            if hand_edited(old) and entry.meta.get(COMPILED_FIELD) == \
                    old.meta.get(COMPILED_FIELD):  # its text unchanged: keep the edit
                entry = old.updated_with(sources=[source, *(old.meta.get("sources") or [])[1:]])
            elif run.keeps(old):
                continue
            if entry.meta != old.meta or entry.body != old.body:
                changes[old.path] = entry.to_bytes()
                updated += 1
            continue
        stem = slugify(path.stem) + (f"--{slugify(draft.locator)}" if multi and draft.locator
                                     else "")
        target = unique_path(category, stem, taken)
        entry_id = new_id(f"{uri}\0{draft.locator}\0{draft.occurrence}", ids)
        meta = {"id": entry_id, **{k: v for k, v in fields.items() if v is not None},
                "created": stamp}
        changes[target] = stamped(Entry(target, meta, body)).to_bytes()
        added += 1
    for old in existing:
        if old.path not in used and old.status != "retracted" and not run.keeps(old):
            changes[old.path] = stamped(old.updated_with(status="retracted", updated=stamp)
                                         ).to_bytes()
            retracted += 1
    return changes, added, updated, retracted


def _distilled(entry: Entry) -> bool:
    """Whether ``entry`` was distilled from its first source (``distilled: true``): such
    entries are the model's, never matched, rewritten or retracted by the plain compile."""
    first = (entry.meta.get("sources") or [{}])[0]
    return isinstance(first, dict) and first.get("distilled") is True


def _occurrence(entry: Entry) -> int:
    raw = (entry.meta.get("sources") or [{}])[0]
    value = raw.get("occurrence", 1) if isinstance(raw, dict) else 1
    return value if isinstance(value, int) else 1


def _check_text_fields(front, shown: str, keys: Iterable[str]) -> None:
    """Raise :class:`EntryError` (the file, the key's line) when a field whose text ingest
    reads holds a structure it would otherwise drop without a word: a mapping (or a YAML
    ``!!set``) anywhere, a list as ``title``/``summary``, a mapping as a list item."""
    for key in dict.fromkeys(keys):
        value = front.data.get(key)
        single = key in ("title", "summary")
        items = value if isinstance(value, list) and not single else [value]
        for item in items:
            if isinstance(item, (dict, set)) or (single and isinstance(item, list)):
                kind = {dict: "a mapping", set: "a set", list: "a list"}[type(item)]
                wanted = "text" if single else "text or a list of text"
                raise EntryError(shown, f"must be {wanted}, got {kind}", field=key,
                                 line=front.key_lines.get(key))


def _scalar(value) -> str:
    if value is None or isinstance(value, (dict, list)):
        return ""
    return " ".join(str(value).split())


def _values(data: dict, keys: Iterable[str]) -> list[str]:
    out: list[str] = []
    for key in keys:
        value = data.get(key)
        items = value if isinstance(value, list) else (
            [v.strip() for v in value.split(",")] if isinstance(value, str) else [])
        for item in items:
            text = _scalar(item)
            if text and text not in out:
                out.append(text)
    return out
