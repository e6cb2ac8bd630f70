"""The block structure of a markdown document, from a CommonMark parser (markdown-it-py).

Headings (ATX and setext), paragraphs, list items, GFM tables, fenced and indented code
and HTML blocks are what the parser says they are, so a ```` ``` ```` line inside a
``~~~`` fence, a fence inside a list item or a blockquote, or an unclosed fence at the end
are code exactly where a renderer shows code. Each block keeps its line range in the
parser's own line numbering (lines end at ``\\n``, ``\\r\\n`` or ``\\r``), so a caller can
slice the original text byte for byte with :func:`line_starts`. Inline markup is left as
source text (:mod:`wiki.store.markdown_text` turns it into plain text); only
:func:`links` runs the inline parser.

markdown-it is imported on first use: a plain ``wiki search`` over a synced index never
parses markdown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

HEADING = "heading"
PARAGRAPH = "paragraph"
HEADER_ROW = "header_row"
ROW = "row"
CODE = "code"
HTML = "html"

_NEWLINE = re.compile(r"\r\n?|\n")
_TASK_MARK = re.compile(r"^\[[ xX]\][ \t]+")


@dataclass(frozen=True)
class Block:
    """One leaf block of a document, in document order.

    ``kind``: :data:`HEADING`, :data:`PARAGRAPH` (also each paragraph of a list item or a
    blockquote), :data:`HEADER_ROW` / :data:`ROW` (a table's header and body rows),
    :data:`CODE` (fenced or indented) or :data:`HTML` (a raw HTML block). ``text``: the
    block's markdown source without its container markers (no ``#``, ``>``, list marker
    or task box ``[ ]``; a heading's text, a code block's content, an HTML block as
    written); for rows, the cells joined by ``"\\n"`` (see ``cells``). ``start``/``end``:
    its 0-based line range ``[start, end)``. ``level``: a heading's level (1-6), else 0.
    ``top``: whether the block sits at the top level (not inside a list or blockquote)."""

    kind: str
    text: str
    start: int
    end: int
    level: int = 0
    top: bool = True
    cells: tuple[str, ...] = ()


@cache
def _block_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark").enable("table")
    parser.core.ruler.disable(["inline", "text_join"])  # blocks only: inline stays source
    return parser


@cache
def _full_parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


def parse(markdown: str) -> list[Block]:
    """The leaf blocks of ``markdown`` in order (link reference definitions and thematic
    breaks produce none). Nesting deeper than CommonMark's preset allows (20 levels) is
    not parsed further: its text is left out. Never raises on any string."""
    tokens = _block_parser().parse(markdown)
    out: list[Block] = []
    in_item = False  # the next paragraph is the first of a list item
    row: list[str] = []
    header = False
    for index, token in enumerate(tokens):
        kind = token.type
        if kind == "list_item_open":
            in_item = True
        elif kind in ("heading_open", "paragraph_open"):
            inline = tokens[index + 1]
            text = inline.content
            start, end = token.map or (0, 0)
            if kind == "heading_open":
                out.append(Block(HEADING, text, start, end, int(token.tag[1:]),
                                 top=token.level == 0))
            else:
                if in_item:
                    text = _TASK_MARK.sub("", text)
                out.append(Block(PARAGRAPH, text, start, end, top=token.level == 0))
            in_item = False
        elif kind in ("fence", "code_block", "html_block"):
            start, end = token.map or (0, 0)
            out.append(Block(HTML if kind == "html_block" else CODE, token.content, start,
                             end, top=token.level == 0))
            in_item = False
        elif kind == "thead_open":
            header = True
        elif kind == "tbody_open":
            header = False
        elif kind == "tr_open":
            row = []
        elif kind in ("th_open", "td_open"):
            row.append(tokens[index + 1].content)
        elif kind == "tr_close":
            start, end = _row_map(tokens, index)
            out.append(Block(HEADER_ROW if header else ROW, "\n".join(row), start, end,
                             top=token.level == 0, cells=tuple(row)))
    return out


def _row_map(tokens: list, close: int) -> tuple[int, int]:
    """The line range of the table row that ``tokens[close]`` (a ``tr_close``) ends."""
    for token in reversed(tokens[:close]):
        if token.type == "tr_open":
            return tuple(token.map or (0, 0))  # type: ignore[return-value]
    return (0, 0)


def code_lines(markdown: str) -> set[int]:
    """The 0-based numbers of the lines of ``markdown`` that are fenced or indented code,
    fence lines included (an unclosed fence runs to the end)."""
    return {number for block in parse(markdown) if block.kind == CODE
            for number in range(block.start, block.end)}


def line_starts(markdown: str) -> list[int]:
    """The offset in ``markdown`` where each line starts, as the parser numbers lines,
    plus ``len(markdown)`` at the end: line ``n`` is ``markdown[starts[n]:starts[n + 1]]``
    with its line ending."""
    return [0, *(m.end() for m in _NEWLINE.finditer(markdown) if m.end() < len(markdown)),
            len(markdown)]


def links(markdown: str) -> list[str]:
    """Targets of the inline links and images of ``markdown`` (as the parser normalises
    them: ``<...>`` dropped, unsafe characters percent-encoded), then of its link
    reference definitions; nothing inside code spans or code blocks."""
    env: dict = {}
    found: list[str] = []
    for token in _full_parser().parse(markdown, env):
        for child in token.children or ():
            if child.type == "link_open":
                found.append(str(child.attrs.get("href", "")))
            elif child.type == "image":
                found.append(str(child.attrs.get("src", "")))
    found += [str(ref.get("href", "")) for ref in env.get("references", {}).values()]
    return found
