"""Markdown to plain text, sentences, summaries and heading sections.

This is the extractive core of ingest and ``ask`` (the part of the product that is ours
to write). The block structure (headings, paragraphs, lists, tables, code) comes from the
CommonMark parser in :mod:`wiki.store.markdown_blocks`, so a ``#`` inside any code block
is never a heading; inline markup is turned into plain text here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from wiki.store import markdown_blocks as mb

# Every inline span below (a tag's attributes, a link's text and target, an emphasis) is at
# most SPAN characters, so a hostile run such as "*a " * 20000, "<a " * 20000 or "![" * 20000
# cannot make each start scan to the end of the paragraph (quadratic: a 60 KB entry took
# minutes to index); a start costs at most SPAN steps. Templates and comments are cut by
# `_cut`, a find loop, linear whatever their length.
SPAN = 1000
_TEMPLATES = (("{%", "%}"), ("{{", "}}"), ("{#", "#}"))
_HTML_TAGS = (
    "a|abbr|article|aside|b|blockquote|br|button|caption|center|cite|code|col|colgroup|dd|"
    "del|details|div|dl|dt|em|figcaption|figure|font|footer|form|h[1-6]|header|hr|i|iframe|"
    "img|input|ins|kbd|label|li|main|mark|nav|ol|option|p|pre|q|s|samp|script|section|select|"
    "small|source|span|strong|style|sub|summary|sup|table|tbody|td|textarea|tfoot|th|thead|"
    "time|tr|u|ul|var|video")
# Only real HTML elements: "<git dir>" or "<branch>" in prose is text, not a tag.
_HTML_TAG = re.compile(rf"</?(?:{_HTML_TAGS})(?:\s[^>\n]{{0,{SPAN}}})?/?>", re.IGNORECASE)
_IMAGE = re.compile(rf"!\[([^\]]{{0,{SPAN}}})\]\([^)]{{0,{SPAN}}}\)")
_LINK = re.compile(rf"\[([^\]]{{1,{SPAN}}})\]\((?:[^()\s]|\([^)]{{0,{SPAN}}}\))*"
                   rf"(?:\s+\"[^\"]{{0,{SPAN}}}\")?\)")
_REF_LINK = re.compile(rf"\[([^\]]{{1,{SPAN}}})\]\[[^\]]{{0,{SPAN}}}\]")
_AUTOLINK = re.compile(rf"<(https?://[^>]{{1,{SPAN}}})>")
_EMPHASIS = re.compile(rf"(\*\*|\*|~~)(?=\S)(.{{1,{SPAN}}}?)(?<=\S)\1")
# CommonMark: an underscore inside a word (include_superseded, as_of) never emphasises
_UNDERSCORE_EMPHASIS = re.compile(
    rf"(?<![\w_])(__|_)(?=[^\s_])(.{{1,{SPAN}}}?)(?<=[^\s_])\1(?![\w_])")
_CODE = re.compile(r"`([^`]*)`")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=[\"'(\[]?[A-Z0-9\u3000-\u9fff])")
_WORD = re.compile(r"\w+")


def strip_templates(text: str) -> str:
    """Remove Liquid/Jinja/Nunjucks tags (``{% %}``, ``{{ }}``, ``{# #}``) and HTML comments."""
    for opening, closing in _TEMPLATES:
        text = _cut(text, opening, closing)
    return _cut(text, "<!--", "-->")


def _masked(markdown: str) -> str:
    """``markdown`` for the parser: each template span replaced by an empty ``{% %}`` tag
    per line it touches (``{%%}``; over two lines ``{%`` line break ``%}``). No line
    becomes blank, so the parser sees a line where the site renders the template's output
    (a shortcode alone on a line inside an HTML table does not end the table); every line
    keeps its number; and :func:`strip_templates` removes the marks with the line breaks
    inside them, so a block's text reads as before. HTML comments stay: the parser knows
    them."""
    for opening, closing in _TEMPLATES:
        markdown = _cut(markdown, opening, closing,
                        lambda span: "{%" + "%}{%".join(_LINE_BREAK.findall(span)) + "%}")
    return markdown


_LINE_BREAK = re.compile(r"\r\n?|\n")


def _cut(text: str, opening: str, closing: str, replace=lambda span: "") -> str:
    """``text`` with each span from ``opening`` to the first ``closing`` after it replaced
    by ``replace(span)`` (removed by default; an opening never closed is kept, with what
    follows); linear in ``text``."""
    if opening not in text:
        return text
    kept: list[str] = []
    position = 0
    while (start := text.find(opening, position)) >= 0:
        end = text.find(closing, start + len(opening))
        if end < 0:
            break
        kept.append(text[position:start])
        position = end + len(closing)
        kept.append(replace(text[start:position]))
    kept.append(text[position:])
    return "".join(kept)


def inline_plain(line: str) -> str:
    """One line of markdown as plain text (links to their text, no emphasis marks)."""
    line = _IMAGE.sub(r"\1", line)
    line = _LINK.sub(r"\1", line)
    line = _REF_LINK.sub(r"\1", line)
    line = _AUTOLINK.sub(r"\1", line)
    line = _HTML_TAG.sub("", line)
    line = _CODE.sub(r"\1", line)
    for _ in range(2):
        line = _UNDERSCORE_EMPHASIS.sub(r"\2", _EMPHASIS.sub(r"\2", line))
    return re.sub(r"\s+", " ", line).strip()


@lru_cache(maxsize=1024)
def _parsed(markdown: str) -> tuple[mb.Block, ...]:
    """The leaf blocks of ``markdown`` (templates and comments masked), kept for the last
    1,024 documents (a few MB): indexing an entry reads its blocks twice
    (:func:`plain_text` for the body column, :func:`sentences` for its answer sentences),
    and the parse was half of a sync's time (810 handbook entries: 2.3 of 4.7 s,
    cProfile); a server's asks read the same entries' sentences again and again (with 32
    kept, parsing was 7 % of a served ask's samples on the handbook)."""
    return tuple(mb.parse(_masked(markdown)))


def blocks(markdown: str, *, keep_code: bool = False, headings: bool = True) -> list[str]:
    """Plain-text blocks of ``markdown``: paragraphs, list items, table rows and headings,
    in order, as the CommonMark parser finds them (:mod:`wiki.store.markdown_blocks`).
    Link definitions are left out, code (fenced or indented) unless ``keep_code`` (then one
    block per non-blank line), and headings and table header rows unless ``headings``. An
    HTML block counts as text, one block per run of non-blank lines, tags removed."""
    out: list[str] = []
    for block in _parsed(markdown):
        if block.kind == mb.CODE:
            if keep_code:
                out += [line.strip() for line in strip_templates(block.text).splitlines()
                        if line.strip()]
            continue
        if block.kind in (mb.HEADING, mb.HEADER_ROW) and not headings:
            continue
        out += [text for text in _texts(block) if text]
    return out


def _texts(block: mb.Block) -> list[str]:
    """The plain text(s) of one non-code block, templates and comments removed."""
    if block.kind in (mb.ROW, mb.HEADER_ROW):
        return [" | ".join(c for c in (_plain(cell) for cell in block.cells) if c)]
    if block.kind == mb.HTML:
        return [_plain(run) for run in re.split(r"\n[ \t]*\n", strip_templates(block.text))]
    return [_plain(block.text)]


def _plain(source: str) -> str:
    """Inline markdown ``source`` (lines joined) as one line of plain text."""
    return inline_plain(" ".join(strip_templates(source).split("\n")))


def plain_text(markdown: str) -> str:
    """All of ``markdown`` as plain text (code kept), one block per line: what is indexed."""
    return "\n".join(blocks(markdown, keep_code=True))


def sentences(markdown: str) -> list[str]:
    """The sentences of ``markdown`` as plain text, in order. A sentence does not end
    inside brackets or a quotation that close later in the block (``(...? ...)``,
    ``"...? ..."``): a quoted question stays inside the sentence that quotes it. Kept per
    text (:func:`_sentences`): an answer splits the entries it reads on every ask."""
    return list(_sentences(markdown))


@lru_cache(maxsize=2048)
def _sentences(markdown: str) -> tuple[str, ...]:
    return tuple(s.strip() for block in blocks(markdown, headings=False)
                 for s in _closed(_SENTENCE_END.split(block)) if s.strip())


_PAIRS = (("(", ")"), ("[", "]"), ("\u201c", "\u201d"))


def _closed(pieces: list[str]) -> list[str]:
    """``pieces`` (one block split at sentence ends) with a piece left inside open
    brackets or quotes joined to the following ones, up to the piece that closes them;
    an opening never closed in the block joins nothing (a stray ``(`` or ``"``), and at
    most :data:`_MAX_JOINED` pieces make one sentence (a stray one closed by a later,
    unrelated bracket cannot swallow the block)."""
    closers = [c for _, c in _PAIRS] + ['"']
    later: list[frozenset[str]] = [frozenset()] * (len(pieces) + 1)  # closers in pieces[i:]
    for i in range(len(pieces) - 1, -1, -1):  # one pass: a long block stays linear
        later[i] = later[i + 1] | {c for c in closers if c in pieces[i]}
    out: list[str] = []
    joined = 0
    for i, piece in enumerate(pieces):
        if out and joined < _MAX_JOINED and _still_open(out[-1], later[i]):
            out[-1] = f"{out[-1]} {piece}"
            joined += 1
        else:
            out.append(piece)
            joined = 1
    return out


_MAX_JOINED = 3


def _still_open(text: str, closed_later: frozenset[str]) -> bool:
    """Whether ``text`` leaves a bracket or quotation open whose closing character is in
    ``closed_later`` (those found in the rest of the block)."""
    for opening, closing in _PAIRS:
        if closing in closed_later and text.count(opening) > text.count(closing):
            return True
    return '"' in closed_later and text.count('"') % 2 == 1


def summary(markdown: str, *, max_chars: int = 240) -> str:
    """The first sentence(s) of the first prose block (headings and tables skipped), cut
    at a word boundary to at most ``max_chars``; ``""`` when there is no prose."""
    prose = _prose_blocks(markdown) or blocks(markdown, headings=False)
    if not prose:
        return ""
    picked = ""
    for sentence in _SENTENCE_END.split(prose[0]):
        candidate = f"{picked} {sentence}".strip()
        if picked and len(candidate) > max_chars:
            break
        picked = candidate
        if len(picked) >= 80:
            break
    if len(picked) > max_chars:
        picked = picked[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return picked


def _prose_blocks(markdown: str) -> list[str]:
    """The paragraphs (list items and HTML text included) of at least three words."""
    return [text for block in _parsed(markdown)
            if block.kind in (mb.PARAGRAPH, mb.HTML)
            for text in _texts(block) if len(_WORD.findall(text)) >= 3]


def first_heading(markdown: str, level: int = 1) -> str | None:
    """The text of the first top-level heading (ATX or setext, not inside a list or
    blockquote) of exactly ``level``, or ``None``."""
    for heading_level, text, _ in _headings(markdown):
        if heading_level == level:
            return text
    return None


def word_count(text: str) -> int:
    """Number of words in ``text``."""
    return len(_WORD.findall(text))


MIN_ANSWER_WORDS = 4
"""A sentence of fewer words is never quoted as an answer."""


def answer_sentences(markdown: str) -> list[str]:
    """The sentences an answer may quote (and the index embeds, one vector each): those
    of :func:`sentences` (the one sentence splitter) with at least
    :data:`MIN_ANSWER_WORDS` words."""
    return list(_answer_sentences(markdown))


@lru_cache(maxsize=2048)
def _answer_sentences(markdown: str) -> tuple[str, ...]:
    return tuple(s for s in _sentences(markdown) if word_count(s) >= MIN_ANSWER_WORDS)


@dataclass(frozen=True)
class Section:
    """A part of a document: ``heading`` (``""`` for the text before the first heading),
    ``text`` (its markdown, heading line included) and ``occurrence`` (1 for the first
    section with this heading, 2 for the next...)."""

    heading: str
    text: str
    occurrence: int = 1


def split_sections(markdown: str, level: int = 2) -> list[Section]:
    """Split at the top-level headings of ``level`` (ATX or setext; never inside code, a
    list or a blockquote). Each section's text is ``markdown`` sliced at line starts, so
    the sections joined are ``markdown`` byte for byte."""
    starts = mb.line_starts(markdown)
    cuts = [(line, text) for heading_level, text, line in _headings(markdown)
            if heading_level == level]
    sections: list[Section] = []
    seen: dict[str, int] = {}
    offsets = [0] + [starts[line] for line, _ in cuts] + [len(markdown)]
    headings = [""] + [text for _, text in cuts]
    for index, heading in enumerate(headings):
        text = markdown[offsets[index]:offsets[index + 1]]
        seen[heading] = seen.get(heading, 0) + 1
        if index == 0 and not text.strip():
            continue
        sections.append(Section(heading, text, seen[heading]))
    return sections


def _headings(markdown: str) -> list[tuple[int, str, int]]:
    """``(level, plain text, 0-based line)`` of each top-level heading of ``markdown``."""
    return [(block.level, inline_plain(strip_templates(block.text)), block.start)
            for block in _parsed(markdown) if block.kind == mb.HEADING and block.top]


def heading_above(markdown: str, sentence: str) -> str | None:
    """The text of the last heading (outside code) above the first place ``sentence`` (as
    :func:`sentences` gives it; a trailing ``…`` of a clipped one ignored) occurs in
    ``markdown``; ``None`` when it occurs before any heading or nowhere."""
    wanted = sentence.removesuffix("…").strip()
    if not wanted:
        return None
    offsets = mb.line_starts(markdown)
    marks = _headings(markdown)
    starts = [0] + [offsets[line] for _, _, line in marks]
    ends = starts[1:] + [len(markdown)]
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if any(s.startswith(wanted) for s in sentences(markdown[start:end])):
            return marks[index - 1][1] if index else None
    return None
