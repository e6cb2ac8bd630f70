"""The shapes of lint: a finding, a report, the context rules read, and the rule registry.

A rule is a function ``check(ctx: LintContext) -> Iterable[Finding]`` registered under a
stable code (``W001``) and a kebab-case name (``stale-source``) with :func:`rule`. Rules
never write: a rule that knows a safe fix records the new bytes of a file in
``ctx.fixes`` (path -> bytes, ``None`` deletes) and marks its finding ``fixable``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from wiki.config import WikiConfig
from wiki.errors import EntryError
from wiki.store.entry import Entry
from wiki.store.snapshot import Snapshot

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Finding:
    """One problem: rule ``code`` (``W001``), ``severity`` (``error`` | ``warning``), the
    branch ``path`` it is in (and the 1-based ``line`` when known), the ``entry_id`` when
    it is about an entry, a one-line ``message`` and whether ``--fix`` can repair it."""

    code: str
    severity: str
    path: str
    message: str
    entry_id: str | None = None
    fixable: bool = False
    line: int | None = None


@dataclass
class LintReport:
    """The result of :func:`wiki.lint.run_lint`: the wiki ``commit`` that was read, the
    ``rules`` that ran, ``findings`` sorted by (path, code, message), ``counts`` per code,
    ``errors`` / ``warnings`` / ``fixable`` totals, and with ``fix=True`` the ``proposal``
    (a :class:`wiki.review.proposals.Proposal`) and the ``fixed`` findings it addresses (no longer
    in ``findings``); ``proposal_created`` is false when an identical one was open."""

    commit: str
    rules: list[str]
    findings: list[Finding] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    warnings: int = 0
    fixable: int = 0
    fixed: list[Finding] = field(default_factory=list)
    proposal: Any = None
    proposal_created: bool = False


@dataclass
class LintContext:
    """What rules read: the ``wiki``, its ``snapshot`` and ``config``, the valid
    ``entries`` and the ``invalid`` ones' errors, ``fixes`` that rules add to, a
    ``cache`` for work several rules share and ``cleanup`` callables the runner calls at
    the end (closing connections a rule opened)."""

    wiki: Any
    snapshot: Snapshot
    config: WikiConfig
    entries: list[Entry]
    invalid: list[EntryError]
    fixes: dict[str, bytes | None] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)
    _by_id: dict[str, list[Entry]] | None = None

    @property
    def active(self) -> list[Entry]:
        """Entries whose status is ``active``."""
        return [e for e in self.entries if e.status == "active"]

    @property
    def by_id(self) -> dict[str, list[Entry]]:
        """Entry id -> the entries that carry it (more than one: a duplicate id)."""
        if self._by_id is None:
            self._by_id = {}
            for entry in self.entries:
                self._by_id.setdefault(entry.id, []).append(entry)
        return self._by_id


Check = Callable[[LintContext], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    """A registered rule: ``code``, kebab-case ``name``, default ``severity`` and ``check``."""

    code: str
    name: str
    severity: str
    check: Check


RULES: dict[str, Rule] = {}
"""The registry: code -> rule. Later rules plug in with :func:`rule`."""


def rule(code: str, name: str, severity: str) -> Callable[[Check], Check]:
    """Decorator registering ``check`` as rule ``code``; raises ``ValueError`` when the code
    is taken by another rule."""
    def register(check: Check) -> Check:
        old = RULES.get(code)
        if old is not None and old.check.__qualname__ != check.__qualname__:
            raise ValueError(f"lint rule code {code} is already registered ({old.name})")
        RULES[code] = Rule(code, name, severity, check)
        return check
    return register
