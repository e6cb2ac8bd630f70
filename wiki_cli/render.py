"""Rendering results for people (rich) and machines (JSON). stdout is data; stderr is talk.

Every way stored text reaches stdout passes through :mod:`wiki_cli.inert` here: strings
printed or put in table cells (:meth:`InertConsole.render_str`), :func:`plain` text,
:func:`write_raw` and :func:`print_json`; and, as a backstop, every segment a console
writes has its control characters made inert (:class:`Inert`). Commands use these and never
write to ``sys.stdout`` or build ``rich.text.Text`` themselves (tests/test_inert_output.py
checks the sources).
"""

from __future__ import annotations

import copy
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

    def print(self, *objects, **kwargs) -> None:
        """:meth:`Console.print`; a :class:`Grid` is not cropped to the terminal's width
        (it is as wide as its identifiers need). Piped (not a terminal), no line ends in
        the spaces that pad it to the widest row of a table (a long fix made every line of
        ``wiki doctor | cat`` 266 columns wide)."""
        if any(isinstance(o, Grid) for o in objects):
            kwargs.setdefault("crop", False)
        if self.is_terminal or self._buffer_index:  # a terminal, or already capturing
            super().print(*objects, **kwargs)
            return
        with self.capture() as captured:
            super().print(*objects, **kwargs)
        self.file.write("\n".join(line.rstrip(" ") for line in captured.get().split("\n")))
        self.file.flush()

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


OTHER_MIN_WIDTH = 10
"""Columns a narrow terminal keeps besides the identifiers: at least this wide each."""


class Grid(Table):
    """A borderless table whose identifier columns (names a person copies: proposal names,
    entry paths, ids) are never cut or wrapped: each is as wide as its longest cell. When
    the terminal is too narrow for them and the other columns (at least
    :data:`OTHER_MIN_WIDTH` each), the ``optional`` columns are left out, in their order;
    what remains wraps (or is cut with ``…``) in the non-identifier columns only. An
    identifier wider than the terminal makes its lines longer (the terminal wraps them)."""

    def __init__(self, *columns: str, identifiers: tuple[str, ...] = (),
                 optional: tuple[str, ...] = (), title: str | None = None) -> None:
        super().__init__(*columns, title=title, box=None, header_style="bold", pad_edge=False)
        self.identifiers = identifiers
        self.optional = optional
        for column in self.columns:
            if column.header in identifiers:
                column.no_wrap, column.overflow = True, "fold"
                column.min_width = len(str(column.header))

    def add_row(self, *renderables, **kwargs) -> None:
        """:meth:`Table.add_row`, widening each identifier column to its longest cell."""
        super().add_row(*renderables, **kwargs)
        for column, cell in zip(self.columns, renderables, strict=False):
            if column.header in self.identifiers and cell is not None:
                text = cell if isinstance(cell, Text) else Text(str(cell))
                column.min_width = max(column.min_width or 0, text.cell_len)

    def needs(self, columns) -> int:
        """Cells a row of ``columns`` needs at the least: the identifiers whole, the others
        :data:`OTHER_MIN_WIDTH`, two between columns."""
        widths = [(c.min_width or 0) if c.header in self.identifiers else OTHER_MIN_WIDTH
                  for c in columns]
        return sum(widths) + 2 * (len(widths) - 1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        kept = list(self.columns)
        for name in self.optional:
            if self.needs(kept) <= options.max_width:
                break
            kept = [c for c in kept if c.header != name]
        # identifiers wider than the terminal: longer lines (the terminal wraps them), never
        # a cut name; :meth:`InertConsole.print` does not crop a Grid
        options = options.update_width(max(options.max_width, self.needs(kept)))
        narrowed = copy.copy(self)
        narrowed.columns = kept
        yield from Table.__rich_console__(narrowed, console, options)


def table(*columns: str, title: str | None = None, identifiers: tuple[str, ...] = (),
          optional: tuple[str, ...] = ()) -> Grid:
    """A borderless table with the given column headers; ``identifiers`` name the columns
    never cut (proposal names, paths, ids), ``optional`` those left out first, in order,
    on a terminal too narrow for all (:class:`Grid`)."""
    return Grid(*columns, identifiers=identifiers, optional=optional, title=title)


def plain(text: str, style: str | Style = "") -> Text:
    """Stored text as shown: no rich markup interpretation of ``[...]``, secrets masked,
    control characters inert."""
    return Text(shown(text), style=style)
