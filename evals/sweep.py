"""Sweeps and diagnostics over the legs collected by :mod:`evals.tune` (tuning splits)."""

from __future__ import annotations

import statistics
from collections import Counter
from functools import partial
from pathlib import Path

from evals import fusion_variants as fv
from evals.report import md_table, now, write
from evals.tune import CUT, evaluate, load

OUT = Path(__file__).resolve().parent / "results"
SETS = [("scifact-train", None, "ndcg@10"), ("handbook", None, "recall@10"),
        ("handbook", None, "hit@3"), ("locomo-session", "tune", "recall@5"),
        ("locomo-turn", "tune", "recall@5")]
HELD = [("scifact-test", None, "ndcg@10"), ("locomo-session", "held-out", "recall@5"),
        ("locomo-turn", "held-out", "recall@5")]


def _cut(name: str) -> int:
    return CUT["scifact" if name.startswith("scifact") else name.split("-w")[0]]


def score(bundles: dict, fuse, sets=SETS) -> list[float]:
    return [evaluate(bundles[n], fuse, cut=_cut(n), split=s)[m] for n, s, m in sets]


def variants():
    yield "bm25 only", partial(fv.rrf, weights={"alias": 0, "vector": 0})
    yield "vector only", partial(fv.rrf, weights={"alias": 0, "bm25": 0})
    for k in (60, 20, 10, 5, 2):
        for wv in (1.0, 0.75, 0.5):
            for window in (50, 20, 10):
                yield (f"rrf k={k} window={window} vector={wv}",
                       partial(fv.rrf, k=k, window=window, weights={"vector": wv}))
    for k in (60, 20, 10):
        for floor, cap in ((0.25, 4.0), (0.5, 3.0), (1.0, 3.0)):
            yield (f"rrf_conf k={k} floor={floor} cap={cap}",
                   partial(fv.rrf_conf, k=k, floor=floor, cap=cap))
    for wv in (1.0, 0.75, 0.5):
        for window in (50, 20, 10):
            yield (f"zsum window={window} vector={wv}",
                   partial(fv.zsum, window=window, weights={"vector": wv}))


def fine():
    yield "rrf k=60 window=50 vector=1.0 (default)", partial(fv.rrf)
    yield "rrf k=5 window=50 vector=0.75", partial(fv.rrf, k=5, weights={"vector": 0.75})
    for wv in (0.6, 0.75, 0.9):
        for window in (30, 50, 100):
            yield (f"zsum window={window} vector={wv}",
                   partial(fv.zsum, window=window, weights={"vector": wv}))
        for window in (20, 50):
            yield (f"minmax window={window} vector={wv}",
                   partial(fv.minmax, window=window, weights={"vector": wv}))


def sweep(data, names=("scifact-train", "scifact-test", "handbook", "locomo-session",
                       "locomo-turn"), family=variants, stem="tuning") -> str:
    bundles = {n: load(n) for n in names}
    rows = []
    for label, fuse in family():
        rows.append([label, *score(bundles, fuse), *score(bundles, fuse, HELD)])
        print(" | ".join(str(c) if isinstance(c, str) else f"{c:.3f}" for c in rows[-1]),
              flush=True)
    headers = ["variant", *(f"{n}{'/' + s if s else ''} {m}" for n, s, m in SETS),
               *(f"HELD {n}{'/' + s if s else ''} {m}" for n, s, m in HELD)]
    text = [f"# Fusion sweep (tuning splits; HELD columns are reported, not used)\n\n"
            f"- **date**: {now()}\n", md_table(headers, rows)]
    write(OUT, stem, "\n".join(text), {"headers": headers, "rows": rows})
    return "\n".join(text)


def chunks(data) -> str:
    """LoCoMo sessions at several chunk sizes: vector alone, default RRF, tuned fusions."""
    rows = []
    for words in (60, 100, 180, 300):
        name = "locomo-session" + ("" if words == 180 else f"-w{words}")
        bundle = load(name)
        for label, fuse in [("vector only", partial(fv.rrf, weights={"alias": 0, "bm25": 0})),
                            ("rrf k=60", partial(fv.rrf)),
                            ("zsum vector=0.75", partial(fv.zsum, weights={"vector": 0.75}))]:
            rows.append([words, label, *(evaluate(bundle, fuse, cut=40, split=s)["recall@5"]
                                         for s in ("tune", "held-out"))])
    text = "\n".join([f"# LoCoMo session chunk size (recall@5)\n\n- **date**: {now()}\n",
                      md_table(["chunk words", "fusion", "tune", "held-out"], rows)])
    write(OUT, "tuning-chunks", text)
    print(text)
    return text


def chunks_scifact(data) -> str:
    """SciFact at several vector chunk sizes (nDCG@10): vector alone and the product's
    fusion; chosen on train, test only reported."""
    rows = []
    for words in (100, 180, 300, 1000):
        suffix = "" if words == 180 else f"-w{words}"
        bundles = {split: load(f"scifact-{split}{suffix}") for split in ("train", "test")}
        for label, fuse in [("vector only", partial(fv.rrf, weights={"alias": 0, "bm25": 0})),
                            ("zsum vector=0.75", partial(fv.zsum, weights={"vector": 0.75}))]:
            rows.append([words, label, *(evaluate(bundles[s], fuse, cut=100)["ndcg@10"]
                                         for s in ("train", "test"))])
    text = "\n".join([f"# SciFact vector chunk size (nDCG@10; chosen on train, test "
                      f"reported)\n\n- **date**: {now()}\n"
                      "- 1000 words = each abstract whole but for 5 of 5,183; the model reads only "
                      "the first 256 tokens (~190 words) of "
                      "any chunk\n",
                      md_table(["chunk words", "fusion", "train", "HELD test"], rows)])
    write(OUT, "tuning-chunks-scifact", text)
    print(text)
    return text


def sweep_fine(data) -> str:
    return sweep(data, family=fine, stem="tuning-fine")


def first_gold(hits, gold, units) -> int | None:
    seen = []
    for key, _ in hits:
        for unit in (units[key] if units else [key]):
            if unit not in seen:
                seen.append(unit)
                if unit in gold:
                    return len(seen)
    return None


def diagnose(data) -> str:
    text = [f"# Why equal-weight RRF loses to BM25 on LoCoMo (tuning half)\n\n- **date**: "
            f"{now()}"]
    for name, split in (("locomo-session", "tune"), ("locomo-turn", "tune"),
                        ("scifact-train", None)):
        bundle = load(name)
        qs = [q for q in bundle["queries"] if q["gold"] and q.get("category") != 5
              and (split is None or q["split"] == split)]
        ranks = {leg: [first_gold(q["legs"].get(leg, []), q["gold"], bundle["units"])
                       for q in qs] for leg in ("bm25", "vector")}
        fused = [first_gold([(k, 0) for k in fv.rrf(q["legs"])], q["gold"], bundle["units"])
                 for q in qs]
        rows = []
        for label, values in (*ranks.items(), ("rrf k=60", fused)):
            c = Counter(min(r, 11) if r else 99 for r in values)
            rows.append([label, *(c[i] / len(qs) for i in (1, 2, 3)),
                         sum(c[i] for i in range(4, 6)) / len(qs),
                         sum(c[i] for i in range(6, 11)) / len(qs), (c[11] + c[99]) / len(qs)])
        both = Counter((ranks["bm25"][i] == 1, ranks["vector"][i] == 1) for i in range(len(qs)))
        peak = {leg: {True: [], False: []} for leg in ("bm25", "vector")}
        for q, rb, rv in zip(qs, ranks["bm25"], ranks["vector"], strict=True):
            for leg, r in (("bm25", rb), ("vector", rv)):
                scores = [s for _, s in q["legs"].get(leg, [])]
                if scores:
                    peak[leg][r == 1].append(fv.peakedness(scores))
        listed = statistics.fmean(len(q["legs"].get("vector", [])) for q in qs)
        text += ["", f"## {name}{' / ' + split if split else ''}: {len(qs)} questions, "
                     f"{listed:.0f} units offered per leg on average", "",
                 "Share of questions whose first gold unit is at rank:", "",
                 md_table(["leg", "1", "2", "3", "4-5", "6-10", ">10 or none"], rows), "",
                 f"rank 1 correct: both {both[(True, True)] / len(qs):.3f}, bm25 only "
                 f"{both[(True, False)] / len(qs):.3f}, vector only "
                 f"{both[(False, True)] / len(qs):.3f}, neither "
                 f"{both[(False, False)] / len(qs):.3f}", "",
                 md_table(["leg", "peakedness when rank 1 is gold (mean)",
                           "when rank 1 is wrong (mean)"],
                          [[leg, statistics.fmean(p[True] or [0]),
                            statistics.fmean(p[False] or [0])] for leg, p in peak.items()])]
    write(OUT, "diagnosis", "\n".join(text))
    print("\n".join(text))
    return "\n".join(text)
