"""The entry: one markdown file with YAML frontmatter (docs/entry-format.md).

Known fields are validated with a per-file, per-field error; unknown fields are kept
byte-for-byte; an entry that was not changed is written back as its original bytes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import posixpath
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from wiki.errors import EntryError
from wiki.store.frontmatter import Frontmatter, normalize_newlines, parse, render

ENTRY_TYPES = ("fact", "decision", "procedure", "note", "episode")
STATUSES = ("active", "superseded", "retracted", "draft")
RELATION_TYPES = ("depends_on", "refines", "conflicts_with", "related_to", "derived_from")
FIELD_ORDER = (
    "id", "title", "summary", "type", "status", "tags", "aliases", "sources",
    "supersedes", "superseded_by", "relations", "facts", "confidence",
    "created", "updated", "valid_until", "scope", "importance",
)
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,63}$")
SCOPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Source:
    """A source an entry was compiled from: ``uri``, ``fingerprint`` (``sha256:<hex>`` of
    canonical text), ``checked_at`` (ISO 8601 UTC) and an optional ``locator`` (a heading)."""

    uri: str
    fingerprint: str = ""
    checked_at: str = ""
    locator: str = ""

    def to_dict(self) -> dict[str, str]:
        """The YAML mapping, without empty optional keys."""
        out = {"uri": self.uri, "fingerprint": self.fingerprint, "checked_at": self.checked_at}
        if self.locator:
            out["locator"] = self.locator
        return {k: v for k, v in out.items() if v}


@dataclass
class Entry:
    """An entry at ``path`` (POSIX, relative to the branch root).

    ``meta`` holds every frontmatter field as parsed (known and unknown); ``body`` is the
    markdown after the frontmatter. ``original`` is the parsed source text, kept so that
    unchanged fields keep their exact bytes on write.
    """

    path: str
    meta: dict[str, Any]
    body: str
    original: Frontmatter | None = None
    raw: bytes | None = field(default=None, repr=False)

    # -- reading -----------------------------------------------------------------------
    @classmethod
    def parse(cls, path: str, data: bytes) -> Entry:
        """Parse and validate the bytes of an entry file. Raises :class:`EntryError`."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EntryError(path, f"not UTF-8 text (byte {exc.start})") from None
        fm = parse(normalize_newlines(text), path, required=True)
        validate(fm.data, path, fm.key_lines)
        return cls(path, dict(fm.data), fm.body, fm, data)

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def title(self) -> str:
        return str(self.meta["title"])

    @property
    def summary(self) -> str:
        return str(self.meta.get("summary") or "")

    @property
    def type(self) -> str:
        return self.meta.get("type") or "note"

    @property
    def status(self) -> str:
        return self.meta.get("status") or "active"

    @property
    def tags(self) -> list[str]:
        return _str_list(self.meta.get("tags"))

    @property
    def aliases(self) -> list[str]:
        return _str_list(self.meta.get("aliases"))

    @property
    def scope(self) -> str:
        """The ``scope:`` field, else the first segment of the entry's folder (``""`` for
        an entry at the root)."""
        explicit = self.meta.get("scope")
        if explicit:
            return str(explicit)
        return self.path.partition("/")[0] if "/" in self.path else ""

    @property
    def relations(self) -> dict[str, list[str]]:
        """``relation type -> target entry ids`` (empty types left out)."""
        return {kind: ids for kind, ids in ((str(k), _str_list(v)) for k, v in
                                            (self.meta.get("relations") or {}).items()) if ids}

    @property
    def sources(self) -> list[Source]:
        return [Source(str(s["uri"]), str(s.get("fingerprint") or ""),
                       _iso(s.get("checked_at")), str(s.get("locator") or ""))
                for s in self.meta.get("sources") or []]

    @property
    def category(self) -> str:
        """The folder of the entry (``""`` at the root)."""
        return self.path.rpartition("/")[0]

    # -- writing -----------------------------------------------------------------------
    def updated_with(self, body: str | None = None, **fields: Any) -> Entry:
        """A copy with ``fields`` set (``None`` removes a field) and optionally a new body."""
        meta = dict(self.meta)
        for key, value in fields.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        return Entry(self.path, meta, self.body if body is None else body, self.original,
                     None)

    def to_bytes(self) -> bytes:
        """The file content: the original bytes when nothing changed, else the rendered
        text (unchanged fields keep their original lines)."""
        if self.raw is not None:
            return self.raw
        return render(self.meta, self.body, original=self.original,
                      order=FIELD_ORDER).encode("utf-8")

    def content_hash(self) -> str:
        """sha256 of the file bytes (hex): changes whenever the file does."""
        return hashlib.sha256(self.to_bytes()).hexdigest()


def validate(meta: dict, path: str, lines: dict[str, int] | None = None) -> None:
    """Check the known fields of ``meta``; raise :class:`EntryError` naming the first bad
    field and its line. Unknown fields are not checked."""
    lines = lines or {}

    def fail(key: str, message: str) -> None:
        raise EntryError(path, message, field=key, line=lines.get(key))

    for key in ("id", "title"):
        if key not in meta:
            raise EntryError(path, "missing required field", field=key)
    if not isinstance(meta["id"], str) or not ID_PATTERN.match(meta["id"]):
        fail("id", f"must be 2-64 letters, digits, '.', '_' or '-', got {meta['id']!r}")
    if not isinstance(meta["title"], str) or not meta["title"].strip():
        fail("title", f"must be a non-empty string, got {meta['title']!r}")
    if "summary" in meta and not isinstance(meta["summary"], str):
        fail("summary", f"must be a string, got {meta['summary']!r}")
    if "type" in meta and meta["type"] not in ENTRY_TYPES:
        fail("type", f"must be one of {', '.join(ENTRY_TYPES)}, got {meta['type']!r}")
    if "status" in meta and meta["status"] not in STATUSES:
        fail("status", f"must be one of {', '.join(STATUSES)}, got {meta['status']!r}")
    for key in ("tags", "aliases", "supersedes", "superseded_by"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str) and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)):
            fail(key, f"must be a string or a list of strings, got {value!r}")
    sources = meta.get("sources")
    if sources is not None:
        if not isinstance(sources, list):
            fail("sources", f"must be a list of {{uri, fingerprint, checked_at}}, got {sources!r}")
        for number, source in enumerate(sources, start=1):
            if not isinstance(source, dict) or not isinstance(source.get("uri"), str) \
                    or not source["uri"].strip():
                fail("sources", f"item {number} needs a 'uri' string, got {source!r}")
    relations = meta.get("relations")
    if relations is not None:
        if not isinstance(relations, dict):
            fail("relations", f"must map a relation type to entry ids, got {relations!r}")
        for kind, targets in relations.items():
            if kind not in RELATION_TYPES:
                fail("relations", f"unknown relation {kind!r} (use {', '.join(RELATION_TYPES)})")
            if targets is not None and not isinstance(targets, str) and not (
                    isinstance(targets, list) and all(isinstance(t, str) for t in targets)):
                fail("relations", f"{kind} must name an entry id or a list of ids, "
                                  f"got {targets!r}")
    if "facts" in meta:
        problem = _facts_problem(meta["facts"])
        if problem:
            fail("facts", problem)
    if "outcomes" in meta:
        problem = _outcomes_problem(meta["outcomes"])
        if problem:
            fail("outcomes", problem)
    for key in ("confidence", "importance"):
        number = meta.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(
                number, (int, float)) or not 0 <= number <= 1):
            fail(key, f"must be a number from 0 to 1, got {number!r}")
    scope = meta.get("scope")
    if scope is not None and (not isinstance(scope, str) or not SCOPE_PATTERN.match(scope)):
        fail("scope", f"must be 1-64 letters, digits, '.', '_' or '-', got {scope!r}")
    for key in ("created", "updated", "valid_until"):
        if key in meta and not _is_date(meta[key]):
            fail(key, f"must be an ISO 8601 date or time, got {meta[key]!r}")


MAX_FACT_KEY = 200
"""Longest fact key (characters): a key is a name (``travel.per_diem.denver``), printed on
one line by ``wiki facts`` and lint."""


def _facts_problem(facts: Any) -> str | None:
    """Why ``facts`` is malformed, or ``None``. A fact is ``key: value`` or
    ``key: {value: ..., unit: ..., as_of: DATE}`` (``value`` required in the long form)."""
    if not isinstance(facts, dict):
        return f"must be a mapping of key: value claims, got {facts!r}"
    for key, value in facts.items():
        if not isinstance(key, str):
            return f"fact key {key!r} must be text: quote it ('{key}')"
        if not key.strip() or len(key) > MAX_FACT_KEY \
                or any(unicodedata.category(c)[0] == "C" or unicodedata.category(c) in ("Zl", "Zp")
                       for c in key):
            return (f"fact key {str(key)[:80]!r} must be text on one line (no control or "
                    f"line-break characters, at most {MAX_FACT_KEY} characters)")
        if not isinstance(value, dict):
            continue
        unknown = set(value) - {"value", "unit", "as_of"}
        if "value" not in value or unknown:
            return (f"fact {key!r} in the long form needs 'value' (and optionally 'unit', "
                    f"'as_of'), got {value!r}")
        if "as_of" in value and not _is_date(value["as_of"]):
            return f"fact {key!r}: as_of must be an ISO 8601 date, got {value['as_of']!r}"
    return None


def _outcomes_problem(outcomes: Any) -> str | None:
    """Why an ``outcomes`` field (``{worked: N, failed: N, last: TIME}``, written by
    ``wiki feedback --propose``) is malformed, or ``None``."""
    if not isinstance(outcomes, dict):
        return f"must be a mapping {{worked, failed, last}}, got {outcomes!r}"
    for key in ("worked", "failed"):
        count = outcomes.get(key, 0)
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count < 2**53:
            return f"{key} must be a count (a whole number from 0), got {count!r}"
    last = outcomes.get("last")
    if last not in (None, "") and not _is_date(last):
        return f"last must be an ISO 8601 time, got {last!r}"
    return None


def _is_date(value: Any) -> bool:
    if isinstance(value, (dt.date, dt.datetime)):
        return True
    if not isinstance(value, str):
        return False
    try:
        dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _iso(value: Any) -> str:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value or "")


def _str_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def new_id(seed: str, taken: set[str]) -> str:
    """A reproducible id for ``seed``: ``e`` + the first 12 hex digits of its sha256 (16,
    24 or 32 when shorter prefixes are in ``taken``), added to ``taken``."""
    digest = hashlib.sha256(seed.encode()).hexdigest()
    for length in (12, 16, 24, 32):
        candidate = "e" + digest[:length]
        if candidate not in taken:
            taken.add(candidate)
            return candidate
    raise AssertionError("sha256 prefix collision")  # pragma: no cover


def now_iso() -> str:
    """The current UTC time, second precision, as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_ids(value: Any) -> list[str]:
    """A frontmatter value that names entry ids (string, list, or nothing) as a list."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value]
    return [str(value)]


def resolve_link(entry_path: str, target: str) -> str | None:
    """The branch path a relative ``.md`` link points to (``""`` when it leaves the
    branch), or ``None`` when the link is not a relative markdown link."""
    if _SCHEME.match(target) or target.startswith(("#", "/", "//")):
        return None
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not target.endswith(".md"):
        return None
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), target))
    return "" if joined.startswith("../") or joined == ".." else joined


def named_ids(entry: Entry) -> list[tuple[str, str]]:
    """``(field, id)`` for every entry id that ``entry`` names in ``relations``,
    ``supersedes`` and ``superseded_by`` (field: ``relations.depends_on``, ``supersedes``)."""
    named: list[tuple[str, str]] = []
    for kind, ids in sorted((entry.meta.get("relations") or {}).items()):
        named += [(f"relations.{kind}", i) for i in as_ids(ids)]
    for key in ("supersedes", "superseded_by"):
        named += [(key, i) for i in as_ids(entry.meta.get(key))]
    return named
