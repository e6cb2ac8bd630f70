"""Arguments an MCP client sends that no tool can take: strings that are not Unicode text.

JSON allows a lone surrogate escape (``"\\udcff"``); Python decodes it into a string that
cannot be encoded as UTF-8, so SQLite, git and the JSON answer would all fail on it deep
inside a tool. The server checks the arguments first and answers one tool error.
"""

from __future__ import annotations

from wiki.errors import ConfigError


def not_unicode(arguments: dict) -> ConfigError | None:
    """A :class:`ConfigError` naming the first argument holding a lone surrogate (JSON
    allows ``"\\udcff"``; such a string cannot be stored, searched or returned), else
    ``None``."""

    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from strings(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from strings(item)

    for name, value in arguments.items():
        for text in strings(value):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                return ConfigError(f"argument {name!r} is not valid Unicode text (a lone "
                                   f"surrogate \\u{ord(text[exc.start]):04x}); send UTF-8 text")
    return None
