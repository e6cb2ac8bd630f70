"""``file://`` sources: a local file, fingerprinted by the hash of its canonical text.

Read only when its real path (symbolic links resolved) lies under one of the reader's
source roots (:meth:`wiki.adapters.policy.SourcePolicy.allowed_file`); the file read is
that real path, so a link swapped after the check cannot point the read elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from wiki.adapters.registry import Check, Recorded, SourceEnv, register
from wiki.adapters.sources import read_text
from wiki.errors import SourceError, SourceNotAllowedError


def file_check(env: SourceEnv, uri: str, path: Path, extra: dict[str, str] | None = None
               ) -> Check:
    """Read the file at ``path`` under the ``[ingest]`` size limits and fingerprint it; a
    missing, non-regular or unreadable file is a :class:`Check` with an ``error``. The
    caller has checked ``path`` against the reader's policy."""
    if not path.is_file():
        return Check(uri, error="no longer exists" if not path.exists() else "is not a file")
    limits = env.config.ingest
    try:
        text = read_text(path, max_bytes=limits.max_bytes, max_lines=limits.max_lines)
    except SourceError as exc:
        return Check(uri, error=f"is unreadable ({exc.reason})")
    return Check(uri, env.fingerprint(text), validators=dict(extra or {}))


@register("file")
class FileSource:
    """Adapter for ``file:///absolute/path`` uris."""

    def __init__(self, env: SourceEnv):
        self.env = env

    @staticmethod
    def path(uri: str) -> Path:
        """The local path a ``file:`` uri names (not checked against any policy). Raises
        :class:`SourceError` for a path no file system has (``%00``: a NUL byte)."""
        name = url2pathname(unquote(urlparse(uri).path))
        if "\0" in name:
            raise SourceError(uri, "names no valid path (a NUL byte)")
        return Path(name)

    def allowed(self, uri: str) -> Path:
        """The real path of ``uri`` when the reader's policy allows reading it; raises
        :class:`SourceNotAllowedError` otherwise (also for a uri naming another host)."""
        host = urlparse(uri).netloc
        if host not in ("", "localhost"):
            raise SourceNotAllowedError(uri, f"a file on another host ({host})")
        return self.env.policy.allowed_file(uri, self.path(uri))

    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """The file's fingerprint now, or why it cannot (or may not) be read."""
        try:
            path = self.allowed(uri)
        except SourceNotAllowedError as exc:
            return Check.not_allowed(exc)
        except SourceError as exc:
            return Check(uri, error=f"is unreadable ({exc.reason})")
        return file_check(self.env, uri, path)

    def read(self, uri: str) -> str:
        """The file's text (raises :class:`SourceError`, :class:`SourceNotAllowedError`)."""
        limits = self.env.config.ingest
        return read_text(self.allowed(uri), max_bytes=limits.max_bytes,
                         max_lines=limits.max_lines)

    def close(self) -> None:
        """Nothing to release."""
