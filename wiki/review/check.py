"""The review check: what a proposal would land, computed from its own commits.

A proposal branch can be made by hand with plain git, so nothing written at propose time
(``Wiki-Flag:`` trailers included) is trusted. :func:`check` looks at everything
``base..tip`` brings, and ``wiki proposals``, ``wiki diff``, the MCP tools and
``wiki approve`` all show or enforce its result. Flag categories:

``secret``
    a secret (:mod:`wiki.safety.scan`, rules ``S0xx``) new in a changed file, a new file's name,
    the proposal's metadata (branch name; each commit's message, trailers, author and
    committer names, emails and other headers: :mod:`wiki.review.metadata`), or a blob of
    any commit of the range (history lands too); also a blob too large to scan (``R006``)
    or a blob or commit object that is not UTF-8 text (``R007``: NUL bytes, UTF-16,
    binary). Never overridable.
``instruction``
    instruction-like text (``I001``-``I006``) new in a file, a name or the metadata.
``control-chars``
    terminal control characters (``I007``): C0/C1 controls other than tab and newline,
    ESC/CSI/OSC sequences, a lone carriage return.
``size``
    a file larger than ``[ingest] max_bytes`` (the cap ingest puts on a source) plus
    :data:`SIZE_SLACK` for the frontmatter an entry adds (``R001``).
``non-regular``
    a symlink, a submodule (gitlink) or an executable file (``R002``): a wiki holds
    plain files only.
``file-name``
    a new path that is not NFC or unprintable, has a hidden, dot, ``..``, Windows-reserved or
    Windows-invalid component, is too long, clashes by case with another path, or is not
    a wiki file (an entry ``.md``, an ``index.md`` or ``wiki.toml``) (``R003``).
``schema``
    an entry whose frontmatter does not parse or validate (:meth:`Entry.parse`), an invalid
    ``wiki.toml``, or an ``index.md`` whose listing is not the one its entries generate
    (``R004``).
``review-policy``
    a ``wiki.toml`` change (or deletion) that weakens ``[review]``: fewer
    ``approvals_required``, ``allow_self_approval`` turned on, ``require_signatures``
    turned off (``R008``). The policy on the wiki head still decides who may land it;
    the flag makes the weakening an explicit, recorded override.
``trust-setting``
    any other change of a setting that changes what readers trust (which sources and
    files are read, which model text is sent to, who may land what: the table is
    :data:`wiki.review.settings.TRUST`), either way, one flag per setting named as its
    kind (``R009 llm.model``); and a deletion of ``wiki.toml`` (``R009
    config-deleted``).
``breaks-dependency``
    a deleted entry that a live entry still names (``relations``, ``supersedes``,
    ``superseded_by``: lint W006 afterwards), or a retracted one that a live entry
    ``depends_on`` or ``supersedes`` (``R005``).
``invalid-tree``
    an object of ``base..tip`` git's own fsck refuses (:mod:`wiki.store.fsck`; ``R010``,
    never overridable: a checking remote refuses the push, a checkout writes it wrong).
``unrelated-history``
    a tip that shares no commit with the wiki branch (``R011``, never overridable): there
    is no base to review it from (``base`` is the tip itself), yet approve's merge would
    bring every commit and blob of its history into the wiki's.

Findings already present in the base version of a file are not held against the change
(lint W014/W015 report them). Results are memoised per ``(repository, base, tip, cap)``:
commits are immutable, so the same range always gives the same flags.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass

from wiki.config import CONFIG_PATH, IngestConfig, parse_config
from wiki.errors import ConfigError, EntryError, WikiError
from wiki.safety.scan import SECRET, Finding, Flag, scan
from wiki.store import indextree
from wiki.store.entry import Entry
from wiki.store.gitcli import objects_of_type
from wiki.store.treepaths import case_twins
from wiki.store.workspace import Wiki

SECRET_FLAG, INSTRUCTION, CONTROL, SIZE = "secret", "instruction", "control-chars", "size"
NON_REGULAR, FILE_NAME, SCHEMA, BREAKS = ("non-regular", "file-name", "schema",
                                         "breaks-dependency")
POLICY, TRUST_SETTING, INVALID_TREE = "review-policy", "trust-setting", "invalid-tree"
UNRELATED = "unrelated-history"
CATEGORIES = (SECRET_FLAG, INSTRUCTION, CONTROL, SIZE, NON_REGULAR, FILE_NAME, SCHEMA, BREAKS,
              POLICY, TRUST_SETTING, INVALID_TREE, UNRELATED)
"""Every flag category, in the order messages list them."""
NOT_OVERRIDABLE = frozenset({SECRET_FLAG, INVALID_TREE, UNRELATED})
"""Categories ``wiki approve --override-flags`` cannot land: a secret in a landed commit is
pushed to every clone and stays in history; git refuses an invalid tree; a history that
shares no commit with the wiki was not reviewed, yet its landing merge would bring it all."""
LOCKS_OUT = "invalid-config"
"""The one schema flag no override lands: every command reads ``wiki.toml`` on the head
first, so an invalid one would stop ``propose`` and ``approve`` of its own fix."""
SIZE_SLACK = 65_536
"""Bytes an entry may exceed the source cap by: the frontmatter ingest adds to a source."""
SCAN_FACTOR = 8
"""Blobs larger than this many times the cap are not read: flagged ``R006`` (a secret in
them cannot be ruled out)."""
CACHE_SIZE = 256
_CACHE: dict[tuple[str, str, str, int, str], tuple[ReviewFlag, ...]] = {}
REGULAR_MODE = 0o100644


@dataclass(frozen=True)
class ReviewFlag(Flag):
    """A :class:`wiki.safety.scan.Flag` with its check ``category`` (one of
    :data:`CATEGORIES`) and a one-line ``detail`` for the reviewer. ``line``/``column`` are
    0 when the flag is about a whole file or name. ``str()`` is the ``Wiki-Flag:`` form."""

    category: str = INSTRUCTION
    detail: str = ""

    @property
    def overridable(self) -> bool:
        """Whether ``wiki approve --override-flags`` may land a proposal with this flag."""
        return self.category not in NOT_OVERRIDABLE and self.kind != LOCKS_OUT


@dataclass(frozen=True)
class TreeItem:
    """One non-tree entry of a git tree: octal ``mode``, object ``type`` (``blob`` or
    ``commit`` for a submodule) and ``sha``."""

    mode: int
    type: str
    sha: str


def tree_items(wiki: Wiki, commit: str | None) -> dict[str, TreeItem]:
    """``path -> TreeItem`` of every blob and gitlink of ``commit``'s tree (``git ls-tree
    -r``; unlike :meth:`BranchStore.files` it keeps submodules). Paths that are not UTF-8
    keep their bytes as surrogate escapes."""
    if commit is None:
        return {}
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "ls-tree", "-r", "-z",
                           "--full-tree", commit], capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git ls-tree {commit[:12]} failed: {done.stderr.decode().strip()}")
    items = {}
    for record in done.stdout.split(b"\0"):
        if not record:
            continue
        head, _, path = record.partition(b"\t")
        mode, kind, sha = head.decode().split()
        items[path.decode("utf-8", "surrogateescape")] = TreeItem(int(mode, 8), kind, sha)
    return items


def check(wiki: Wiki, base: str, tip: str, ref: str | None = None) -> list[ReviewFlag]:
    """Every flag of what ``base..tip`` would land (see the module docstring), sorted by
    category, path and position; with ``ref`` (the proposal's full ref name) its branch
    name's flags too (:mod:`wiki.review.metadata`). Raises :class:`WikiError` only when
    git itself fails."""
    try:
        cap = wiki.config().ingest.max_bytes
    except WikiError:  # an invalid wiki.toml on the head: the default cap still holds
        cap = IngestConfig().max_bytes
    key = (str(wiki.repo.git_dir), base, tip, cap, ref or "")
    if key not in _CACHE:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = _check(wiki, base, tip, cap, ref)
    return list(_CACHE[key])


def summary(flags: Iterable[ReviewFlag]) -> str:
    """``2 secret, 1 size``: how many flags of each category, in :data:`CATEGORIES` order."""
    counts = {c: 0 for c in CATEGORIES}
    for flag in flags:
        counts[flag.category] = counts.get(flag.category, 0) + 1
    return ", ".join(f"{n} {c}" for c, n in counts.items() if n)


def _check(wiki: Wiki, base: str, tip: str, cap: int,
           ref: str | None) -> tuple[ReviewFlag, ...]:
    from wiki.review import metadata, settings  # both import this module's flag types

    before, after = tree_items(wiki, base), tree_items(wiki, tip)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    limit = (cap + SIZE_SLACK) * SCAN_FACTOR
    sizes = _sizes(wiki, {i.sha for p in changed for i in (before.get(p), after.get(p))
                          if i is not None and i.type == "blob"})
    readable = [s for s, n in sizes.items() if n <= limit]
    blobs = wiki.store.read_many(readable)
    flags: list[ReviewFlag] = []
    twins = dict(case_twins([p for p in changed if p in after and p not in before], after))
    for path in changed:
        old, new = before.get(path), after.get(path)
        if path == CONFIG_PATH:
            texts = [blob_text(blobs.get(i.sha)) if i is not None and i.type == "blob" else None
                     for i in (old, new)]
            flags += settings.setting_flags(*texts, deleted=new is None)
        if new is None:
            continue
        old_text = blob_text(blobs.get(old.sha)) if old is not None and old.type == "blob" else None
        flags += _file_flags(path, new, old, old_text, blobs, sizes, cap, limit)
        if old is None:
            flags += _name_flags(path, twins.get(path))
    from wiki.review.tree import dependency_flags, index_flags, invalid_objects

    flags += index_flags(wiki, base, tip, before, after, changed, blobs)
    flags += dependency_flags(wiki, tip, before, after, changed, blobs)
    flags += metadata.commit_flags(wiki, base, tip)
    flags += metadata.name_flags(ref) if ref else []
    flags += _history_flags(wiki, base, tip, before, after, limit)
    flags += tree_name_flags(wiki, base, tip, before.keys() | after.keys())
    flags += invalid_objects(wiki, [tip], [base])
    flags += _unrelated(wiki, base, tip)
    order = {c: i for i, c in enumerate(CATEGORIES)}
    unique = dict.fromkeys(flags)
    return tuple(sorted(unique, key=lambda f: (order.get(f.category, 99), f.path, f.line,
                                               f.column, f.rule)))


def _unrelated(wiki: Wiki, base: str, tip: str) -> list[ReviewFlag]:
    """``R011`` when ``tip`` has no commit in common with the wiki branch (the proposal
    loader then takes the tip as its own base, so ``base..tip`` is empty)."""
    head = wiki.head()
    if base != tip or head is None or wiki.repo.is_ancestor(tip, head):
        return []
    return [ReviewFlag("R011", UNRELATED, f"commit {tip[:12]}", 0, 0, UNRELATED,
                       "shares no commit with the wiki branch: nothing to review it from, "
                       "yet landing would merge its whole history into the wiki's")]


def _sizes(wiki: Wiki, shas: set[str]) -> dict[str, int]:
    """``sha -> size`` in bytes through one ``git cat-file --batch-check``."""
    if not shas:
        return {}
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "cat-file",
                           "--batch-check"], input="".join(f"{s}\n" for s in shas).encode(),
                          capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git cat-file --batch-check failed: {done.stderr.decode().strip()}")
    sizes = {}
    for line in done.stdout.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def not_text(data: bytes | None) -> str | None:
    """Why ``data`` cannot be scanned as text (NUL bytes, not UTF-8: UTF-16 would spread a
    token over NULs that no pattern matches), or ``None`` when it is UTF-8 text. A wiki
    holds UTF-8 markdown only, so such a blob is flagged ``R007`` in the secret category:
    no override lands what could not be read."""
    if not data:
        return None
    if b"\0" in data:
        return "binary content (NUL bytes): cannot be scanned for secrets"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (f"not UTF-8 text (byte {exc.start}): cannot be scanned for secrets; "
                "wiki files are UTF-8 markdown")
    return None


def blob_text(data: bytes | None) -> str | None:
    """A blob as text: UTF-8, bytes that are not kept as surrogate escapes."""
    return None if data is None else data.decode("utf-8", "surrogateescape")


def _category(finding: Finding) -> str:
    if finding.category == SECRET:
        return SECRET_FLAG
    return CONTROL if finding.rule == "I007" else INSTRUCTION


def content_flags(text: str, where: str, before: str | None,
                   categories: frozenset[str] | None = None) -> list[ReviewFlag]:
    """Flags of the findings of ``text`` that ``before`` does not already hold."""
    out = []
    for finding in scan(text):
        category = _category(finding)
        if categories is not None and category not in categories:
            continue
        if before is not None and text[finding.start:finding.end] in before:
            continue
        detail = f"{finding.excerpt}: {finding.description}"
        out.append(ReviewFlag(finding.rule, finding.kind, where, finding.line, finding.column,
                              category, detail))
    return out


def _file_flags(path: str, new: TreeItem, old: TreeItem | None, old_text: str | None,
                blobs: dict[str, bytes], sizes: dict[str, int], cap: int,
                limit: int) -> list[ReviewFlag]:
    from wiki.review import fields as review_fields  # imports this module's flag types

    flags: list[ReviewFlag] = []
    if new.type != "blob":
        return [ReviewFlag("R002", "submodule", path, 0, 0, NON_REGULAR,
                           f"a submodule (gitlink to commit {new.sha[:12]}), not a file")]
    if new.mode == 0o120000:
        target = (blobs.get(new.sha) or b"").decode("utf-8", "replace")
        flags.append(ReviewFlag("R002", "symlink", path, 0, 0, NON_REGULAR,
                                f"a symbolic link to {target!r}, not a file"))
    elif new.mode != REGULAR_MODE:
        flags.append(ReviewFlag("R002", "executable" if new.mode & 0o111 else "mode", path,
                                0, 0, NON_REGULAR, f"file mode {new.mode:o}, not 100644"))
    size = sizes.get(new.sha, 0)
    if size > cap + SIZE_SLACK:
        flags.append(ReviewFlag("R001", "too-large", path, 0, 0, SIZE,
                                f"{size} bytes; ingest takes sources up to {cap} "
                                "([ingest] max_bytes)"))
    if size > limit:
        return [*flags, ReviewFlag("R006", "unscanned", path, 0, 0, SECRET_FLAG,
                                   f"{size} bytes: too large to scan for secrets")]
    unreadable = not_text(blobs.get(new.sha))
    if unreadable:
        return [*flags, ReviewFlag("R007", "not-text", path, 0, 0, SECRET_FLAG, unreadable)]
    text = blob_text(blobs.get(new.sha)) or ""
    name = path.rpartition("/")[2]
    if name == indextree.INDEX_NAME:
        return flags  # its overview and listing: wiki.review.tree.index_flags
    flags += content_flags(text, path, old_text if old is not None else None)
    if path.endswith(".md"):
        flags += review_fields.decoded_field_flags(
            text, path, old_text if old is not None else None)
    if indextree.is_entry_path(path) and new.mode == REGULAR_MODE:
        try:
            Entry.parse(path, blobs.get(new.sha) or b"")
        except EntryError as exc:
            flags.append(ReviewFlag("R004", "invalid-entry", path, exc.line or 0, 0, SCHEMA,
                                    exc.reason if not exc.field
                                    else f"field '{exc.field}': {exc.reason}"))
    elif path == CONFIG_PATH:
        try:
            parse_config(text)
        except ConfigError as exc:
            flags.append(ReviewFlag("R004", LOCKS_OUT, path, 0, 0, SCHEMA, str(exc)))
    return flags


def _name_flags(path: str, twin: str | None) -> list[ReviewFlag]:
    """Flags of a new path: what it says (secrets, instructions, control characters) and
    whether it is a safe, portable wiki file name (:mod:`wiki.review.filenames`; ``twin``:
    the path a case-insensitive checkout takes it for)."""
    from wiki.review.filenames import name_problems

    flags = [ReviewFlag(f.rule, f.kind, path, 0, 0, f.category, "in the file name: "
                        + f.detail) for f in content_flags(path, path, None)]
    return flags + [ReviewFlag("R003", "bad-file-name", path, 0, 0, FILE_NAME, problem)
                    for problem in name_problems(path, twin)]


def _history_flags(wiki: Wiki, base: str, tip: str, before: dict[str, TreeItem],
                   after: dict[str, TreeItem], limit: int) -> list[ReviewFlag]:
    """Secrets in blobs that only intermediate commits hold: they land in history too
    (the commits' own metadata: :func:`wiki.review.metadata.commit_flags`)."""
    flags: list[ReviewFlag] = []
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "rev-list", "--objects",
                           tip, "--not", base], capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git rev-list {base[:12]}..{tip[:12]} failed: "
                        f"{done.stderr.decode().strip()}")
    landing = {i.sha for i in after.values()}
    named: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        sha, _, path = line.partition(" ")
        if sha not in landing:
            named.setdefault(sha, path)
    sizes = _sizes(wiki, set(named))
    blobs = objects_of_type(wiki.repo.git_dir, set(named), "blob")
    data = wiki.store.read_many([s for s in blobs if sizes.get(s, 0) <= limit])
    earlier = {before[p].sha for p in named.values() if p in before}
    old = wiki.store.read_many(sorted(earlier))
    for sha in sorted(blobs):
        path = named[sha]
        where = f"{path} (in an earlier commit of the proposal)"
        if sha not in data:
            flags.append(ReviewFlag("R006", "unscanned", where, 0, 0, SECRET_FLAG,
                                    f"{sizes.get(sha, 0)} bytes: too large to scan for "
                                    "secrets"))
            continue
        unreadable = not_text(data[sha])
        if unreadable:
            flags.append(ReviewFlag("R007", "not-text", where, 0, 0, SECRET_FLAG, unreadable))
            continue
        was = before.get(path)
        flags += content_flags(blob_text(data[sha]) or "", where,
                                blob_text(old.get(was.sha)) if was is not None else None,
                                frozenset({SECRET_FLAG}))
    return flags


_SECRETS = frozenset({SECRET_FLAG})


def tree_name_flags(wiki: Wiki, base: str, tip: str,
                    paths: Iterable[str]) -> list[ReviewFlag]:
    """``secret`` flags for entry names of the tree objects reachable from ``tip`` and not
    from ``base`` that are no component of ``paths`` (the base's and the tip's paths,
    screened as file names already). The flag's path names the folder, never the name
    itself (its detail shows the secret masked). Raises :class:`WikiError` when git
    fails."""
    known = {part for path in paths for part in path.split("/")}
    done = subprocess.run(["git", f"--git-dir={wiki.repo.git_dir}", "rev-list", "--objects",
                           tip, "--not", base], capture_output=True)
    if done.returncode != 0:
        raise WikiError(f"git rev-list {base[:12]}..{tip[:12]} failed: "
                        f"{done.stderr.decode().strip()}")
    folders: dict[str, str] = {}
    for line in done.stdout.decode("utf-8", "surrogateescape").splitlines():
        sha, _, path = line.partition(" ")
        folders.setdefault(sha, path)
    trees = objects_of_type(wiki.repo.git_dir, set(folders), "tree")
    flags: list[ReviewFlag] = []
    for sha, raw in wiki.store.read_many(sorted(trees)).items():
        where = f"{folders[sha] or '(root)'} (a name in an earlier commit of the proposal)"
        for name in _names(raw, len(sha) // 2):
            if name not in known:
                flags += [ReviewFlag(f.rule, f.kind, where, 0, 0, f.category,
                                     "in a file name: " + f.detail)
                          for f in content_flags(name, where, None, _SECRETS)]
    return flags


def _names(raw: bytes, hash_size: int) -> list[str]:
    """The entry names of a raw tree object (``<mode> <name>\\0<hash>`` records)."""
    names, pos = [], 0
    while pos < len(raw):
        space, nul = raw.index(b" ", pos), raw.index(b"\0", pos)
        names.append(raw[space + 1:nul].decode("utf-8", "surrogateescape"))
        pos = nul + 1 + hash_size
    return names
