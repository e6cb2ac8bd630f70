"""Post-fusion re-scoring: relevance combined with recency, importance, confidence and
graph expansion.

Following the retrieval score of Park et al., "Generative Agents" (UIST 2023): each
signal lies in [0, 1] and the final score is a weighted sum,

    score(d) = relevance(d) + w_rec * recency(d) + w_imp * importance(d)
               + w_conf * confidence(d) + w_graph * graph(d)

where relevance is the fused score min-max normalised over the candidate list
((s - min) / (max - min); 1 for every hit when all scores are equal, 0 for a document
only the graph brought in), recency = 0.5 ** (age in days / half-life of the document's
type) (1 for a type that never decays, 0.5 when the age is unknown), importance and
confidence the document's own values (0.5 when absent) and graph the expansion score of
:func:`indexes.retrieval.graph.expand`. Each hit's ``contributions`` are rescaled so that they
still add up exactly to its score (``offset`` holds ``-min / (max - min)``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from indexes.documents import Hit, in_order

SIGNALS = ("recency", "importance", "confidence", "graph")


@dataclass(frozen=True)
class Signals:
    """What re-scoring knows of one document: ``doc_type``, ``dated`` (ISO 8601 UTC or
    ``""``), ``importance`` and ``confidence`` (0-1)."""

    doc_type: str = "note"
    dated: str = ""
    importance: float = 0.5
    confidence: float = 0.5


@dataclass(frozen=True)
class RescoreWeights:
    """Weight of each signal (0 turns it off) and ``half_lives``: ``type -> days``
    (a type missing from it never decays)."""

    recency: float = 0.0
    importance: float = 0.0
    confidence: float = 0.0
    graph: float = 0.0
    half_lives: Mapping[str, float] = field(default_factory=dict)


def recency(signals: Signals, half_lives: Mapping[str, float], now: dt.datetime) -> float:
    """0.5 ** (age / half-life), in [0, 1] (see the module docstring)."""
    half_life = half_lives.get(signals.doc_type)
    if half_life is None:
        return 1.0
    if not signals.dated:
        return 0.5
    when = dt.datetime.fromisoformat(signals.dated.replace("Z", "+00:00"))
    age = max((now - when).total_seconds() / 86400.0, 0.0)
    return 0.5 ** (age / half_life) if half_life > 0 else 0.0


def rescore(hits: list[Hit], signals: Mapping[str, Signals], weights: RescoreWeights, *,
            now: dt.datetime, graph: Mapping[str, float] | None = None,
            graph_hits: list[Hit] | None = None) -> list[Hit]:
    """Re-rank fused ``hits`` (and ``graph_hits``, documents only the expansion found,
    whose ``graph`` score is in ``graph``) by the formula of the module docstring.
    Returns new hits, re-ranked, with the new ``score`` and ``contributions``."""
    graph = graph or {}
    if not hits and not graph_hits:
        return []
    scores = [h.score for h in hits]
    low, high = (min(scores), max(scores)) if scores else (0.0, 0.0)
    spread = high - low
    relevance: list[tuple[Hit, dict[str, float]]] = []
    for hit in hits:
        if spread > 0:
            parts = {leg: c / spread for leg, c in hit.contributions.items()}
            parts["offset"] = -low / spread
        else:
            parts = {"relevance": 1.0}
        relevance.append((hit, parts))
    relevance += [(hit, {}) for hit in graph_hits or []]
    everything = []
    for hit, parts in relevance:
        signal = signals.get(hit.key, Signals())
        values = {"recency": recency(signal, weights.half_lives, now),
                  "importance": signal.importance, "confidence": signal.confidence,
                  "graph": graph.get(hit.key, 0.0)}
        parts = {**parts, **{name: getattr(weights, name) * values[name] for name in SIGNALS
                             if getattr(weights, name)}}
        everything.append(replace(hit, score=sum(parts.values()), contributions=parts))
    everything.sort(key=lambda h: (-h.score, h.rank or 10**9, h.key))
    return in_order(everything)
