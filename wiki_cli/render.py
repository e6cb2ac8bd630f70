"""Rendering results for people (rich) and machines (JSON). stdout is data; stderr is talk."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# Piped output is data: never cut or wrap it to a pretend 80-column terminal.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 100_000)
err = Console(stderr=True, highlight=False)


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


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def table(*columns: str, title: str | None = None) -> Table:
    """A borderless table with the given column headers."""
    grid = Table(*columns, title=title, box=None, header_style="bold", pad_edge=False)
    return grid


def plain(text: str) -> Text:
    """Text shown as is (no rich markup interpretation of ``[...]``)."""
    return Text(text)
