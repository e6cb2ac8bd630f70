"""Sources: reading a file safely, its canonical text, its fingerprint and its uri.

Canonical text (docs/architecture.md, "Sources and fingerprints"; docs/robustness.md, F5):
BOM dropped, CRLF/CR turned into LF, trailing whitespace of every line dropped, leading and
trailing blank lines dropped. With ``ignore_frontmatter`` the leading YAML block is left
out; with ``ignore_whitespace`` runs of spaces and of blank lines collapse to one. The
fingerprint is ``sha256:`` + the hex digest of the canonical text in UTF-8.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from wiki.errors import FileTooLargeError, NotRegularFileError, SourceError
from wiki.files import read_regular
from wiki.store.frontmatter import normalize_newlines

_FRONTMATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_SPACES = re.compile(r"[ \t]+")
_BLANKS = re.compile(r"\n{3,}")


def canonical_text(text: str, *, ignore_frontmatter: bool = False,
                   ignore_whitespace: bool = False) -> str:
    """The canonical form of ``text`` (see the module docstring)."""
    text = normalize_newlines(text)
    if ignore_frontmatter:
        text = _FRONTMATTER.sub("", text, count=1)
    lines = [line.rstrip() for line in text.split("\n")]
    if ignore_whitespace:
        lines = [_SPACES.sub(" ", line) for line in lines]
    text = "\n".join(lines).strip("\n")
    if ignore_whitespace:
        text = _BLANKS.sub("\n\n", text)
    return text


def fingerprint(text: str, *, ignore_frontmatter: bool = False,
                ignore_whitespace: bool = False) -> str:
    """``sha256:<hex>`` of the canonical text."""
    canonical = canonical_text(text, ignore_frontmatter=ignore_frontmatter,
                               ignore_whitespace=ignore_whitespace)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def read_text(path: Path, *, max_bytes: int, max_lines: int) -> str:
    """The UTF-8 text of the file at ``path``, newline-normalised.

    Raises :class:`SourceError` (without reading the content) when ``path`` is not a
    regular file or is larger than ``max_bytes``, and after reading when it has more than
    ``max_lines`` lines, holds a NUL byte (binary) or is not valid UTF-8.
    """
    shown = str(path)
    try:  # regular files only, opened without blocking (wiki.files)
        data = read_regular(path, max_bytes)
    except NotRegularFileError as exc:  # a FIFO blocks the read, /dev/zero never ends
        through = f"a symbolic link to {exc.kind}" if exc.target else exc.kind
        raise SourceError(shown, f"not a regular file ({through})") from None
    except FileTooLargeError as exc:
        raise too_large(shown, exc.size, max_bytes) from None
    except OSError as exc:
        raise SourceError(shown, f"cannot read: {exc.strerror}") from None
    return decode_text(data, shown, max_lines=max_lines)


def decode_text(data: bytes, shown: str, *, max_lines: int) -> str:
    """``data`` as newline-normalised UTF-8 text. Raises :class:`SourceError` naming
    ``shown`` when it holds a NUL byte (binary), is not valid UTF-8 or has more than
    ``max_lines`` lines."""
    if b"\x00" in data:
        raise SourceError(shown, "binary file (contains NUL bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(shown, f"not UTF-8 text (invalid byte at offset {exc.start})") from None
    text = normalize_newlines(text)
    lines = text.count("\n") + 1
    if lines > max_lines:
        raise SourceError(shown, f"too large: {lines:,} lines (limit {max_lines:,})")
    return text


def too_large(shown: str, size: int, max_bytes: int) -> SourceError:
    """The error for a source of ``size`` bytes over the ``max_bytes`` limit."""
    return SourceError(shown, f"too large: {size:,} bytes (limit {max_bytes:,}; "
                              "raise [ingest] max_bytes in wiki.toml)")


def source_uri(path: Path, repo_root: Path | None) -> str:
    """``git:<path relative to the repository root>`` for a file inside the repository
    that holds the wiki, else ``file://<absolute path>``."""
    resolved = path.resolve()
    if repo_root is not None:
        try:
            return "git:" + resolved.relative_to(repo_root.resolve()).as_posix()
        except ValueError:
            pass
    return resolved.as_uri()
