"""What sign bits cost the vector leg in quality (docs/decisions.md, "Sign bits for the
vector leg").

From ``SignBits.from_rows`` chunk vectors on (:mod:`indexes.retrieval.sign_bits`), the
vector leg scores exactly only the ``SignBits.share`` of chunks nearest by Hamming
distance of their sign bits. The scale index's vectors are synthetic,
so the recall of that choice is measured on real ones: SciFact's 8,778 chunk vectors
(all-MiniLM-L6-v2), forcing the sign-bit path (``from_rows=0``) with the share
alone deciding how many are scored (``least=0``: at SciFact's size the minimum
would score a quarter of the chunks and flatter the result). Reported per split: the
recall of the exact top 10 and top 50 documents, and the vector leg's and the hybrid's
nDCG@10 and recall@10 against SciFact's relevance judgements, exact and with sign bits.
The share was chosen on the train split; the test split is reported.

Writes ``evals/results/sign-bits.md`` / ``.json``.

    python -m evals.sign_bits [--data DIR] [--out evals/results]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from evals import datasets, embedcache
from evals.backends import measure
from evals.methods import Target
from evals.report import header, md_table, now, project_commit, write
from indexes.retrieval.sign_bits import SignBits
from indexes.sqlite.vectors import nearest

RESULTS = Path(__file__).resolve().parent / "results"


EXACT = SignBits(from_rows=10 ** 12)
FORCED = SignBits(from_rows=0, least=0)
"""The sign-bit path at any size, the share alone deciding how many chunks are scored."""


def overlap(matrix, vectors: np.ndarray, limit: int) -> tuple[float, float]:
    """Mean and least share of the exact top ``limit`` documents the sign-bit path also
    returns, over the query ``vectors``."""
    shares = []
    for query in vectors:
        exact = {k for k, _ in nearest(matrix, query, rows=None, limit=limit,
                                       sign_bits=EXACT)}
        found = {k for k, _ in nearest(matrix, query, rows=None, limit=limit,
                                       sign_bits=FORCED)}
        shares.append(len(exact & found) / len(exact))
    return round(float(np.mean(shares)), 4), round(float(min(shares)), 3)


def run(data: Path) -> dict:
    model = embedcache.embedder()
    index = datasets.scifact_index(data)
    embedcache.embed_index(index, model)
    matrix = index.vectors.matrix(model.name, model.dim)
    out: dict = {"chunks": int(matrix.vectors.shape[0]), "documents": len(matrix.keys),
                 "scored_share": FORCED.share, "splits": {}}
    try:
        for split_name in ("train", "test"):
            split = datasets.scifact_split(data, split_name)
            queries = list(split.queries.values())
            vectors = model.encode(queries)
            row: dict = {"queries": len(queries)}
            for limit in (10, 50):
                row[f"top {limit} kept"] = overlap(matrix, vectors, limit)
            questions = [(split.queries[q], split.qrels[q]) for q in split.queries]
            for on in (False, True):
                index.vectors.sign_bits = FORCED if on else EXACT
                found = measure(Target("scifact", index), questions, ["vector", "hybrid"], 10)
                for method, metrics in found.items():
                    label = f"{method} {'sign bits' if on else 'exact'}"
                    row[label] = {m: metrics[m] for m in ("ndcg@10", "recall@10")}
            out["splits"][split_name] = row
    finally:
        index.close()
    return out


def markdown(result: dict) -> str:
    rows = []
    for split, row in result["splits"].items():
        for method in ("vector", "hybrid"):
            exact, bits = row[f"{method} exact"], row[f"{method} sign bits"]
            rows.append([split, row["queries"], method, exact["ndcg@10"], bits["ndcg@10"],
                         exact["recall@10"], bits["recall@10"],
                         "{} (least {})".format(*row["top 10 kept"]),
                         "{} (least {})".format(*row["top 50 kept"])])
    table = md_table(["split", "queries", "method", "nDCG@10 exact", "nDCG@10 sign bits",
                      "recall@10 exact", "recall@10 sign bits", "exact top 10 kept",
                      "exact top 50 kept"], rows)
    facts = {"date": now(), "project commit": project_commit()}
    return (header("Sign bits for the vector leg: quality", facts) + "\n\n"
            f"SciFact, {result['documents']:,} documents, {result['chunks']:,} chunk vectors "
            f"(all-MiniLM-L6-v2); the sign-bit path forced, scoring "
            f"{result['scored_share']:.0%} of the chunks exactly (no minimum). The share "
            "was chosen on the train split.\n\n" + table + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.sign_bits", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    result = run(datasets.data_dir(args.data))
    write(args.out, "sign-bits", markdown(result), result)
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
