"""``file://`` sources: a local file, fingerprinted by the hash of its canonical text."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

from wiki.adapters.registry import Check, Recorded, SourceEnv, register
from wiki.errors import SourceError
from wiki.sources import read_text


def file_check(env: SourceEnv, uri: str, path: Path, extra: dict[str, str] | None = None
               ) -> Check:
    """Read the file at ``path`` under the ``[ingest]`` size limits and fingerprint it; a
    missing, non-regular or unreadable file is a :class:`Check` with an ``error``."""
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
        """The local path a ``file:`` uri names."""
        return Path(url2pathname(unquote(urlparse(uri).path)))

    def fingerprint(self, uri: str, recorded: Recorded) -> Check:
        """The file's fingerprint now, or why it cannot be read."""
        return file_check(self.env, uri, self.path(uri))

    def read(self, uri: str) -> str:
        """The file's text (raises :class:`SourceError`)."""
        limits = self.env.config.ingest
        return read_text(self.path(uri), max_bytes=limits.max_bytes,
                         max_lines=limits.max_lines)

    def close(self) -> None:
        """Nothing to release."""
