"""The model-free compile of one source: its whole body, or one draft per ``##`` section.

Shared by ingest (:mod:`wiki.ingest.pipeline`), distillation
(:mod:`wiki.knowledge.distill`, which distils the same sections) and revalidation
(:mod:`wiki.answering.revalidate`, which finds an entry's part of
a changed source the way ingest cut it).
"""

from __future__ import annotations

from dataclasses import dataclass

from wiki.config import IngestConfig
from wiki.store import markdown_text as md


@dataclass(frozen=True)
class Draft:
    """An entry compiled from one source section, before it is matched to the wiki."""

    locator: str
    occurrence: int
    title: str
    summary: str
    body: str


def compile_sections(title: str, body: str, config: IngestConfig) -> list[Draft]:
    """Drafts for one source: the whole body, or one per ``##`` section when the body has
    more than ``config.split_words`` words."""
    if md.word_count(body) <= config.split_words:
        return [Draft("", 1, title, md.summary(body), body)]
    sections = md.split_sections(body, level=2)
    merged: list[md.Section] = []
    for section in sections:
        short = md.word_count(section.text) < config.min_section_words
        if merged and short:
            last = merged[-1]
            merged[-1] = md.Section(last.heading, last.text + section.text, last.occurrence)
        elif merged and not merged[-1].heading and \
                md.word_count(merged[-1].text) < config.min_section_words:
            merged[-1] = md.Section(section.heading, merged[-1].text + section.text,
                                    section.occurrence)
        else:
            merged.append(section)
    if len(merged) <= 1:
        return [Draft("", 1, title, md.summary(body), body)]
    drafts = []
    for section in merged:
        name = f"{title}: {section.heading}" if section.heading else title
        drafts.append(Draft(section.heading, section.occurrence, name,
                            md.summary(section.text), section.text))
    return drafts
