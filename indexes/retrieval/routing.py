"""Routing a question to category folders by embeddings.

The *category folders* are the children of the first folder where the documents'
``category`` tree branches: ``pages/tools/x.md`` and ``pages/travel/y.md`` route to
``pages/tools`` or ``pages/travel`` (a chain of single folders, like the handbook's
``pages/``, is passed through, as the LLM walk does). Documents that sit directly in the
branching folder belong to no category folder.

Each folder is scored against the question's unit vector with numpy, from the chunk vectors
already in the vector sidecar (nothing is re-embedded):

* ``centroid``: cosine to the folder's centroid, the normalised mean of its documents'
  vectors (a document's vector: the normalised mean of its chunks);
* ``top``: the mean cosine of the folder's :data:`TOP_K` best documents (best chunk each),
  a nearest-neighbour vote that a large, mixed folder does not blur.

The route is every folder scoring within ``margin`` of the best (at most ``max_folders``);
more than one is an *ambiguous* route, which a caller may break with a model
(:mod:`wiki.answering.routing`). Constants were calibrated on the handbook dev questions
(evals/results/routing.md); there is no held-out categorised set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from indexes.documents import Hit
from indexes.retrieval.filters import Filters

if TYPE_CHECKING:
    import numpy as np

METHODS = ("centroid", "top")
DEFAULT_METHOD = "top"
MARGIN = 0.02
"""Cosine points below the best folder's score that still route (handbook dev set)."""
MAX_FOLDERS = 3
TOP_K = 2


@dataclass
class Route:
    """The folders a question is routed to (``folders``, best first), every candidate
    folder's score (``scores``, best first; cosine, -1..1), whether the route was
    ``ambiguous`` (several folders within the margin) and what decided it (``by``:
    ``embedding``, ``llm`` after a tie-break, or ``none`` when there is nothing to route)."""

    folders: list[str]
    scores: list[tuple[str, float]] = field(default_factory=list)
    ambiguous: bool = False
    by: str = "embedding"
    note: str = ""
    nearest: dict[str, list[str]] = field(default_factory=dict)
    """Per routed folder, the keys of its documents nearest the question, best first."""

    def to_dict(self) -> dict:
        """JSON values: folders, scores (rounded to 4 places), ambiguous, by, note."""
        return {"folders": list(self.folders), "ambiguous": self.ambiguous, "by": self.by,
                "scores": [{"folder": f, "score": round(s, 4)} for f, s in self.scores],
                **({"note": self.note} if self.note else {})}


def branch_folder(categories: Iterable[str]) -> str:
    """The deepest folder that every category lies in (``""``: the root): the first one
    where the tree branches or that holds documents itself."""
    parts = [tuple(p for p in c.strip("/").split("/") if p) for c in categories]
    if not parts:
        return ""
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if len(set(level)) != 1:
            break
        common.append(level[0])
    return "/".join(common)


def folder_of(category: str, branch: str) -> str | None:
    """The category folder (child of ``branch``) that ``category`` lies in, or ``None``
    for a document directly in ``branch`` or outside it."""
    category = category.strip("/")
    prefix = f"{branch}/" if branch else ""
    if not category.startswith(prefix) or category == branch:
        return None
    return prefix + category[len(prefix):].split("/")[0]


def route(index, matrix, query_vector, *, filters: Filters | None = None,
          method: str = DEFAULT_METHOD, margin: float = MARGIN,
          max_folders: int = MAX_FOLDERS) -> Route:
    """Route ``query_vector`` (unit length, the model's dimension) to category folders.

    ``index``: the :class:`indexes.sqlite.engine.SearchIndex`; ``matrix``: the model's
    :class:`indexes.sqlite.vectors.Matrix`; only documents passing ``filters`` count. Returns an
    empty route (``by="none"``) when fewer than two folders have vectors. Raises
    ``ValueError`` for an unknown ``method``."""
    if method not in METHODS:
        raise ValueError(f"unknown routing method {method!r}; use one of {', '.join(METHODS)}")
    excluded = index.excluded_keys(filters)
    folder_rows: dict[str, list[int]] = {}
    for row, folder in enumerate(_folders(index, matrix)):
        if folder is not None and matrix.keys[row] not in excluded:
            folder_rows.setdefault(folder, []).append(row)
    if len(folder_rows) < 2:
        return Route([], by="none", note="fewer than two category folders with vectors")
    import numpy as np

    query = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    names = sorted(folder_rows)
    best = np.maximum.reduceat(matrix.vectors @ query, matrix.starts[:-1])
    nearest = {n: np.asarray(folder_rows[n])[np.argsort(-best[folder_rows[n]],
                                                        kind="stable")] for n in names}
    if method == "centroid":
        values = _centroid_scores(matrix, [folder_rows[n] for n in names], query)
    else:
        values = [float(best[nearest[n][:TOP_K]].mean()) for n in names]
    scores = sorted(zip(names, values, strict=True), key=lambda fs: (-fs[1], fs[0]))
    routed = [f for f, s in scores if s >= scores[0][1] - margin][:max_folders]
    return Route(routed, scores, ambiguous=len(routed) > 1,
                 nearest={f: [matrix.keys[i] for i in nearest[f][:TOP_K]] for f in routed})


def _folders(index, matrix) -> list[str | None]:
    """The category folder of each document of ``matrix`` (by :func:`branch_folder` over
    every document's category), kept in ``matrix.derived`` while the store is unchanged."""
    if "route_folders" not in matrix.derived:
        category = index.docs.categories()
        branch = branch_folder(category.values())
        matrix.derived["route_folders"] = [folder_of(category[k], branch)
                                           if k in category else None for k in matrix.keys]
    return matrix.derived["route_folders"]


def _centroid_scores(matrix, groups: list[list[int]], query: np.ndarray) -> list[float]:
    """Cosine of ``query`` to each group's centroid (mean of its documents' normalised
    chunk means, normalised)."""
    import numpy as np

    sums = np.add.reduceat(matrix.vectors, matrix.starts[:-1], axis=0)
    docs = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    centroids = np.stack([docs[rows].mean(axis=0) for rows in groups])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    return [float(v) for v in centroids @ query]


def scoped(filters: Filters, folders: Iterable[str]) -> Filters:
    """``filters`` restricted to documents in any of ``folders`` (hard scoping)."""
    return replace(filters, categories=tuple(folders))


def route_leg(legs: Mapping[str, Sequence[Hit]], found: Route) -> list[Hit]:
    """The soft prior: the documents the other ``legs`` found that lie in a routed folder,
    scored by their folder's routing score (ties: best rank in any leg, then key), as a
    leg to fuse like the others. Empty when nothing was routed."""
    score = {f: s for f, s in found.scores if f in found.folders}
    seen: dict[str, tuple[Hit, float, int]] = {}
    for hits in legs.values():
        for position, hit in enumerate(hits, 1):
            folder = next((f for f in score if hit.category == f
                           or hit.category.startswith(f + "/")), None)
            if folder is None:
                continue
            old = seen.get(hit.key)
            rank = min(position, old[2]) if old else position
            seen[hit.key] = (hit, score[folder], rank)
    ordered = sorted(seen.values(), key=lambda v: (-v[1], v[2], v[0].key))
    return [Hit(h.key, h.doc_id, h.title, h.summary, h.category, h.status, value, rank)
            for rank, (h, value, _) in enumerate(ordered, 1)]
