"""The reader's source policy: which sources this machine may read (docs/security.md,
"Reading sources").

Entries and their ``sources:`` are written by other people and agents; checking a source
reads it on the *reader's* machine. So what may be read is the reader's decision, taken
from the environment or git config (never from the wiki branch), resolved once per run:

* ``git:`` paths: only inside this repository's work tree (or tree of the ref): no
  ``..``, no ``.git`` folder, nothing resolving through a symbolic link outside the work
  tree, no file git ignores (``.env``); enforced by :mod:`wiki.adapters.git_source` with
  :func:`git_path_refusal`.
* ``file:`` paths: only when the real path (symbolic links resolved) lies under one of
  the reader's **source roots**: ``$WIKI_SOURCE_ROOTS`` (``os.pathsep``-separated) and
  ``git config wiki.sourceRoots`` (multi-valued; ``wiki ingest`` of files outside the
  repository adds the paths the reader named, see :func:`remember_roots`). No roots by
  default.
* ``http(s):`` URLs: the host is resolved and every address it resolves to must be a
  public one; loopback, private, link-local, shared, reserved, multicast and unspecified
  addresses are refused unless the reader allows them with
  ``$WIKI_ALLOW_PRIVATE_NETWORK`` / ``git config wiki.allowPrivateNetwork``: ``true``
  (all of them) or a list of networks (``10.0.0.0/8``, ``::1``) and endpoints
  (``127.0.0.1:8080``, ``[::1]:8080``). The connection goes to the address that was
  checked, and every redirect hop is checked the same way
  (:mod:`wiki.adapters.http_source`).

A refusal is raised as :class:`wiki.errors.SourceNotAllowedError` before anything is read
or any connection is made; the adapters turn it into a :class:`~wiki.adapters.Check`
whose error reads ``is unverifiable (not allowed: <reason>)``.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wiki.errors import ConfigError, SourceNotAllowedError

ROOTS_ENV = "WIKI_SOURCE_ROOTS"
PRIVATE_ENV = "WIKI_ALLOW_PRIVATE_NETWORK"
ROOTS_KEY = "wiki.sourceRoots"
PRIVATE_KEY = "wiki.allowPrivateNetwork"
_TRUE = ("1", "true", "yes", "on", "all")
_FALSE = ("", "0", "false", "no", "off", "none")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def refused_text(reason: str) -> str:
    """The one-line :attr:`Check.error` of a refused source."""
    return f"is unverifiable (not allowed: {reason})"


@dataclass(frozen=True)
class SourcePolicy:
    """What this reader allows: ``roots`` (real paths under which ``file:`` sources may be
    read), ``private`` (every non-public address allowed), ``networks`` and ``endpoints``
    (``(address, port)``) allowed although not public. The default allows only ``git:``
    paths inside the repository and public http(s) addresses."""

    roots: tuple[Path, ...] = ()
    private: bool = False
    networks: tuple[Network, ...] = ()
    endpoints: tuple[tuple[Address, int], ...] = ()

    # -- loading ------------------------------------------------------------------------
    @classmethod
    def load(cls, repo: Any = None) -> SourcePolicy:
        """The policy of the reader running this process: the environment, plus git
        config (all levels the repository sees) when ``repo`` (a ``git.Repo``) is given.
        Both add up. Raises :class:`ConfigError` naming the setting for a relative root
        or a malformed network."""
        roots = [(ROOTS_ENV, item) for item in
                 os.environ.get(ROOTS_ENV, "").split(os.pathsep) if item.strip()]
        private = [(PRIVATE_ENV, os.environ.get(PRIVATE_ENV, ""))]
        for key, value in _git_settings(repo):
            if key == ROOTS_KEY.lower():
                roots.append((f"git config {ROOTS_KEY}", value))
            else:
                private.append((f"git config {PRIVATE_KEY}", value))
        return cls.parse(roots, private)

    @classmethod
    def parse(cls, roots: Iterable[tuple[str, str]], private: Iterable[tuple[str, str]]
              ) -> SourcePolicy:
        """A policy from ``(where, value)`` settings (``where`` names the setting in
        errors). Raises :class:`ConfigError`."""
        paths: list[Path] = []
        for where, value in roots:
            path = Path(value.strip()).expanduser()
            if not path.is_absolute():
                raise ConfigError(f"{where}: source root {value!r} is not an absolute path")
            paths.append(Path(os.path.realpath(path)))
        allow_all, networks, endpoints = False, [], []
        for where, value in private:
            lowered = value.strip().lower()
            if lowered in _TRUE:
                allow_all = True
                continue
            if lowered in _FALSE:
                continue
            for item in value.replace(",", " ").split():
                endpoint = _endpoint(item)
                if endpoint is not None:
                    endpoints.append(endpoint)
                    continue
                try:
                    networks.append(ipaddress.ip_network(item.strip("[]"), strict=False))
                except ValueError:
                    raise ConfigError(
                        f"{where}: {item!r} is neither true/false, a network (10.0.0.0/8) "
                        "nor an address:port (127.0.0.1:8080)") from None
        return cls(tuple(dict.fromkeys(paths)), allow_all, tuple(networks), tuple(endpoints))

    # -- file: --------------------------------------------------------------------------
    def allowed_file(self, uri: str, path: Path) -> Path:
        """The real path (symbolic links resolved) of ``path`` when it lies under a source
        root; raises :class:`SourceNotAllowedError` otherwise."""
        real = Path(os.path.realpath(path))
        if any(real == root or real.is_relative_to(root) for root in self.roots):
            return real
        if not self.roots:
            reason = (f"file sources are read only under your source roots and none is set; "
                      f"set {ROOTS_ENV} or git config {ROOTS_KEY}")
        elif real != Path(os.path.abspath(path)):
            reason = (f"{path} resolves to {real}, outside your source roots "
                      f"({ROOTS_ENV}, git config {ROOTS_KEY})")
        else:
            reason = f"{path} is outside your source roots ({ROOTS_ENV}, git config {ROOTS_KEY})"
        raise SourceNotAllowedError(uri, reason)

    # -- http(s): -------------------------------------------------------------------------
    def address_refusal(self, address: Address, port: int) -> str | None:
        """Why connecting to ``address``:``port`` is not allowed (``None``: allowed)."""
        if isinstance(address, ipaddress.IPv6Address):
            embedded = _embedded_ipv4(address)
            if embedded is not None and _non_public(embedded):
                address = embedded  # judged (and named) by the IPv4 address it reaches
        kind = _non_public(address)
        if kind is None or self.private:
            return None
        if any(address in network for network in self.networks):
            return None
        if (address, port) in self.endpoints:
            return None
        return (f"{address} is a {kind} address; allow it with {PRIVATE_ENV} or git config "
                f"{PRIVATE_KEY}")

    def resolve(self, uri: str, host: str, port: int) -> str:
        """The address to connect to for ``host``:``port``: every address the name
        resolves to must be allowed (one refused address refuses the host, so a name
        cannot hide an internal address behind a public one). Raises
        :class:`SourceNotAllowedError`, or :class:`wiki.errors.SourceError` when the name
        does not resolve."""
        from wiki.errors import SourceError

        try:
            infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise SourceError(uri, f"unreachable (cannot resolve {host}: {exc})") from None
        addresses = list(dict.fromkeys(
            ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos))
        if not addresses:
            raise SourceError(uri, f"unreachable (cannot resolve {host})")
        for address in addresses:
            reason = self.address_refusal(address, port)
            if reason is not None:
                shown = reason if str(address) == host.strip("[]") else f"{host}: {reason}"
                raise SourceNotAllowedError(uri, shown)
        return str(addresses[0])


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries and is delivered to: IPv4-mapped
    (``::ffff:10.0.0.1``), 6to4 (``2002:0a00:0001::``: a host with a 6to4 route sends it
    to ``10.0.0.1``), Teredo (the client address), IPv4-compatible (``::10.0.0.1``) and
    NAT64 (``64:ff9b::10.0.0.1``). ``None`` for other addresses."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    packed = address.packed
    if packed[:12] == bytes(12) and packed[12:] not in (bytes(4), bytes(3) + b"\1"):
        return ipaddress.IPv4Address(packed[12:])  # ::a.b.c.d (not :: or ::1)
    if address in _NAT64:
        return ipaddress.IPv4Address(packed[12:])
    return None


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def _non_public(address: Address) -> str | None:
    """The kind of a non-public ``address`` (``loopback``, ``private``...), else ``None``."""
    for kind in ("loopback", "link_local", "multicast", "unspecified", "reserved",
                 "private", "site_local"):
        if getattr(address, f"is_{kind}", False):
            return kind.replace("_", "-")
    if not address.is_global:
        return "non-public"
    return None


def _endpoint(item: str) -> tuple[Address, int] | None:
    """``(address, port)`` of ``1.2.3.4:80`` or ``[::1]:80``; ``None`` for other forms."""
    host, sep, port = item.rpartition(":")
    if not sep or not port.isdigit() or not host or (":" in host and not host.startswith("[")):
        return None
    try:
        return ipaddress.ip_address(host.strip("[]")), int(port)
    except ValueError:
        return None


def _git_settings(repo: Any) -> tuple[tuple[str, str], ...]:
    """``(lower-case key, value)`` of the policy's git config keys, all levels: one
    ``git config`` run, kept while the configuration files and ``GIT_CONFIG*`` variables
    are unchanged (:meth:`wiki.store.gitrepo.KeptGitConfigs.kept`; a run per served
    ``ask`` was a fork of the whole server process)."""
    if repo is None:
        return ()
    from wiki.store.gitrepo import GIT_CONFIGS

    return GIT_CONFIGS.kept(repo, "source policy", lambda: _read_git_settings(repo))


def _read_git_settings(repo: Any) -> tuple[tuple[str, str], ...]:
    import git

    try:
        out = repo.git.config("--type=path", "--get-regexp",
                              r"^wiki\.(sourceroots|allowprivatenetwork)$",
                              with_exceptions=False)
    except git.GitCommandError:  # an unreadable config is git's to report
        return ()
    return tuple((key.lower(), value) for key, _, value in
                 (line.partition(" ") for line in out.splitlines()))


def git_path_refusal(relative: str) -> str | None:
    """Why the repository path ``relative`` (already normalised, not leaving the
    repository) may not be read as a ``git:`` source: a ``.git`` folder component."""
    parts = posixpath.normpath(relative).split("/")
    if any(part.lower() == ".git" for part in parts):
        return "a path inside the .git folder"
    return None


def remember_roots(repo: Any, root: Path | None, paths: Iterable[Path | str]) -> list[Path]:
    """Add those of ``paths`` (files or folders the reader named to ``wiki ingest``) that
    lie outside the work tree ``root`` and under no source root yet to the repository's
    git config ``wiki.sourceRoots`` (``--local``: this clone, never the branch), so the
    reader who ingested them can revalidate them later. Returns the roots added; a config
    that cannot be written is left as it is (the sources then show as not allowed)."""
    import git

    policy = SourcePolicy.load(repo)
    added: list[Path] = []
    base = Path(os.path.realpath(root)) if root is not None else None
    for item in paths:
        real = Path(os.path.realpath(Path(item).expanduser()))
        if not real.exists() or (base is not None and real.is_relative_to(base)):
            continue
        if any(real == r or real.is_relative_to(r) for r in (*policy.roots, *added)):
            continue
        try:
            repo.git.config("--local", "--add", ROOTS_KEY, str(real))
        except git.GitCommandError:
            continue
        added.append(real)
    return added
