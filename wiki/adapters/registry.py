"""The source adapter registry: one adapter per URI scheme (docs/architecture.md,
"Sources and fingerprints").

An adapter is made once per run from a :class:`SourceEnv` and answers two questions about
a uri: :meth:`Adapter.fingerprint` (cheap: what is the source's fingerprint now, given
what the wiki recorded) and :meth:`Adapter.read` (its canonical-ready text). A failure to
reach or read a source is never raised by ``fingerprint``: it comes back as
:attr:`Check.error`, one line, so one bad source never stops a run. New schemes (Notion,
Drive, ...) plug in with :func:`register` without touching lint or ingest.

What may be read at all is the reader's decision (:mod:`wiki.adapters.policy`): every
adapter gets the run's :class:`SourcePolicy` in its :class:`SourceEnv` and answers a
refused source with a :class:`Check` whose ``refused`` is set and whose ``error`` reads
``is unverifiable (not allowed: ...)``, before reading or connecting to anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from wiki.adapters.policy import SourcePolicy, refused_text
from wiki.adapters.sources import fingerprint as text_fingerprint
from wiki.config import WikiConfig
from wiki.errors import SourceError, SourceNotAllowedError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
VALIDATORS = ("blob", "etag", "last_modified")
"""Source-record keys that let an adapter skip reading an unchanged source."""
CONCURRENCY = 8
"""Network sources checked at once by :meth:`Sources.check_all` (a polite bound, below
httpx's default pool of 10 connections)."""


@dataclass(frozen=True)
class Recorded:
    """What an entry recorded about one source: its ``fingerprint`` (``sha256:<hex>`` of
    the canonical text) and the validators seen with it: ``blob`` (git object id),
    ``etag`` and ``last_modified`` (HTTP headers, verbatim). Empty strings: not recorded."""

    fingerprint: str = ""
    blob: str = ""
    etag: str = ""
    last_modified: str = ""

    @classmethod
    def from_meta(cls, item: Any) -> Recorded:
        """From one ``sources:`` mapping of an entry's frontmatter (other keys ignored)."""
        if not isinstance(item, dict):
            return cls()
        return cls(*(str(item.get(key) or "") for key in ("fingerprint", *VALIDATORS)))


@dataclass(frozen=True)
class Check:
    """A source as it is now: its ``fingerprint``, or ``error`` (one line saying why it is
    missing or unreadable: ``no longer exists``, ``answers HTTP 404``, ``timed out after
    10 s``); ``validators`` (``blob`` / ``etag`` / ``last_modified`` -> value) to record
    with that fingerprint; ``unchanged`` when a validator proved it equal to the record
    without reading it (a git object id, an HTTP 304); ``refused`` when the reader's
    source policy did not allow reading it (``error``: ``is unverifiable (not allowed:
    <reason>)``; nothing was read)."""

    uri: str
    fingerprint: str | None = None
    error: str | None = None
    validators: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    unchanged: bool = False
    refused: bool = False

    @classmethod
    def not_allowed(cls, error: SourceNotAllowedError) -> Check:
        """The check of a source the policy refused (``error.path`` is its uri)."""
        return cls(error.path, error=refused_text(error.reason), refused=True)


@dataclass(frozen=True)
class SourceEnv:
    """What adapters may use: the git ``repo`` holding the wiki (a ``git.Repo``), its work
    tree ``root`` (``None`` when bare), the wiki's ``config`` and the reader's source
    ``policy`` (default: nothing but ``git:`` paths inside the repository and public
    http(s) addresses; :func:`wiki.adapters.sources_for` loads the reader's own)."""

    repo: Any
    root: Path | None
    config: WikiConfig
    policy: SourcePolicy = field(default_factory=SourcePolicy)

    def fingerprint(self, text: str) -> str:
        """The fingerprint of ``text`` under the wiki's ``[sources]`` settings."""
        settings = self.config.sources
        return text_fingerprint(text, ignore_frontmatter=settings.ignore_frontmatter,
                                ignore_whitespace=settings.ignore_whitespace)


class Adapter(Protocol):
    """The shape of an adapter (see the module docstring)."""

    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """The source's state now; never raises for a source that cannot be reached."""

    def read(self, uri: str) -> str:
        """The source's text; raises :class:`wiki.errors.SourceError` when unreadable."""

    def close(self) -> None:
        """Release connections or processes."""


Factory = Callable[[SourceEnv], Adapter]
ADAPTERS: dict[str, Factory] = {}
"""The registry: lower-case scheme (``git``, ``file``, ``https``) -> adapter factory."""


def register(*schemes: str) -> Callable[[Factory], Factory]:
    """Decorator registering an adapter factory (usually the class) for ``schemes``;
    raises ``ValueError`` when a scheme is taken by another factory."""
    def add(factory: Factory) -> Factory:
        for name in schemes:
            old = ADAPTERS.get(name.lower())
            if old is not None and old.__qualname__ != factory.__qualname__:
                raise ValueError(f"source scheme {name!r} is already registered ({old})")
            ADAPTERS[name.lower()] = factory
        return factory
    return add


def scheme_of(uri: str) -> str:
    """The lower-case scheme of ``uri`` (``""`` when it has none)."""
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else ""


class Sources:
    """The adapters of one run, each made on first use, with every check memoised per
    (uri, record). Use as a context manager (or call :meth:`close`).

    ``reads`` counts the calls to :meth:`read` (whole-source reads the caller asked for;
    a changed source that an adapter hashed inside :meth:`check` is not counted)."""

    def __init__(self, env: SourceEnv):
        self.env = env
        self._adapters: dict[str, Adapter | None] = {}
        self._checks: dict[tuple[str, Recorded], Check | None] = {}
        self.reads = 0

    def adapter(self, uri: str) -> Adapter | None:
        """The adapter for ``uri``'s scheme, or ``None`` when no adapter knows it."""
        name = scheme_of(uri)
        if name not in self._adapters:
            factory = ADAPTERS.get(name)
            self._adapters[name] = factory(self.env) if factory else None
        return self._adapters[name]

    def check(self, uri: str, recorded: Recorded = Recorded()) -> Check | None:
        """The source's state now (``None``: a scheme no adapter knows, not checked)."""
        key = (uri, recorded)
        if key not in self._checks:
            adapter = self.adapter(uri)
            self._checks[key] = adapter.fingerprint(uri, recorded) if adapter else None
        return self._checks[key]

    def check_all(self, items: Iterable[tuple[str, Recorded]]) -> None:
        """Check many sources ahead of :meth:`check` (which then answers from memory):
        those whose adapter is ``concurrent`` (network sources) on up to
        :data:`CONCURRENCY` threads at once, so a wiki citing many web pages waits about
        the slowest one per batch rather than their sum; the others one by one."""
        pending = list(dict.fromkeys(key for key in items if key not in self._checks))
        remote = [key for key in pending
                  if getattr(self.adapter(key[0]), "concurrent", False)]
        if len(remote) > 1:
            with ThreadPoolExecutor(max_workers=min(CONCURRENCY, len(remote))) as pool:
                found = pool.map(lambda key: self.adapter(key[0]).fingerprint(*key), remote)
                self._checks.update(zip(remote, found, strict=True))
        for uri, recorded in pending:
            self.check(uri, recorded)

    def read(self, uri: str) -> str:
        """The source's text. Raises :class:`wiki.errors.SourceError` when it cannot be
        read or no adapter knows its scheme."""
        adapter = self.adapter(uri)
        if adapter is None:
            raise SourceError(uri, f"no source adapter for the scheme {scheme_of(uri)!r} "
                                   f"(known: {', '.join(sorted(ADAPTERS))})")
        self.reads += 1
        return adapter.read(uri)

    def close(self) -> None:
        """Close every adapter made so far."""
        for adapter in self._adapters.values():
            if adapter is not None:
                adapter.close()
        self._adapters.clear()

    def __enter__(self) -> Sources:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
