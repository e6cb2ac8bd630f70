"""The retrieval legs by name: the one list that the search engines, the wiki's settings,
the CLI's ``--legs`` and the MCP tools' ``legs`` argument all check against.

``alias`` (exact title/alias), ``bm25`` (full text), ``vector`` (embeddings) run over the
search index (:mod:`indexes.retrieval.hybrid`); ``llm`` is the LLM index-walk, which needs a model
and
runs in :mod:`wiki.answering.search`. Values are plain strings (a :class:`enum.StrEnum`),
so ``Leg.BM25 == "bm25"`` and a leg name read from ``wiki.toml`` compares equal.
"""

from __future__ import annotations

from enum import StrEnum


class Leg(StrEnum):
    """A retrieval leg; its value is the name written in ``wiki.toml``, ``--legs`` and
    JSON (``"alias"``, ``"bm25"``, ``"vector"``, ``"llm"``)."""

    ALIAS = "alias"
    BM25 = "bm25"
    VECTOR = "vector"
    LLM = "llm"


LEG_NAMES: tuple[str, ...] = tuple(leg.value for leg in Leg)
"""Every leg name, in the order help texts and errors list them."""

INDEX_LEGS: tuple[str, ...] = (Leg.ALIAS.value, Leg.BM25.value, Leg.VECTOR.value)
"""The legs the search index runs itself (no model needed): the default set."""


def parse_legs(value: str, where: str) -> tuple[str, ...]:
    """``"a,b"`` (comma-separated, blanks and repeats dropped) as a tuple of leg names.
    Raises :class:`ValueError` ``"<where> takes alias,bm25,vector,llm; got '<value>'"`` on
    an unknown leg or an empty list (``where`` names the option, e.g. ``--legs``)."""
    legs = tuple(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
    if not legs or any(leg not in LEG_NAMES for leg in legs):
        raise ValueError(f"{where} takes {','.join(LEG_NAMES)}; got {value!r}")
    return legs
