"""The ``wiki serve`` configuration file (TOML): repositories by name, tokens stored as
hashes with the repositories and rights each one has, and the request limits.

A token is a random secret handed to a client once; the file keeps only its SHA-256
(``sha256:<hex>``), so a leaked config file does not let anyone in. Rights are ``read``
(search, ask, get, lint, status) or ``propose`` (read, and open proposals authored by the
token's ``author``). No right approves: approving is a person's act with ``wiki approve``.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wiki.errors import ConfigError, FileTooLargeError, NotRegularFileError
from wiki.files import read_regular
from wiki.store.gitrepo import Identity

READ, PROPOSE = "read", "propose"
RIGHTS = (READ, PROPOSE)
HASH_PREFIX = "sha256:"
TOKEN_PREFIX = "wk_"
ALL_REPOS = "*"
CONFIG_LIMIT_BYTES = 1 << 20
"""The most bytes of a ``wiki serve`` config file read (a real one is a few kilobytes)."""
REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
IDENTITY = re.compile(r"^\s*([^<>]+?)\s*<([^<>\s]+)>\s*$")


@dataclass(frozen=True)
class RepoSpec:
    """One served repository: its URL ``name``, the ``path`` of its git repository, the
    wiki ``branch`` (``None``: the repository's own setting) and the ``remote`` its wiki
    branch is fetched from (``None``: never fetched)."""

    name: str
    path: Path
    branch: str | None = None
    remote: str | None = None


@dataclass(frozen=True)
class TokenSpec:
    """One client's token: ``name`` (for logs), ``digest`` (hex SHA-256 of the token),
    the repositories it may use (``("*",)``: all), its ``rights`` and, for ``propose``,
    the ``author`` its proposals are written by."""

    name: str
    digest: str
    repos: tuple[str, ...]
    rights: str = READ
    author: Identity | None = None

    def may_use(self, repo: str) -> bool:
        """Whether the token reaches ``repo`` at all."""
        return ALL_REPOS in self.repos or repo in self.repos

    @property
    def may_propose(self) -> bool:
        """Whether the token may open proposals (in the repositories it reaches)."""
        return self.rights == PROPOSE


@dataclass(frozen=True)
class Limits:
    """Bounds on one request: body size in bytes, seconds to receive the body, seconds
    for the work (REST calls; an MCP call is bounded by the same body limits)."""

    max_body_bytes: int = 1_000_000
    body_timeout: float = 10.0
    request_timeout: float = 60.0


MAX_WORKERS = 64
"""Most ``[server] workers``: each loads its own model (~300 MB resident)."""


@dataclass(frozen=True)
class ServeConfig:
    """The whole file: where to listen, how often to fetch (seconds; 0: never), limits,
    worker processes, repositories by name and tokens."""

    host: str = "127.0.0.1"
    port: int = 8765
    fetch_interval: float = 300.0
    limits: Limits = field(default_factory=Limits)
    workers: int = 1
    """Server processes sharing the port (each with its own model and index handles; the
    kernel spreads connections over them); at most :data:`MAX_WORKERS`."""
    repos: dict[str, RepoSpec] = field(default_factory=dict)
    tokens: tuple[TokenSpec, ...] = ()

    def authenticate(self, token: str | None) -> TokenSpec | None:
        """The token's spec, or ``None`` when ``token`` is missing or matches none (every
        digest is compared in constant time)."""
        if not token:
            return None
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        found = None
        for spec in self.tokens:
            if hmac.compare_digest(spec.digest, digest):
                found = spec
        return found


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe), shown once to whoever hands it out."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """What the config file stores for ``token``: ``sha256:<hex>``."""
    return HASH_PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()


def parse_identity(text: str, where: str) -> Identity:
    """``"Name <email>"`` as an :class:`Identity`; raises :class:`ConfigError` naming
    ``where`` when it is not in that form."""
    match = IDENTITY.match(text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"{where}: author {text!r} is not 'Name <email>'")
    return Identity(match[1], match[2])


def load_config(path: Path) -> ServeConfig:
    """Read and check the file at ``path``. Raises :class:`ConfigError` naming the file and
    the field for a missing file, a file that is not a regular file or holds more than
    :data:`CONFIG_LIMIT_BYTES`, bad TOML, an unknown key, a bad value, a token that is
    not a hash, a token naming an unknown repository, a propose token without author, or
    two tokens with one name or one hash."""
    try:  # a regular file only: a FIFO or /dev/zero named as the config is refused
        data = tomllib.loads(read_regular(path, CONFIG_LIMIT_BYTES).decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file (see docs/serve.md)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (NotRegularFileError, FileTooLargeError) as exc:
        raise ConfigError(str(exc)) from None
    _known(data, {"server", "repos", "tokens"}, str(path))
    server = _table(data, "server", path)
    _known(server, {"host", "port", "fetch_interval", "max_body_bytes", "body_timeout",
                    "request_timeout", "workers"}, f"{path}: [server]")
    limits = Limits(
        max_body_bytes=_number(server, "max_body_bytes", Limits.max_body_bytes, path, int),
        body_timeout=_number(server, "body_timeout", Limits.body_timeout, path),
        request_timeout=_number(server, "request_timeout", Limits.request_timeout, path))
    repos = {name: _repo(name, spec, path) for name, spec in _table(data, "repos", path).items()}
    if not repos:
        raise ConfigError(f"{path}: no [repos.NAME] table: name at least one repository")
    tokens = data.get("tokens", [])
    if not isinstance(tokens, list):
        raise ConfigError(f"{path}: tokens must be an array of tables ([[tokens]])")
    host = server.get("host", "127.0.0.1")
    if not isinstance(host, str) or not host:
        raise ConfigError(f"{path}: [server] host {host!r} is not a host name or address")
    port = _number(server, "port", 8765, path, int)
    if not 0 <= port <= 65535:
        raise ConfigError(f"{path}: [server] port {port} is not a TCP port")
    workers = _number(server, "workers", 1, path, int, minimum=1)
    if workers > MAX_WORKERS:
        raise ConfigError(f"{path}: [server] workers = {workers} is more than {MAX_WORKERS}")
    return ServeConfig(host=host, port=port, workers=workers,
                       fetch_interval=_number(server, "fetch_interval", 300.0, path,
                                              minimum=0),
                       limits=limits, repos=repos,
                       tokens=_distinct(tuple(_token(i, t, repos, path)
                                              for i, t in enumerate(tokens)), path))


def _distinct(tokens: tuple[TokenSpec, ...], path: Path) -> tuple[TokenSpec, ...]:
    """``tokens``, each with a name and a hash of its own: a name is how a propose token
    finds its author's tools (two alike would write one's proposals as the other), and a
    hash is who the caller is (two alike would give one token both rights)."""
    names: set[str] = set()
    hashes: dict[str, str] = {}
    for token in tokens:
        if token.name in names:
            raise ConfigError(f"{path}: token {token.name!r} is named twice: give each "
                              "[[tokens]] its own name")
        if token.digest in hashes:
            raise ConfigError(f"{path}: token {token.name!r} has the same hash as token "
                              f"{hashes[token.digest]!r}: make each with `wiki serve token`")
        names.add(token.name)
        hashes[token.digest] = token.name
    return tokens


def _known(table: dict[str, Any], keys: set[str], where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(keys))})")


def _table(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {key} must be a table ([{key}])")
    return value


def _number(table: dict[str, Any], key: str, default, path: Path, kind=float,
            minimum: float = 0.001):
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            (kind is int and not isinstance(value, int)) or math.isnan(value) or \
            value < minimum:
        raise ConfigError(f"{path}: [server] {key} = {value!r} is not a "
                          f"{'whole ' if kind is int else ''}number >= {minimum:g}")
    return kind(value)


def _repo(name: str, spec: Any, path: Path) -> RepoSpec:
    where = f"{path}: [repos.{name}]"
    if not REPO_NAME.match(name):
        raise ConfigError(f"{where}: the name may hold letters, digits, '.', '_' and '-' only")
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be a table")
    _known(spec, {"path", "branch", "remote"}, where)
    for key in ("path", "branch", "remote"):
        if key in spec and (not isinstance(spec[key], str) or not spec[key].strip()
                            or "\x00" in spec[key]):
            raise ConfigError(f"{where}: {key} = {spec[key]!r} is not a non-empty string "
                              "(without NUL characters)")
    if "path" not in spec:
        raise ConfigError(f"{where}: path is missing (the git repository to serve)")
    where_to = Path(spec["path"]).expanduser()
    return RepoSpec(name, where_to if where_to.is_absolute() else path.parent / where_to,
                    spec.get("branch"), spec.get("remote"))


def _token(index: int, spec: Any, repos: dict[str, RepoSpec], path: Path) -> TokenSpec:
    where = f"{path}: tokens[{index}]"
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be a table ([[tokens]])")
    _known(spec, {"name", "hash", "repos", "rights", "author"}, where)
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: name is missing (who holds the token, for the logs)")
    where = f"{path}: token {name!r}"
    digest = spec.get("hash")
    if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise ConfigError(f"{where}: hash must be 'sha256:<64 hex digits>' (the file never "
                          "holds a token itself; make one with `wiki serve token`)")
    names = spec.get("repos")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where}: repos must be a list of repository names (or [\"*\"])")
    for repo in names:
        if repo != ALL_REPOS and repo not in repos:
            raise ConfigError(f"{where}: repos names {repo!r}, which is not a [repos.NAME]")
    rights = spec.get("rights", READ)
    if rights not in RIGHTS:
        raise ConfigError(f"{where}: rights {rights!r} is not one of {', '.join(RIGHTS)} "
                          "(nothing can approve over HTTP)")
    author = spec.get("author")
    if rights == PROPOSE and author is None:
        raise ConfigError(f"{where}: a propose token needs author = 'Name <email>' (who its "
                          "proposals are written by)")
    return TokenSpec(name, digest.removeprefix(HASH_PREFIX), tuple(names), rights,
                     parse_identity(author, where) if author is not None else None)
