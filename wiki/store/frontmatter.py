"""YAML frontmatter: strict parsing with line numbers, and edits that keep bytes.

Why not python-frontmatter: it re-dumps the whole block on write and its fence regex
swallows the blank lines after the closing ``---``, so neither a byte-stable round trip
nor unknown fields kept byte-for-byte (docs/entry-format.md; docs/robustness.md, F4) is
possible with it.
Values are still parsed and dumped by PyYAML; this module only finds the fences and the
byte ranges of top-level keys (docs/decisions.md).

Parsing is strict: duplicate keys, tabs, aliases such as ``title: *Italic*`` and
unterminated blocks are errors that carry the file line.

Text fields keep the text the author wrote: PyYAML follows YAML 1.1, where a plain
``yes``/``no``/``on``/``off`` is a bool, ``12:30`` a base-60 int (750) and ``2026-01-01`` a
date. For the fields that hold text (:data:`TEXT_FIELDS`, and whatever a caller adds, such
as ingest's ``tag_fields``) a plain scalar, alone or as an item of a list, is read as the
string it is written as; only a null (``~``, ``null``, nothing) stays a null. Other fields
(``confidence``, ``created``, ``facts``, unknown ones) resolve as before.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import yaml

from wiki.errors import EntryError

_FENCE_OPEN = re.compile(r"---[ \t]*\n")
_FENCE_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$", re.MULTILINE)
_TOP_KEY = re.compile(
    r"""^(?![\s#\-]|\.\.\.)(?P<key>"[^"\n]*"|'[^'\n]*'|[^:#\n]+?)[ \t]*:(?:[ \t]|$)""")


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when present
    """SafeLoader that rejects duplicate mapping keys (PyYAML keeps the last silently), and
    reports a scalar Python cannot hold as a ``ConstructorError`` with its line."""

    def construct_object(self, node, deep=False):  # type: ignore[no-untyped-def]
        """PyYAML's, except that a scalar its constructor fails on with a bare
        ``ValueError``/``OverflowError`` (a date that names no real day: ``2026-02-31``,
        ``0000-01-01``; an int of more than 4,300 digits) raises ``ConstructorError`` at
        that scalar's line, which every caller reports for the one file."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1]
            value = str(node.value)
            shown = value if len(value) <= 40 else value[:40] + "..."
            raise yaml.constructor.ConstructorError(
                None, None, f"'{shown}' is not a valid {kind} ({str(exc).split(';')[0]})",
                node.start_mark) from None


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: set = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
        except TypeError:  # unhashable key: let the base constructor report it
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        if not isinstance(key, (list, dict)):
            seen.add(key)
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

TEXT_FIELDS = frozenset({"id", "title", "summary", "type", "status", "tags", "aliases",
                         "scope", "supersedes", "superseded_by"})
"""Top-level fields whose plain scalars (and list items) keep their written text."""
_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_AS_TEXT = frozenset(f"tag:yaml.org,2002:{name}" for name in
                     ("bool", "int", "float", "timestamp", "merge", "value", "binary"))
"""The scalar types a text field's plain scalar is read as text instead of. Any other tag
(``!!python/object:...``, a custom ``!tag``) is left to the safe constructor, which
refuses it with its line: the author asked for a type, not for text."""


def load_yaml(raw: str, text_fields: frozenset[str] = TEXT_FIELDS):
    """The YAML document ``raw`` loaded with :class:`StrictLoader`, except that a plain
    scalar under a top-level key in ``text_fields`` (directly or as a list item) is the
    string written, not a YAML 1.1 bool, number or date. Raises ``yaml.YAMLError``."""
    loader = StrictLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node) > MAX_VALUES:
            raise yaml.constructor.ConstructorError(
                None, None, f"the block expands to more than {MAX_VALUES:,} values "
                "(anchors and aliases that repeat each other)", node.start_mark)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.value in text_fields:
                    items = value_node.value if isinstance(value_node, yaml.SequenceNode) \
                        else [value_node]
                    for item in items:
                        if isinstance(item, yaml.ScalarNode) and not item.style \
                                and item.tag in _AS_TEXT:
                            item.tag = _STR_TAG
        return loader.construct_document(node)
    finally:
        loader.dispose()


MAX_VALUES = 100_000
"""The most values a frontmatter block may expand to once its aliases are followed: a
few nested anchors (``b: &b [*a, *a, ...]``) otherwise make a 1 KB block billions of
values, and every reader's index, lint and JSON output runs out of memory on it."""


def _expanded_size(node: yaml.Node) -> int:
    """How many nodes ``node`` stands for with every alias followed (a composed document
    shares one node object per anchor, so this is a walk of a small graph with a memo;
    a node that contains itself counts once here and is refused later as recursive).
    Stops counting past :data:`MAX_VALUES`."""
    sizes: dict[int, int] = {}

    def size(current: yaml.Node) -> int:
        key = id(current)
        if key in sizes:
            return sizes[key]
        sizes[key] = 1  # in progress: a cycle counts once
        total = 1
        if isinstance(current, yaml.SequenceNode):
            children = current.value
        elif isinstance(current, yaml.MappingNode):
            children = [part for pair in current.value for part in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_VALUES:
                break
        sizes[key] = total
        return total

    try:
        return size(node)
    except RecursionError:  # nesting deeper than Python's stack: not a wiki entry
        return MAX_VALUES + 1


def normalize_newlines(text: str) -> str:
    """Drop a leading BOM and turn CRLF / CR into LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class Frontmatter:
    """A parsed document: ``data`` (the mapping, ``{}`` when absent), ``body`` (text after
    the closing fence), ``raw`` (the YAML between the fences, ``None`` when the document has
    no frontmatter), ``chunks`` (top-level key -> its exact source lines, when the block
    can be edited key by key) and ``key_lines`` (key -> 1-based file line)."""

    data: dict
    body: str
    raw: str | None
    candidate_chunks: dict[str, str] = field(default_factory=dict, repr=False)
    preamble: str = ""
    key_lines: dict[str, int] = field(default_factory=dict)
    _verified: bool | None = field(default=None, repr=False)
    text_fields: frozenset[str] = field(default=TEXT_FIELDS, repr=False)

    @property
    def chunks(self) -> dict[str, str] | None:
        """The per-key runs of lines, or ``None`` when they cannot be edited one by one.
        Verified (each run re-parsed alone) on first use only: reading never pays for it."""
        if self.raw is None:
            return None
        if self._verified is None:
            self._verified = _verify(self.candidate_chunks, self.data, self.text_fields)
        return self.candidate_chunks if self._verified else None


def parse(text: str, path: str, *, required: bool = False,
          text_fields: frozenset[str] = TEXT_FIELDS) -> Frontmatter:
    """Split and parse ``text`` (already newline-normalised); the plain scalars of
    ``text_fields`` keep their text (:func:`load_yaml`). Raises :class:`EntryError`
    with the file line for malformed YAML, a non-mapping block, an unclosed block, or a
    missing block when ``required``."""
    if not _FENCE_OPEN.match(text) and text.rstrip(" \t") != "---":
        if required:
            raise EntryError(path, "no frontmatter: the file must start with a '---' line", line=1)
        return Frontmatter({}, text, None)
    start = text.index("\n") + 1 if "\n" in text else len(text)
    close = _FENCE_CLOSE.search(text, start)
    if close is None:
        raise EntryError(path, "frontmatter opened on line 1 is never closed (add a '---' line)",
                         line=1)
    raw = text[start:close.start()]
    body_start = close.end() + 1 if close.end() < len(text) else close.end()
    body = text[body_start:]
    try:
        data = load_yaml(raw, text_fields)
    except RecursionError:
        raise EntryError(path, "invalid YAML: recursive anchor/alias", line=2) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 2 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise EntryError(path, f"invalid YAML: {problem}", line=line) from None
    if data is None:
        data = {}
    try:
        json.dumps(data, default=str)
    except (ValueError, RecursionError):  # an anchor that contains itself
        raise EntryError(path, "invalid YAML: recursive anchor/alias", line=2) from None
    except TypeError as exc:  # a key no JSON output can carry: `2026-01-01: x`
        kind = str(exc).rsplit(" ", 1)[-1]
        raise EntryError(path, f"invalid YAML: a key must be text or a number, not a {kind} "
                               "(quote it: '2026-01-01': ...)", line=2) from None
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise EntryError(path, f"frontmatter must be a mapping of fields, got {kind}", line=2)
    preamble, chunks, key_lines = _chunks(raw)
    return Frontmatter(data, body, raw, chunks, preamble, key_lines,
                       text_fields=text_fields)


def _chunks(raw: str) -> tuple[str, dict[str, str], dict[str, int]]:
    """Cut ``raw`` into one run of lines per top-level key (leading comments go with the
    key after them); a cheap line scan, checked later by :func:`_verify`."""
    lines = raw.splitlines(keepends=True)
    preamble, chunks, key_lines = "", {}, {}
    pending, current = "", None
    for number, line in enumerate(lines, start=2):
        match = _TOP_KEY.match(line)
        if match:
            key_text = match["key"].strip()
            key = key_text
            if key_text[:1] in "\"'" or not _PLAIN_KEY.match(key_text):
                try:  # quoted or unusual keys: let YAML say what the key is
                    loaded = yaml.load(key_text + ": 0", Loader=StrictLoader)  # noqa: S506
                    key = next(iter(loaded)) if isinstance(loaded, dict) and loaded else key_text
                except yaml.YAMLError:
                    key = key_text
            current = key
            chunks[current] = pending + line
            key_lines[str(current)] = number
            pending = ""
        elif current is None or not line.strip() or line.startswith("#"):
            pending += line  # blank or column-0 comment: belongs to the next key
        else:
            chunks[current] += pending + line
            pending = ""
    if pending:
        if current is None:
            preamble = pending
        else:
            chunks[current] += pending
    return preamble, chunks, key_lines


def _verify(chunks: dict[str, str], data: dict,
            text_fields: frozenset[str] = TEXT_FIELDS) -> bool:
    """True when each run, parsed alone, gives exactly its key and value."""
    try:
        return set(chunks) == set(data) and all(
            load_yaml(text, text_fields) == {key: data[key]} for key, text in chunks.items())
    except (yaml.YAMLError, RecursionError):
        return False


class _Dumper(yaml.SafeDumper):
    """``safe_dump``, except that a string holding a character YAML reads as a line break
    (NEL, LINE/PARAGRAPH SEPARATOR) is double-quoted (escaped as ``\\N``, ``\\L``,
    ``\\P``): written plain, it would load back with a space in its place."""


def _represent_str(dumper: yaml.SafeDumper, value: str):
    if any(c in value for c in "\x85\u2028\u2029"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_str(value)


_Dumper.add_representer(str, _represent_str)


def dump_field(key: str, value) -> str:
    """One top-level ``key: value`` as block YAML (Unicode kept, no line wrapping)."""
    return yaml.dump({key: value}, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     default_flow_style=False, width=1_000_000)


def render(data: dict, body: str, *, original: Frontmatter | None = None,
           order: tuple[str, ...] = ()) -> str:
    """The document text for ``data`` and ``body``.

    With ``original``, keys whose value is unchanged keep their exact original lines and
    position; changed keys are re-dumped in place; new keys follow, in ``order`` first.
    Without it (or when the original block cannot be edited key by key), keys are written
    in ``order``, then the rest in their given order.
    """
    parts: list[str] = []
    if original is not None and original.chunks is not None:
        parts.append(original.preamble)
        for key, text in original.chunks.items():
            if key not in data:
                continue
            same = key in original.data and original.data[key] == data[key]
            parts.append(text if same else dump_field(key, data[key]))
        remaining = [k for k in data if k not in original.chunks]
    else:
        remaining = list(data)
    rank = {k: i for i, k in enumerate(order)}
    given = {k: i for i, k in enumerate(remaining)}
    remaining.sort(key=lambda k: (rank.get(k, len(rank)), given[k]))
    parts.extend(dump_field(k, data[k]) for k in remaining)
    block = "".join(parts)
    if block and not block.endswith("\n"):
        block += "\n"
    return f"---\n{block}---\n{body}"
