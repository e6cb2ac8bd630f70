"""Rendering results for people (rich) and machines (JSON). stdout is data; stderr is talk.

Every way stored text reaches stdout passes through :mod:`wiki_cli.inert` here: strings
printed or put in table cells (:meth:`InertConsole.render_str`), :func:`plain` text,
:func:`write_raw` and :func:`print_json`; and, as a backstop, every segment a console
writes has its control characters made inert (:class:`Inert`). Commands use these and never
write to ``sys.stdout`` or build ``rich.text.Text`` themselves (tests/test_inert_output.py
checks the sources).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from typing import Any

from rich.console import Console, ConsoleOptions, RenderHook, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from wiki_cli.inert import inert, json_text, masked_values, shown


class Inert:
    """A renderable whose segments are those of ``inner`` with control characters made
    inert (rich's own control segments, e.g. cursor moves, pass as they are)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            yield segment if segment.control else Segment(inert(segment.text), segment.style)


class InertHook(RenderHook):
    """Wraps everything a console prints in :class:`Inert`."""

    def process_renderables(self, renderables):
        return [Inert(r) for r in renderables]


class InertConsole(Console):
    """A console that masks secrets and makes control characters inert in every string it
    is given (``print("...")``, table cells, titles), and in every segment it writes. No
    rich markup or emoji codes: stored text is shown as written."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{**kwargs, "markup": False, "emoji": False})
        self.push_render_hook(InertHook())

    def render_str(self, text: str, **kwargs) -> Text:
        """:meth:`Console.render_str` of :func:`~wiki_cli.inert.shown` ``text``."""
        return super().render_str(shown(text), **kwargs)


# Piped output is data: never cut or wrap it to a pretend 80-column terminal.
out = InertConsole(highlight=False, width=None if sys.stdout.isatty() else 100_000)
err = InertConsole(stderr=True, highlight=False)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, dates and tuples as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return value


def json_document(value: Any) -> str:
    """``value`` as indented JSON with its secrets masked and C1/bidi characters escaped
    (:mod:`wiki_cli.inert`); decoded, every other string is exactly as stored."""
    data = masked_values(to_jsonable(value))
    return json_text(json.dumps(data, ensure_ascii=False, indent=2))


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON on stdout (see :func:`json_document`)."""
    sys.stdout.write(json_document(value) + "\n")
    sys.stdout.flush()


def write_raw(text: str) -> None:
    """Write ``text`` (e.g. a file as stored) to stdout unwrapped, with its secrets masked
    and control characters inert."""
    out.file.write(shown(text))
    out.file.flush()


def table(*columns: str, title: str | None = None) -> Table:
    """A borderless table with the given column headers."""
    grid = Table(*columns, title=title, box=None, header_style="bold", pad_edge=False)
    return grid


def plain(text: str, style: str | Style = "") -> Text:
    """Stored text as shown: no rich markup interpretation of ``[...]``, secrets masked,
    control characters inert."""
    return Text(shown(text), style=style)
