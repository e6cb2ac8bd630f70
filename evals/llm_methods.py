"""The LLM retrieval methods: ``llm`` (the index walk alone, through the product's
``wiki.answering.search.search``), ``hybrid+llm`` (the ``hybrid`` legs plus the walk, fused as the
product fuses) and ``hybrid+rerank`` (hybrid, then the LLM re-orders the top hits).

They need a wiki (the walk reads its ``index.md`` tree) and a model; each factory takes
the :class:`evals.methods.Target` and an :class:`wiki.llm.client.LLMClient`. Every
:class:`Retrieved` carries ``extra["usage"]``: what the question cost (calls, tokens, cache
hits, seconds), and ``extra["stopped"]`` when a budget or a failure cut the walk short.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from evals.methods import Retrieved, Target, _product_gap
from indexes.retrieval.hybrid import fuse, run_legs
from indexes.sqlite.engine import Filters


def _stage(target: Target, client, config):
    from wiki.llm.leg import LLMStage

    return LLMStage(client, config, client.usage.copy())


def llm(target: Target, client, config) -> Callable[..., Retrieved]:
    """The walk alone (the same :class:`wiki.llm.leg.LLMStage` that ``wiki search --legs
    llm`` runs)."""
    return hybrid_llm(target, client, config, lexical=False)


def hybrid_llm(target: Target, client, config, *, weight: float = 1.0,
               rerank: bool = False, walk: bool = True,
               lexical: bool = True) -> Callable[..., Retrieved]:
    """``hybrid`` (alias + bm25 + vector, in-process MiniLM; ``lexical``) plus the walk as
    a fourth leg of weight ``weight`` (``walk``), and/or the LLM rerank of the fused top
    (``rerank``)."""
    from evals.embedcache import embedder

    model = embedder() if lexical else None
    head = target.wiki.require_head()
    read = target.wiki.snapshot(head).read

    def retrieve(query: str, limit: int, filters: Filters | None = None) -> Retrieved:
        stage = _stage(target, client, config)
        weights = {**target.fusion.weights, "llm": weight}
        fusion = replace(target.fusion, window=max(target.fusion.window, limit),
                         weights=weights)
        filters = filters or target.filters
        legs = run_legs(target.index, query, fusion, filters=filters,
                        query_vector=model.encode([query])[0], model=model.name).legs \
            if lexical else {}
        if walk:
            legs["llm"] = stage.leg(target.index, query, head, read, filters, fusion.window)
        hits = fuse(legs, fusion, limit=limit)
        if rerank:
            hits = stage.rerank(target.index, query, hits)
        keys = [h.key for h in hits]
        report = stage.report()
        gap = _product_gap(target, query, legs, keys) if lexical else (None, None)
        return Retrieved(keys, *gap, legs=legs,
                         extra={"usage": report["usage"], "stopped": report["stopped"],
                                "cached": report["walk_cached"]})

    return retrieve


LLM_METHODS = {
    "llm": llm,
    "hybrid+llm": hybrid_llm,
    "hybrid+rerank": lambda t, c, cfg: hybrid_llm(t, c, cfg, rerank=True, walk=False),
}
