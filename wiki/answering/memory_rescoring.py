"""After fusion: the optional graph expansion and re-scoring of ``[memory]`` in
``wiki.toml`` (formulas in :mod:`indexes.retrieval.rescore` and :mod:`indexes.retrieval.graph`).

Both are off by default: evals/results/ablation-memory.md shows where they help.
Expansion follows only ``graph_relations`` (never ``conflicts_with``, and supersession is
not a relation), from the top ``graph_seeds`` fused hits, and only into documents that
pass the search's own filters (status, scope, expiry), so it cannot bring back stale or
out-of-scope knowledge.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from indexes.backend import IndexBackend
from indexes.documents import Hit
from indexes.retrieval.filters import Filters
from indexes.retrieval.rescore import RescoreWeights, Signals, rescore
from wiki.config import MemoryConfig, parse_duration

NEVER_FOLLOWED = ("conflicts_with",)


def enabled(config: MemoryConfig) -> bool:
    """Whether anything happens after fusion."""
    return config.graph or (config.rescore and any(
        (config.recency, config.importance, config.confidence)))


def weights(config: MemoryConfig) -> RescoreWeights:
    """The re-scoring weights of ``config`` (zero for what is turned off)."""
    on = config.rescore
    half_lives = {t: d for t, d in ((t, parse_duration(v)) for t, v in
                                    config.half_life.items()) if d is not None}
    return RescoreWeights(recency=config.recency if on else 0.0,
                          importance=config.importance if on else 0.0,
                          confidence=config.confidence if on else 0.0,
                          graph=config.graph_weight if config.graph else 0.0,
                          half_lives=half_lives)


def signals(index: IndexBackend, keys: list[str]) -> dict[str, Signals]:
    """The re-scoring inputs of ``keys`` from the derived index."""
    return {key: Signals(row.doc_type, row.dated, float(row.extra.get("importance", 0.5)),
                         float(row.extra.get("confidence", 0.5)))
            for key, row in index.docs.attributes(keys).items()}


def after_fusion(index: IndexBackend, hits: list[Hit], config: MemoryConfig,
                 filters: Filters, *, now: dt.datetime | None = None) -> list[Hit]:
    """``hits`` re-ranked by :func:`indexes.retrieval.rescore.rescore`, with the documents the
    graph expansion reached appended as candidates (their ``legs`` hold ``graph``)."""
    if not enabled(config):
        return hits
    graph: dict[str, float] = {}
    extra_hits: list[Hit] = []
    if config.graph and hits:
        top = hits[:config.graph_seeds]
        low = min(h.score for h in hits)
        spread = max(h.score for h in hits) - low
        seeds = {h.key: (h.score - low) / spread if spread > 0 else 1.0 for h in top}
        kinds = [k for k in config.graph_relations if k not in NEVER_FOLLOWED]
        reached = index.expand(seeds, kinds, depth=config.graph_depth,
                               decay=config.graph_decay, allowed=index.allowed_keys(filters))
        graph = {key: score for key, (score, _, _) in reached.items()}
        present = {h.key for h in hits}
        extra_hits = index.docs.hits(k for k in reached if k not in present)
        hits, extra_hits = _reached(hits, reached), _reached(extra_hits, reached)
    return rescore(hits, signals(index, [h.key for h in [*hits, *extra_hits]]),
                   weights(config), now=now or dt.datetime.now(dt.UTC), graph=graph,
                   graph_hits=extra_hits)



def _reached(hits: list[Hit], reached: dict[str, tuple[float, int, str]]) -> list[Hit]:
    """``hits``, those the graph expansion ``reached`` (key -> score, hops, origin) as new
    hits whose ``legs`` say so (``graph``: hops and score)."""
    return [replace(hit, legs={**hit.legs, "graph": (reached[hit.key][1],
                                                     reached[hit.key][0])})
            if hit.key in reached else hit for hit in hits]
