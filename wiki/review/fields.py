"""Review-check flags read from what a file's fields MEAN rather than its bytes
(:mod:`wiki.review.check` calls them): control characters written as YAML escapes in an
entry's frontmatter (I007). The flags of a ``wiki.toml`` change are in
:mod:`wiki.review.settings`."""

from __future__ import annotations

from wiki.errors import EntryError
from wiki.review.check import CONTROL, ReviewFlag, content_flags
from wiki.store import frontmatter


def _field_strings(text: str | None) -> dict[str, str]:
    """Top-level frontmatter key -> its string values as YAML decodes them (joined)."""
    if not text or "\\" not in text:
        return {}
    try:
        data = frontmatter.parse(frontmatter.normalize_newlines(text), "").data
    except EntryError:
        return {}

    def strings(value) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in strings(k) + strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    return {str(key): "\n".join(strings(key) + strings(value)) for key, value in data.items()}


def escaped_control_flags(text: str, path: str, old_text: str | None) -> list[ReviewFlag]:
    """I007 for control characters written as YAML escapes (``"\\e[2J"``, ``"\\x9b"``,
    ``"\\u001b"``) in the frontmatter: the stored bytes are plain, the value the tool reads
    and shows holds the character. Placed on the key's line."""
    before = _field_strings(old_text)
    flags = []
    lines = None
    for key, value in _field_strings(text).items():
        for flag in content_flags(value, path, before.get(key), frozenset({CONTROL})):
            if lines is None:
                lines = frontmatter.parse(frontmatter.normalize_newlines(text), "").key_lines
            flags.append(ReviewFlag(flag.rule, flag.kind, path, lines.get(key, 0), 0,
                                    flag.category, f"field '{key}', as YAML decodes it: "
                                    f"{flag.detail}"))
    return flags
