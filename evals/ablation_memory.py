"""Ablation of post-fusion re-scoring and graph expansion (``[memory]`` in wiki.toml).

    python -m evals.ablation_memory [--data DIR]

Reuses the retrieved leg lists of :mod:`evals.tune` (``evals/.cache/legs-*.pkl``: each
question's alias/BM25/vector hits with scores), fuses them as the product does (weighted
z-score, weights alias 1 / bm25 1 / vector 0.75, window 50) and re-scores offline with
:func:`indexes.retrieval.rescore.rescore`, so each row costs milliseconds per query and no index is
opened or rebuilt. Signals per corpus, as the product would see them:

* handbook: each entry's ``type``, ``updated``, ``importance``, ``confidence`` and
  ``relations`` read from a private copy of the cached handbook wiki's derived index;
* SciFact: abstracts carry no type, date, importance, confidence or relation (defaults);
* LoCoMo (sessions): type ``episode``, dated by the session's ``date_time``; "now" is the
  conversation's last session (an agent at the end of the conversation); no relations.

Weights are chosen on the tuning splits only (handbook dev, SciFact train, LoCoMo tune
half); SciFact test and the LoCoMo held-out half are reported. Writes
``evals/results/ablation-memory.md`` / ``.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from pathlib import Path

from evals import datasets
from evals.report import header, md_table, now, project_commit, write
from evals.tune import CUT, evaluate, load
from indexes.documents import Hit
from indexes.retrieval.fusion import zscore
from indexes.retrieval.rescore import RescoreWeights, Signals, rescore

WEIGHTS = {"alias": 1.0, "bm25": 1.0, "vector": 0.75}
WINDOW = 50
HALF_LIVES = {"episode": 30.0, "note": 365.0, "fact": 365.0, "procedure": 365.0}
VARIANTS = {
    "fusion only": RescoreWeights(half_lives=HALF_LIVES),
    "+ recency 0.1": RescoreWeights(recency=0.1, half_lives=HALF_LIVES),
    "+ recency 0.3": RescoreWeights(recency=0.3, half_lives=HALF_LIVES),
    "+ recency 1.0": RescoreWeights(recency=1.0, half_lives=HALF_LIVES),
    "+ importance 0.3": RescoreWeights(importance=0.3, half_lives=HALF_LIVES),
    "+ confidence 0.3": RescoreWeights(confidence=0.3, half_lives=HALF_LIVES),
    "+ graph 0.3": RescoreWeights(graph=0.3, half_lives=HALF_LIVES),
    "all (0.3 each)": RescoreWeights(recency=0.3, importance=0.3, confidence=0.3, graph=0.3,
                                     half_lives=HALF_LIVES),
}
SETS = [("handbook", "handbook", None, "tune"), ("scifact-train", "scifact", "train", "tune"),
        ("scifact-test", "scifact", "test", "report"),
        ("locomo tune half", "locomo-session", "tune", "tune"),
        ("locomo held-out half", "locomo-session", "held-out", "report")]


def _fused(legs) -> list[Hit]:
    hits = {leg: [Hit(k, k, "", "", "", "active", s, r) for r, (k, s) in
                  enumerate(found[:WINDOW], 1)] for leg, found in legs.items() if found}
    if len(hits) == 1:
        (only,) = hits.values()
        for hit in only:
            hit.contributions = {"single": hit.score}
        return only
    return zscore(hits, weights=WEIGHTS)


def _handbook_context():
    """Signals and a relation-expansion function from a private copy of the handbook."""
    from evals.budget import _private_copy
    from indexes.retrieval.graph import expand
    from wiki.answering.memory_rescoring import signals
    from wiki.store.derived import open_synced
    from wiki.store.workspace import Wiki

    folder = tempfile.mkdtemp(prefix="wiki-ablation-")
    index = open_synced(Wiki(_private_copy(Path(folder)))).index
    keys = [r[0] for r in index.conn.execute("SELECT key FROM docs")]
    found = signals(index, keys)
    relations = index.conn.execute(
        "SELECT count(*) FROM docs WHERE json_extract(extra, '$.relations') IS NOT NULL"
    ).fetchone()[0]

    def graph(seeds: dict[str, float]) -> dict[str, float]:
        reached = expand(index.conn, seeds, ("depends_on", "refines", "derived_from",
                                             "related_to"), depth=2, decay=0.5)
        return {k: s for k, (s, _, _) in reached.items()}

    return found, graph, relations


def _locomo_signals(data: Path) -> tuple[dict[str, Signals], dict[str, dt.datetime]]:
    sessions = datasets.read_jsonl(data / "locomo" / "sessions.jsonl")
    found, last = {}, {}
    for s in sessions:
        when = dt.datetime.strptime(s["date_time"], "%I:%M %p on %d %B, %Y").replace(
            tzinfo=dt.UTC)
        found[s["id"]] = Signals("episode", when.strftime("%Y-%m-%dT%H:%M:%SZ"))
        last[s["conversation_id"]] = max(last.get(s["conversation_id"], when), when)
    return found, last


def _fuser(weights: RescoreWeights, signals, graph, now_of):
    def fuse(legs, query) -> list[str]:
        hits = _fused(legs)
        if weights == VARIANTS["fusion only"]:
            return [h.key for h in hits]
        extra: dict[str, float] = {}
        if weights.graph and graph is not None and hits:
            low, high = min(h.score for h in hits), max(h.score for h in hits)
            extra = graph({h.key: (h.score - low) / ((high - low) or 1.0) for h in hits[:5]})
        more = [Hit(k, k, "", "", "", "active", 0.0) for k in extra
                if k not in {h.key for h in hits}]
        return [h.key for h in rescore(hits, signals, weights, now=now_of(query),
                                       graph=extra, graph_hits=more)]
    return fuse


def run(data: Path, out: Path) -> str:
    hb_signals, hb_graph, hb_relations = _handbook_context()
    lo_signals, lo_last = _locomo_signals(data)
    fixed_now = dt.datetime.now(dt.UTC)
    context = {"handbook": (hb_signals, hb_graph, lambda q: fixed_now),
               "scifact": ({}, None, lambda q: fixed_now),
               "locomo-session": (lo_signals, None, lambda q: lo_last[q["conversation"]])}
    bundles = {name: load(name) for name in ("handbook", "locomo-session")}
    bundles.update({f"scifact-{s}": load(f"scifact-{s}") for s in ("train", "test")})
    results: dict[str, dict[str, dict]] = {}
    for label, corpus, split, _ in SETS:
        bundle = bundles[corpus if corpus != "scifact" else f"scifact-{split}"]
        signals, graph, now_of = context[corpus]
        results[label] = {}
        for variant, weights in VARIANTS.items():
            fuse = _fuser(weights, signals, graph, now_of)
            bound = {"units": bundle["units"],
                     "queries": [{**q, "legs": _Bound(q, fuse)} for q in bundle["queries"]]}
            results[label][variant] = evaluate(
                bound, lambda call: call(), cut=CUT["scifact" if corpus == "scifact" else corpus],
                split=split if corpus != "handbook" else None)
    columns = ["recall@5", "mrr@10", "ndcg@10"]
    rows = []
    for variant in VARIANTS:
        row = [variant]
        for label, *_ in SETS:
            base, mine = results[label]["fusion only"], results[label][variant]
            row += [f"{mine['recall@5']:.3f}" + ("" if variant == "fusion only" else
                                                f" ({mine['recall@5'] - base['recall@5']:+.3f})"),
                    f"{mine['ndcg@10']:.3f}"]
        rows.append(row)
    headers = ["variant"] + [f"{label} {m}" for label, *_ in SETS for m in ("R@5", "nDCG@10")]
    facts = {"date": now(), "project commit": project_commit(),
             "fusion": f"z-score, weights {WEIGHTS}, window {WINDOW}",
             "half-lives (days)": json.dumps(HALF_LIVES),
             "handbook relations": f"{hb_relations} entries carry relations"}
    text = "\n".join([header("Memory re-scoring and graph expansion: ablation", facts), "",
                      md_table(headers, rows), "",
                      "R@5 = recall@5 (difference to fusion only in brackets). Tuning sets: "
                      "handbook dev, SciFact train, LoCoMo tune half; reported only: "
                      "SciFact test, LoCoMo held-out half. " + _DECISION])
    write(out, "ablation-memory", text, {**facts, "results": results,
                                         "columns": columns})
    return text


class _Bound:
    """A question's legs bound to a fuser, so :func:`evals.tune.evaluate` can call it."""

    def __init__(self, query: dict, fuse):
        self.query, self.fuse = query, fuse

    def __call__(self) -> list[str]:
        return self.fuse(self.query["legs"], self.query)


_DECISION = ("Decision: re-scoring and graph expansion stay off by default (`[memory]`) "
             "unless a row improves the tuning sets without lowering any other set; see "
             "docs/decisions.md.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--out", type=Path, default=datasets.REPO_ROOT / "evals" / "results")
    args = parser.parse_args()
    from evals.run import log

    log(run(datasets.data_dir(args.data), args.out))
