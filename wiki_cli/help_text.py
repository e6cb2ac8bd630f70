"""The one-line summaries ``wiki --help`` lists: each command's whole first sentence.

Click shortens a command's help to 45 characters and ends it with "..." wherever the cut
falls; a summary of its own (``short_help``) is shown whole and wrapped to the terminal.
"""

from __future__ import annotations

import inspect
import re

# the end of a sentence: . ! or ? before a space or the end, but not the dot of "e.g." or
# "i.e." (the help texts use both mid-sentence)
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?](?=\s|$)")


def first_sentence(text: str) -> str:
    """The first sentence of ``text``'s first paragraph, whitespace folded to single spaces
    (the whole paragraph if it has no sentence end; ``""`` for empty text)."""
    paragraph = re.split(r"\n\s*\n", inspect.cleandoc(text).strip(), maxsplit=1)[0]
    paragraph = " ".join(paragraph.split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[:end.end()] if end else paragraph


def set_summaries(app) -> None:
    """Give every command and group of the typer ``app`` (and of its sub-apps) without a
    summary of its own the first sentence of its help as its ``short_help``."""
    for info in app.registered_commands:
        text = info.help or inspect.getdoc(info.callback) or ""
        if not info.short_help and text:
            info.short_help = first_sentence(text)
    for group in app.registered_groups:
        text = group.help or group.typer_instance.info.help or ""
        if not group.short_help and isinstance(text, str) and text:
            group.short_help = first_sentence(text)
        set_summaries(group.typer_instance)
