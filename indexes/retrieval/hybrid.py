"""Running the retrieval legs and fusing them (docs/architecture.md, "Retrieval"): weighted
z-score CombSUM by default, weighted RRF on request (:mod:`indexes.retrieval.fusion`).

Legs: ``alias`` (exact title/alias spans), ``bm25`` (FTS5 with the trigram path for
space-less scripts) and ``vector`` (cosine of the best chunk). Every leg applies the same
filters before ranking; each contributes its top ``window`` hits to
:func:`indexes.retrieval.fusion.rrf`; the verbatim query always feeds the lexical legs.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from indexes.documents import Hit
from indexes.errors import IndexesError
from indexes.retrieval.fusion import DEFAULT_K, rrf, zscore
from indexes.retrieval.legs import INDEX_LEGS
from indexes.sqlite.engine import Filters, SearchIndex

LEGS = INDEX_LEGS


@dataclass(frozen=True)
class FusionConfig:
    """Which legs run, RRF's ``k``, how many hits each leg offers (``window``) and each
    leg's weight (a missing leg weighs 1.0)."""

    legs: tuple[str, ...] = LEGS
    k: int = DEFAULT_K
    window: int = 50
    weights: Mapping[str, float] = field(default_factory=dict)
    method: str = "zscore"
    """``zscore`` (weighted CombSUM of z-scores, the default) or ``rrf``."""


_ENCODER: ThreadPoolExecutor | None = None
_ENCODER_MADE = threading.Lock()
ENCODERS = 4
"""Queries encoded at once (a server's parallel reads each encode one); the pool's threads
start only as calls need them, so a command-line search starts one."""


def encode_in_background(encode: Callable[[str], object], query: str) -> Future:
    """Start ``encode(query)`` on a worker thread (a pool of up to :data:`ENCODERS` per
    process, reused) and return its future, so the query is encoded while the lexical
    legs run: ONNX Runtime, PyTorch and the embedding server's socket all release the GIL
    while they work."""
    global _ENCODER
    with _ENCODER_MADE:
        if _ENCODER is None:
            _ENCODER = ThreadPoolExecutor(max_workers=ENCODERS,
                                          thread_name_prefix="wiki-encode")
    return _ENCODER.submit(contextvars.copy_context().run, encode, query)  # caller's scope


@dataclass(frozen=True)
class LegRun:
    """What :func:`run_legs` found: ``legs``, ``leg -> ranked hits`` for every leg that
    ran, in the configured order, and ``skipped``, ``leg -> why`` for a leg that could not
    (``{"vector": reason}`` when the query's vector failed)."""

    legs: dict[str, list[Hit]]
    skipped: dict[str, str] = field(default_factory=dict)


def run_legs(index: SearchIndex, query: str, config: FusionConfig, *,
             filters: Filters | None = None, query_vector=None,
             model: str | None = None, lenient: bool = False) -> LegRun:
    """Every configured leg that can run (:class:`LegRun`). The vector leg needs ``model``
    and ``query_vector``: a unit vector, or a :class:`~concurrent.futures.Future` of one
    (:func:`encode_in_background`), awaited only after the lexical legs have run. With
    ``lenient``, a vector that fails with an ``IndexesError`` (no model) is reported in
    ``skipped`` and the other legs are still returned; without it the error is raised.
    Raises ``EmptyQueryError`` for an empty query when a lexical leg runs."""
    out: dict[str, list[Hit]] = {}
    skipped: dict[str, str] = {}
    vector_hits = None
    if "vector" in config.legs and query_vector is not None and model:
        vector_hits = index.start_vector(query_vector, model, limit=config.window,
                                         filters=filters)  # ranks while the others run
    for leg in config.legs:
        if leg == "alias":
            out[leg] = index.search_names(query, limit=config.window, filters=filters)
        elif leg == "bm25":
            out[leg] = index.search_lexical(query, limit=config.window, filters=filters)
    if vector_hits is not None:
        try:
            out["vector"] = vector_hits()
        except IndexesError as exc:
            if not lenient:
                raise
            skipped["vector"] = str(exc)
    return LegRun({leg: out[leg] for leg in config.legs if leg in out}, skipped)


def fuse(legs: Mapping[str, list[Hit]], config: FusionConfig, *, limit: int) -> list[Hit]:
    """Fuse the legs' lists (``config.method``); each hit's ``legs`` explains its ranks and
    scores and ``contributions`` what each leg added. A single leg is returned as it ranked
    (its own scores)."""
    active = {leg: hits for leg, hits in legs.items() if hits}
    if len(active) == 1:
        (leg, hits), = active.items()
        return [replace(hit, legs=hit.legs if leg in hit.legs else
                        {**hit.legs, leg: (hit.rank, hit.score)}, contributions={leg: hit.score})
                for hit in hits[:limit]]
    if config.method == "rrf":
        return rrf(active, k=config.k, weights=config.weights, limit=limit)
    return zscore(active, weights=config.weights, limit=limit)
