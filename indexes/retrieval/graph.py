"""Graph expansion: documents reached from the top hits along typed relations.

Relations are stored in each document's ``extra`` JSON as ``{"relations": {type: [doc
ids]}}``. From each seed, :func:`expand` follows outgoing edges of the allowed types
breadth-first up to ``depth`` hops; a document reached after ``h`` hops from a seed of
weight ``w`` scores ``w * decay ** h`` (the best path counts). Seeds themselves score
nothing here. The caller chooses the relation types; supersession is not a relation and
is never followed, and :mod:`wiki.answering.memory_rescoring` refuses ``conflicts_with``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable


def edges(conn: sqlite3.Connection, keys: Iterable[str],
          kinds: Iterable[str]) -> dict[str, list[tuple[str, str]]]:
    """``key -> [(relation type, target key)]`` for the given documents, following only
    ``kinds``; targets are resolved from doc ids to keys (an unknown id is dropped)."""
    keys, kinds = list(dict.fromkeys(keys)), list(kinds)
    if not keys or not kinds:
        return {}
    rows = conn.execute(
        "SELECT d.key, r.key, j.value FROM docs d, json_each(d.extra, '$.relations') r, "
        "json_each(CASE json_type(r.value) WHEN 'array' THEN r.value "
        "ELSE json_array(r.value) END) j "
        "WHERE d.key IN (SELECT value FROM json_each(?)) "
        "AND r.key IN (SELECT value FROM json_each(?))",
        [json.dumps(keys), json.dumps(kinds)]).fetchall()
    ids = sorted({str(target) for _, _, target in rows})
    by_id: dict[str, list[str]] = {}
    for doc_id, key in conn.execute(
            "SELECT doc_id, key FROM docs WHERE doc_id IN (SELECT value FROM json_each(?))",
            [json.dumps(ids)]):
        by_id.setdefault(doc_id, []).append(key)
    out: dict[str, list[tuple[str, str]]] = {}
    for key, kind, target in rows:
        for target_key in by_id.get(str(target), []):
            out.setdefault(key, []).append((kind, target_key))
    return out


def expand(conn: sqlite3.Connection, seeds: dict[str, float], kinds: Iterable[str], *,
           depth: int = 2, decay: float = 0.5, allowed: set[str] | None = None,
           edges_of=edges) -> dict[str, tuple[float, int, str]]:
    """``key -> (score, hops, the seed it came from)`` for documents reachable from
    ``seeds`` (``key -> weight``) within ``depth`` hops along ``kinds``. Documents not in
    ``allowed`` (when given) are neither scored nor walked through, so filters hold.
    ``edges_of(conn, keys, kinds)``: how edges are read (:func:`edges`, or another
    backend's reader over its own connection)."""
    kinds = list(kinds)
    best: dict[str, tuple[float, int, str]] = {}
    frontier = {key: (weight, key) for key, weight in seeds.items()}
    for hop in range(1, depth + 1):
        found = edges_of(conn, frontier, kinds)
        following: dict[str, tuple[float, str]] = {}
        for key, (weight, origin) in frontier.items():
            for _, target in found.get(key, []):
                if target in seeds or (allowed is not None and target not in allowed):
                    continue
                score = weight * decay
                if target not in best or score > best[target][0]:
                    best[target] = (score, hop, origin)
                    following[target] = (score, origin)
        frontier = following
        if not frontier:
            break
    return best
