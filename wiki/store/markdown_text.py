"""Markdown to plain text, sentences, summaries and heading sections.

This is the extractive core of ingest and ``ask`` (the part of the product that is ours
to write): deliberately simple, line based, and aware of fenced code so that a ``#``
inside a code block is never a heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s+\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(rf"<(https?://[^>]{{1,{SPAN}}})>")
_EMPHASIS = re.compile(rf"(\*\*|\*|~~)(?=\S)(.{{1,{SPAN}}}?)(?<=\S)\1")
# CommonMark: an underscore inside a word (include_superseded, as_of) never emphasises
_UNDERSCORE_EMPHASIS = re.compile(
    rf"(?<![\w_])(__|_)(?=[^\s_])(.{{1,{SPAN}}}?)(?<=[^\s_])\1(?![\w_])")
_CODE = re.compile(r"`([^`]*)`")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=[\"'(\[]?[A-Z0-9\u3000-\u9fff])")
_WORD = re.compile(r"\w+")


def strip_templates(text: str) -> str:
    """Remove Liquid/Jinja/Nunjucks tags (``{% %}``, ``{{ }}``, ``{# #}``) and HTML comments."""
    for opening, closing in _TEMPLATES:
        text = _cut(text, opening, closing)
    return _cut(text, "<!--", "-->")


def _cut(text: str, opening: str, closing: str) -> str:
    """``text`` without each span from ``opening`` to the first ``closing`` after it
    (an opening never closed is kept, with what follows); linear in ``text``."""
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


def blocks(markdown: str, *, keep_code: bool = False, headings: bool = True) -> list[str]:
    """Plain-text blocks of ``markdown``: paragraphs, list items, table rows and headings,
    in order. Link definitions are left out, fenced code unless ``keep_code``, and
    headings and table header rows unless ``headings``."""
    out: list[str] = []
    paragraph: list[str] = []
    in_fence = False
    last_was_row = False

    def flush() -> None:
        if paragraph:
            text = inline_plain(" ".join(paragraph))
            if text:
                out.append(text)
            paragraph.clear()

    for line in _REF_DEF.sub("", strip_templates(markdown)).splitlines():
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            if keep_code and line.strip():
                out.append(line.strip())
            continue
        stripped = line.strip()
        if not stripped or _TABLE_RULE.match(stripped):
            flush()
            if stripped and not headings and last_was_row and out:
                out.pop()  # the row above a |---| rule is the table's header
            continue
        heading = _HEADING.match(stripped)
        last_was_row = stripped.startswith("|")
        if heading:
            flush()
            if headings:
                out.append(inline_plain(heading.group(2)))
            continue
        if stripped.startswith("|"):
            flush()
            cells = [inline_plain(c) for c in stripped.strip("|").split("|")]
            row = " | ".join(c for c in cells if c)
            if row:
                out.append(row)
            continue
        if _LIST_MARK.match(line):
            flush()
            paragraph.append(_LIST_MARK.sub("", line))
            continue
        paragraph.append(stripped.lstrip("> ").strip())
    flush()
    return out


def plain_text(markdown: str) -> str:
    """All of ``markdown`` as plain text (code kept), one block per line: what is indexed."""
    return "\n".join(blocks(markdown, keep_code=True))


def sentences(markdown: str) -> list[str]:
    """The sentences of ``markdown`` as plain text, in order. A sentence does not end
    inside brackets or a quotation that close later in the block (``(...? ...)``,
    ``"...? ..."``): a quoted question stays inside the sentence that quotes it."""
    return [s.strip() for block in blocks(markdown, headings=False)
            for s in _closed(_SENTENCE_END.split(block)) if s.strip()]


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
    headings = {inline_plain(m.group(2)) for m in
                (_HEADING.match(line.strip()) for line in markdown.splitlines()) if m}
    return [b for b in blocks(markdown)
            if b not in headings and " | " not in b and len(_WORD.findall(b)) >= 3]


def first_heading(markdown: str, level: int = 1) -> str | None:
    """The text of the first heading of exactly ``level`` outside code, or ``None``."""
    for heading_level, text, _ in _headings(markdown):
        if heading_level == level:
            return text
    return None


def word_count(text: str) -> int:
    """Number of words in ``text``."""
    return len(_WORD.findall(text))


@dataclass(frozen=True)
class Section:
    """A part of a document: ``heading`` (``""`` for the text before the first heading),
    ``text`` (its markdown, heading line included) and ``occurrence`` (1 for the first
    section with this heading, 2 for the next...)."""

    heading: str
    text: str
    occurrence: int = 1


def split_sections(markdown: str, level: int = 2) -> list[Section]:
    """Split at headings of ``level`` (outside fenced code)."""
    lines = markdown.splitlines(keepends=True)
    cuts = [(number, text) for heading_level, text, number in _headings(markdown)
            if heading_level == level]
    sections: list[Section] = []
    seen: dict[str, int] = {}
    starts = [0] + [n for n, _ in cuts]
    headings = [""] + [t for _, t in cuts]
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        text = "".join(lines[start:end])
        heading = headings[index]
        seen[heading] = seen.get(heading, 0) + 1
        if index == 0 and not text.strip():
            continue
        sections.append(Section(heading, text, seen[heading]))
    return sections


def _headings(markdown: str) -> list[tuple[int, str, int]]:
    found = []
    in_fence = False
    for number, line in enumerate(markdown.splitlines()):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), inline_plain(strip_templates(match.group(2))),
                          number))
    return found


def heading_above(markdown: str, sentence: str) -> str | None:
    """The text of the last heading (outside code) above the first place ``sentence`` (as
    :func:`sentences` gives it; a trailing ``…`` of a clipped one ignored) occurs in
    ``markdown``; ``None`` when it occurs before any heading or nowhere."""
    wanted = sentence.removesuffix("…").strip()
    if not wanted:
        return None
    lines = markdown.splitlines()
    marks = _headings(markdown)
    starts = [0] + [line for _, _, line in marks]
    ends = [line for _, _, line in marks] + [len(lines)]
    for index, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if any(s.startswith(wanted) for s in sentences("\n".join(lines[start:end]))):
            return marks[index - 1][1] if index else None
    return None
