"""Review-check flags read from what a file's fields MEAN rather than its bytes
(:mod:`wiki.review.check` calls them): whatever YAML decoding makes of an entry's
frontmatter strings. An escape (``"ghp\\x5f..."``, ``"\\x49gnore all previous
instructions"``, ``"\\u202E"``, ``"\\e]52;..."``) or a double-quoted line continuation
stores plain, harmless-looking bytes, while every command (``show``, ``search``, the
generated ``index.md`` listing, the answers a model reads) uses the decoded value: a token,
an instruction, a bidi override, a control character. The flags of a ``wiki.toml`` change
are in :mod:`wiki.review.settings`."""

from __future__ import annotations

from wiki.errors import EntryError
from wiki.review.check import ReviewFlag, content_flags
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


def decoded_field_flags(text: str, path: str, old_text: str | None) -> list[ReviewFlag]:
    """Every content flag (secret, instruction, bidi, control character) that only the
    decoded frontmatter values of ``text`` hold: not the raw text (its own scan reports
    that) nor the same key's decoded value in ``old_text``. Placed on the key's line."""
    before = _field_strings(old_text)
    flags = []
    lines = None
    for key, value in _field_strings(text).items():
        for flag in content_flags(value, path, f"{before.get(key, '')}\0{text}"):
            if lines is None:
                lines = frontmatter.parse(frontmatter.normalize_newlines(text), "").key_lines
            flags.append(ReviewFlag(flag.rule, flag.kind, path, lines.get(key, 0), 0,
                                    flag.category, f"field '{key}', as YAML decodes it: "
                                    f"{flag.detail}"))
    return flags
