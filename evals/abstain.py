"""Per-question abstention features and the search for a simple gap rule.

Features of one hybrid retrieval (``Retrieved.legs`` and the fused list):

* ``coverage``: IDF-weighted lexical coverage of the top fused hit (the product's
  ``SearchResult.confidence``); ``bm25_coverage``: the same for the BM25 leg's first hit;
  ``max3_coverage``: the best coverage among the first three fused hits;
  ``phrase_coverage``: share of the query's word pairs (adjacent, neither a stopword)
  found as a phrase in one of the first three fused hits (1.0 without such pairs);
* ``top_cos`` / ``cos_margin``: cosine of the vector leg's first hit, minus its second's;
* ``bm25_top``: BM25 score of the lexical leg's first hit (0 when it found nothing);
* ``same_top``: 1 when the BM25 and vector legs have the same first hit;
* ``agreement``: |top-5 BM25 ∩ top-5 vector| / 5;
* ``fused``: the fused score of the first hit.

A *rule* says "gap" when a feature is below a threshold (``coverage < 0.4``), or for two
features when both (``and``) or either (``or``) are below theirs.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

FEATURES = ("coverage", "bm25_coverage", "max3_coverage", "phrase_coverage", "top_cos",
            "cos_margin",
            "bm25_top", "same_top", "agreement", "fused")


SCALE_FREE = ("coverage", "bm25_coverage", "max3_coverage", "phrase_coverage", "top_cos",
              "cos_margin", "same_top", "agreement")
"""Features whose scale does not depend on the index size (raw BM25 and RRF scores do):
the only ones a rule may use."""
PROPOSED = [
    {"features": ["coverage"], "thresholds": [0.4], "op": "and",
     "label": "product today (hybrid top hit)"},
    {"features": ["bm25_coverage"], "thresholds": [0.4], "op": "and",
     "label": "product rule on the BM25 leg's top hit"},
    {"features": ["bm25_coverage", "top_cos"], "thresholds": [0.54, 0.45], "op": "and",
     "label": "proposed"},
    {"features": ["top_cos", "cos_margin"], "thresholds": [0.47, 0.05], "op": "and",
     "label": "5/6 at 2 false gaps"},
]


def features(retrieved) -> dict[str, float]:
    """The features of one hybrid :class:`evals.methods.Retrieved`."""
    if "later" in retrieved.extra:
        retrieved.extra.update(retrieved.extra.pop("later")())
    legs = retrieved.legs or {}
    vec, lex = legs.get("vector") or [], legs.get("bm25") or []
    top5 = {h.key for h in lex[:5]}
    return {
        "coverage": retrieved.confidence or 0.0,
        "bm25_coverage": retrieved.extra.get("bm25_coverage", 0.0),
        "max3_coverage": retrieved.extra.get("max3_coverage", 0.0),
        "phrase_coverage": retrieved.extra.get("phrase_coverage", 1.0),
        "top_cos": vec[0].score if vec else 0.0,
        "cos_margin": vec[0].score - vec[1].score if len(vec) > 1 else 0.0,
        "bm25_top": lex[0].score if lex else 0.0,
        "same_top": float(bool(vec and lex and vec[0].key == lex[0].key)),
        "agreement": len(top5.intersection(h.key for h in vec[:5])) / 5,
        "fused": retrieved.scores[0] if retrieved.scores else 0.0,
    }


def word_pairs(query: str) -> list[str]:
    """Adjacent word pairs of ``query`` where neither word is a stopword."""
    import re

    from indexes.retrieval.query import STOPWORDS

    words = re.findall(r"[^\W_]+(?:-[^\W_]+)*", query.casefold())
    return [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)
            if a not in STOPWORDS and b not in STOPWORDS]


def phrase_coverage(index, query: str, keys: Sequence[str]) -> float:
    """Share of :func:`word_pairs` found as an FTS5 phrase in one of ``keys``."""
    from indexes.retrieval.query import quote

    pairs = word_pairs(query)
    if not pairs or not keys:
        return 1.0 if not pairs else 0.0
    marks = ",".join("?" * len(keys))
    found = sum(1 for pair in pairs if index.conn.execute(
        "SELECT 1 FROM docs_fts JOIN docs d ON d.rowid = docs_fts.rowid WHERE docs_fts "
        f"MATCH ? AND d.key IN ({marks}) LIMIT 1", [quote(pair), *keys]).fetchone())
    return found / len(pairs)


def gaps(rows: Sequence[dict], rule: dict) -> int:
    """How many feature rows the rule marks as a gap."""
    return sum(1 for r in rows if is_gap(r, rule))


def is_gap(row: dict, rule: dict) -> bool:
    below = [row[f] < t for f, t in zip(rule["features"], rule["thresholds"], strict=True)]
    return all(below) if rule.get("op", "and") == "and" else any(below)


def candidates(values: Sequence[float]) -> list[float]:
    """Thresholds between consecutive distinct values (and just above the largest)."""
    ordered = sorted(set(values))
    mids = [(a + b) / 2 for a, b in zip(ordered, ordered[1:], strict=False)]
    return [*mids, ordered[-1] + 1e-9] if ordered else []


def best_rules(answerable: Sequence[dict], unanswerable: Sequence[dict], *,
               max_false: int = 1, top: int = 5, names: Sequence[str] = SCALE_FREE) -> list[dict]:
    """Rules ranked by (unanswerable gaps, -false gaps, margin): single features and
    pairs (``and`` / ``or``), with at most ``max_false`` false gaps on ``answerable``.
    The *margin* is the distance of the threshold(s) from the nearest feature value
    (relative to the feature's spread), so wide-open thresholds win ties."""
    rows = [*answerable, *unanswerable]
    spread = {f: (max(r[f] for r in rows) - min(r[f] for r in rows)) or 1.0 for f in names}
    cuts = {f: candidates([r[f] for r in rows]) for f in names}
    found = []

    def consider(rule: dict) -> None:
        false = gaps(answerable, rule)
        if false > max_false:
            return
        margin = min(min(abs(r[f] - t) for r in rows) / spread[f]
                     for f, t in zip(rule["features"], rule["thresholds"], strict=True))
        found.append({**rule, "gaps": gaps(unanswerable, rule), "false_gaps": false,
                      "margin": margin})

    for f in names:
        for t in cuts[f]:
            consider({"features": [f], "thresholds": [t], "op": "and"})
    for f, g in combinations(names, 2):
        for t in cuts[f]:
            for u in cuts[g]:
                for op in ("and", "or"):
                    consider({"features": [f, g], "thresholds": [t, u], "op": op})
    found.sort(key=lambda r: (-r["gaps"], r["false_gaps"], len(r["features"]), -r["margin"]))
    return found[:top]


def describe(rule: dict) -> str:
    parts = [f"{f} < {t:.3f}" for f, t in zip(rule["features"], rule["thresholds"],
                                               strict=True)]
    return f" {rule['op']} ".join(parts)


def report(results: str = "evals/results", method: str = "hybrid",
           unit: str = "session", out: str | None = None) -> str:
    """Fit rules on the handbook dev features (``handbook.json``), apply the best ones to
    LoCoMo (the last run's rows, ``evals/.cache/locomo-questions.json``: adversarial =
    should gap, categories 1-4 = should not), by
    half; writes ``abstention.md/json``."""
    import json
    from pathlib import Path

    from evals.report import md_table, now, write

    folder = Path(results)
    hand = json.loads((folder / "handbook.json").read_text())["questions"][method]
    answerable = [d["features"] for d in hand if d["gold"]]
    unanswerable = [d["features"] for d in hand if not d["gold"]]
    rules = best_rules(answerable, unanswerable, max_false=1, top=5)
    from evals.locomo import DETAILS

    loco = json.loads(DETAILS.read_text())[f"{unit}/{method}"]
    rows = []
    for rule in [*PROPOSED, *rules]:
        row = [describe(rule) + (f" ({rule['label']})" if "label" in rule else ""),
               gaps(unanswerable, rule), gaps(answerable, rule)]
        for half in ("tune", "held-out"):
            adv = [q["features"] for q in loco if q["category"] == 5 and q["half"] == half]
            ok = [q["features"] for q in loco if q["category"] != 5 and q["half"] == half]
            row += [gaps(adv, rule) / len(adv), gaps(ok, rule) / len(ok)]
        rows.append(row)
    headers = ["rule (gap when)", f"handbook gaps /{len(unanswerable)}",
               f"handbook false gaps /{len(answerable)}",
               "LoCoMo tune: adversarial gap rate", "tune: false gap rate (cat 1-4)",
               "held-out: adversarial gap rate", "held-out: false gap rate"]
    table = [f"# Abstention rules (fitted on the handbook dev set, {method}; LoCoMo "
             f"{unit}s not used for fitting)\n\n- **date**: {now()}\n\nThe first "
             "four rows: fixed rules (the product's today, and the proposed); then the best "
             "searched rules (scale-free features, at most 1 false gap). Features: see "
             "evals/abstain.py.\n",
             md_table(headers, rows), "", "## Feature means", "",
             md_table(["set", *FEATURES], [
                 [name, *(sum(r[f] for r in group) / len(group) for f in FEATURES)]
                 for name, group in (
                     ("handbook answerable", answerable),
                     ("handbook unanswerable", unanswerable),
                     ("locomo cat 1-4", [q["features"] for q in loco if q["category"] != 5]),
                     ("locomo adversarial", [q["features"] for q in loco
                                             if q["category"] == 5]))])]
    write(Path(out) if out else folder, "abstention", "\n".join(table),
          {"headers": headers, "rows": rows, "rules": rules})
    return "\n".join(table)


if __name__ == "__main__":
    import sys

    print(report(*sys.argv[1:2], out=sys.argv[2] if len(sys.argv) > 2 else None))
