"""Hostile-content scanning: secrets and instruction-like text (docs/robustness.md, H1-H2).

:func:`scan` finds every match of the pattern table (:mod:`wiki.safety.patterns`) in a
text; :func:`redact` replaces the secrets with ``[REDACTED:<kind>]``. Both are used where
text enters the wiki (:func:`screen`, called for every proposal, by ingest per file and by
``wiki propose`` on its input), by ``wiki lint`` (W014, W015) and before any text is sent to
a model. A finding never carries a secret in full: ``excerpt`` is masked (first characters
and ``…``); the offsets say where it is.
"""

from __future__ import annotations

import bisect
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from wiki.errors import SecretError
from wiki.safety.patterns import BY_RULE, INSTRUCTION, PATTERNS, SECRET, Pattern

__all__ = ["INSTRUCTION", "SECRET", "Finding", "Flag", "mask", "redact", "scan", "screen",
           "screen_bytes", "screen_changes"]

EXCERPT_CHARS = 60
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)

# Letters that read as Latin ones, one character for one (offsets stay those of the text):
# full-width forms (what NFKC folds them to) and the Cyrillic and Greek lower-case letters
# Unicode's confusables.txt lists for a Latin one. Instruction rules match the text read
# this way, so "ｉｇｎｏｒｅ" or a Cyrillic "іgnоrе" is the instruction it shows.
_LOOKALIKES = str.maketrans({
    **{chr(0xFF41 + i): chr(ord("a") + i) for i in range(26)},
    **{chr(0xFF21 + i): chr(ord("a") + i) for i in range(26)},
    **{chr(0xFF10 + i): str(i) for i in range(10)},
    "\u3000": " ",
    **dict(zip("аеорсухіјѕԁһӏԛԝɡ", "aeopcyxijsdhlqwg", strict=True)),
    **dict(zip("οαικνρυχ", "oaikvpux", strict=True)),
})


@dataclass(frozen=True)
class Finding:
    """One match: the pattern's ``rule`` id, ``kind``, ``category`` (``secret`` |
    ``instruction``) and ``severity``; 1-based ``line`` and ``column`` (in characters) of
    its start; ``start``/``end`` offsets into the scanned text (for a secret: the secret
    itself, which is what :func:`redact` replaces); a printable ``excerpt`` (a secret is
    masked, see :func:`mask`) and the pattern's ``description``."""

    rule: str
    kind: str
    category: str
    severity: str
    line: int
    column: int
    start: int
    end: int
    excerpt: str
    description: str

    def describe(self, path: str) -> str:
        """``path:line:col: secret (github-token) ghp_…: <description>``, one line."""
        return (f"{path}:{self.line}:{self.column}: {self.category} ({self.kind}) "
                f"{self.excerpt}: {self.description}")


@dataclass(frozen=True)
class Flag:
    """An instruction-like finding recorded on a proposal for its reviewer: ``rule``,
    ``kind`` and where (``path``, ``line``, ``column``). ``str(flag)`` is the value of a
    ``Wiki-Flag:`` trailer, which :meth:`parse` reads back."""

    rule: str
    kind: str
    path: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.rule} {self.kind} {self.path}:{self.line}:{self.column}"

    @classmethod
    def parse(cls, value: str) -> Flag | None:
        """The flag written by ``str()``, or ``None`` for a value of another shape."""
        parts = value.split(" ", 2)
        if len(parts) != 3:
            return None
        path, _, rest = parts[2].rpartition(":")
        path, _, line = path.rpartition(":")
        if not (path and line.isdigit() and rest.isdigit()):
            return None
        return cls(parts[0], parts[1], path, int(line), int(rest))


def mask(value: str) -> str:
    """A secret shown safely: its first characters (at most 4, and at most a quarter of
    it) and ``…``. ``mask("ghp_abc...") == "ghp_…"``; ``mask("hunter2") == "h…"``."""
    return value[:min(4, len(value) // 4)] + "…"


def scan(text: str) -> list[Finding]:
    """Every secret and instruction-like span of ``text``, sorted by position. Where two
    patterns match overlapping text only the earlier row of the table counts."""
    taken: list[tuple[int, int]] = []
    found: list[Finding] = []
    line_starts: list[int] | None = None
    folded = text.lower()
    if len(folded) != len(text):  # a letter that lower-cases to two (İ): offsets would drift
        folded = text.translate(_ASCII_LOWER)
    read = folded if folded.isascii() else folded.translate(_LOOKALIKES)
    for pattern in PATTERNS:
        seen = read if pattern.category == INSTRUCTION else folded
        if pattern.hints is not None and not any(h in seen for h in pattern.hints):
            continue
        for match in pattern.regex.finditer(seen if pattern.folded else text):
            start, end = match.span(pattern.group)
            if start == end or _overlaps(taken, start, end):
                continue
            if pattern.accept is not None and not pattern.accept(text, match):
                continue
            if line_starts is None:
                line_starts = _line_starts(text)
            taken.append((start, end))
            found.append(_finding(pattern, text, start, end, line_starts))
    return sorted(found, key=lambda f: (f.start, f.rule))


def redact(text: str) -> tuple[str, list[Finding]]:
    """``(text with every secret replaced by [REDACTED:<kind>], findings)``. ``findings``
    is :func:`scan` of the original text (instruction-like findings included, though only
    secrets are replaced), so its offsets and lines refer to the original. Safe to call on
    any text before it leaves the machine, e.g. to a model."""
    findings = scan(text)
    parts: list[str] = []
    last = 0
    for finding in findings:
        if finding.category == SECRET:
            parts += [text[last:finding.start], f"[REDACTED:{finding.kind}]"]
            last = finding.end
    return "".join(parts) + text[last:], findings


def screen(text: str, path: str, *, redact_secrets: bool = False,
           before: str | None = None) -> tuple[str, list[Finding]]:
    """The write-time check of one text going into the wiki, named ``path`` in messages.

    Returns ``(text to write, instruction-like findings)``: the text itself, or with
    ``redact_secrets`` its secrets replaced. Without ``redact_secrets`` a secret raises
    :class:`SecretError` (one line: ``path:line:col: secret (kind) …``). With ``before``
    (the text this one replaces), secrets and instructions already in ``before`` are not
    held against the change (lint's W014/W015 report them) unless redacting, which
    replaces every secret. The findings refer to the text returned."""
    findings = scan(text)
    secrets = [f for f in findings if f.category == SECRET]
    if redact_secrets and secrets:
        text = redact(text)[0]
        findings = scan(text)
    elif secrets:
        new = [f for f in secrets if before is None or text[f.start:f.end] not in before]
        if new:
            raise SecretError(path, new)
    return text, [f for f in findings if f.category == INSTRUCTION
                  and (before is None or text[f.start:f.end] not in before)]


def pattern(rule: str) -> Pattern:
    """The table row of ``rule`` (``S002``); raises ``KeyError`` for an unknown id."""
    return BY_RULE[rule]


def _overlaps(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(s < end and start < e for s, e in taken)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    index = text.find("\n")
    while index != -1:
        starts.append(index + 1)
        index = text.find("\n", index + 1)
    return starts


def _finding(pattern: Pattern, text: str, start: int, end: int,
             line_starts: list[int]) -> Finding:
    line = bisect.bisect_right(line_starts, start)
    value = text[start:end]
    if pattern.category == SECRET:  # a key block's first line names it and holds no key
        excerpt = value.partition("\n")[0] if value.startswith("-----BEGIN") else mask(value)
    else:
        shown = value if len(value) <= EXCERPT_CHARS else value[:EXCERPT_CHARS - 1] + "…"
        excerpt = repr(" ".join(shown.split()))  # hidden characters shown as escapes
    return Finding(pattern.rule, pattern.kind, pattern.category, pattern.severity, line,
                   start - line_starts[line - 1] + 1, start, end, excerpt, pattern.description)


def screen_changes(changes: Mapping[str, bytes | None],
                   before: Callable[[str], bytes | None], *,
                   redact_secrets: bool = False) -> tuple[dict[str, bytes | None], list[Flag]]:
    """:func:`screen` over a proposal's ``changes`` (path -> new bytes, ``None`` deletes),
    each compared with ``before(path)``. Returns the changes to write (redacted ones
    re-encoded; untouched bytes kept as they are) and the :class:`Flag` of every new
    instruction-like finding. Raises :class:`SecretError` for a secret in a file (unless
    ``redact_secrets``) or in the path of a new file (always: a name cannot be redacted in
    place; callers derive names from redacted text)."""
    out: dict[str, bytes | None] = {}
    flags: list[Flag] = []
    for path, data in changes.items():
        if data is None:  # deleting is always fine, even a file whose name leaks
            out[path] = None
            continue
        old = before(path)
        named = [f for f in scan(path) if f.category == SECRET]
        if named and old is None:
            raise SecretError(f"the file name {redact(path)[0]}", named)
        out[path], found = screen_bytes(data, path, redact_secrets=redact_secrets, before=old)
        flags += [Flag(f.rule, f.kind, path, f.line, f.column) for f in found]
    return out, flags


def screen_bytes(data: bytes, path: str, *, redact_secrets: bool = False,
                 before: bytes | None = None) -> tuple[bytes, list[Finding]]:
    """:func:`screen` for file contents: UTF-8 (bytes that are not survive untouched);
    the input bytes are returned as they are unless a secret was redacted."""
    text = data.decode("utf-8", "surrogateescape")
    old = None if before is None else before.decode("utf-8", "replace")
    new, found = screen(text, path, redact_secrets=redact_secrets, before=old)
    return (data if new == text else new.encode("utf-8", "surrogateescape")), found
