"""Int8 quantization of the embedding model as a way to a cheaper build (issue 27 item 1):
speed and closeness to the float model on SciFact abstracts, and retrieval quality on
SciFact's train split (the tuning split; nothing here reads the test split).

    python -m evals.quantized_model [--sample 96] [--quality] [--out evals/results]

Three copies of all-MiniLM-L6-v2 on ONNX Runtime, one thread each, the same tokenizer and
mean pooling (:class:`indexes.embedding.onnx_embedder.OnnxEmbedder`):

* ``float``: the product's ONNX copy of the float weights (what ``wiki`` runs today);
* ``packaged-int8``: the registry package's int8 file (the default where the float
  weights are absent, :mod:`indexes.embedding.packaged_model`);
* ``dynamic-int8``: the float copy through ONNX Runtime's ``quantize_dynamic`` with
  per-channel int8 weights for the MatMul nodes only (the token embeddings stay float),
  made here in ``evals/.cache``.

Speed is CPU seconds per text over the first ``--sample`` SciFact abstracts (title + text,
256 tokens at most), after one warm-up batch; closeness is the cosine of each text's
vector to the float model's. With ``--quality`` the dynamic copy is registered as
embedder ``all-MiniLM-L6-v2-q8`` and ``python -m evals.run --dataset scifact --split train
--method vector --method hybrid`` runs with it; its rows are set beside the float model's
train rows in ``<out>/scifact.json``. Writes ``<out>/quantized-model.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from evals import datasets
from evals.report import header, md_table, now, project_commit, write

Q8_MODEL = "all-MiniLM-L6-v2-q8"
"""The registered name of the dynamic-int8 copy (evals only)."""
COLUMNS = ("recall@10", "mrr@10", "ndcg@10")
METHODS = ("vector", "hybrid")


def dynamic_copy(source: Path) -> Path:
    """The per-channel, MatMul-only dynamic int8 copy of the ONNX model at ``source``, made
    once in ``evals/.cache`` (named by the source's file name)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = datasets.CACHE_DIR / f"{source.stem}-q8pc-matmul.onnx"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".partial.onnx")
        quantize_dynamic(str(source), str(partial), weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"])
        partial.replace(target)
    return target


def _float_copy() -> Path:
    """The product's float ONNX copy, exported first if this machine has none."""
    from indexes.embedding import embedders
    from indexes.embedding.onnx_embedder import onnx_copy_path

    path = onnx_copy_path()
    if not path.exists():
        embedders.load(embedders.DEFAULT_MODEL).encode(["warm up"])  # exports the copy
    return path


def _packaged_copy() -> tuple[Path, Path] | None:
    """``(model.onnx, tokenizer.json)`` of the registry package, or ``None`` where it is
    not installed."""
    from indexes.embedding.embedders import EmbedderUnavailableError
    from indexes.embedding.packaged_model import model_files

    try:
        return model_files()
    except EmbedderUnavailableError:
        return None


def _abstracts(data: Path, count: int) -> list[str]:
    texts = []
    with (data / "beir-scifact" / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            doc = json.loads(line)
            texts.append(f"{doc['title']} {doc['text']}")
            if len(texts) >= count:
                break
    return texts


def speed(copies: dict[str, tuple[Path, Path | None]],
          texts: list[str]) -> tuple[list[dict], dict]:
    """One row per copy (``name -> (model file, its tokenizer or None for the float
    weights' own)``): CPU s per text (one thread) and cosine to ``float``'s vectors."""
    from indexes.embedding.onnx_embedder import OnnxEmbedder

    vectors, rows = {}, []
    for name, (path, tokenizer) in copies.items():
        model = OnnxEmbedder(path, threads=1, tokenizer=tokenizer)
        model.encode(texts[:8])
        start = time.process_time()
        vectors[name] = model.encode(texts)
        cpu = time.process_time() - start
        rows.append({"copy": name, "file MB": round(path.stat().st_size / 1e6, 1),
                     "texts": len(texts), "CPU s": round(cpu, 2),
                     "texts per CPU s": round(len(texts) / cpu, 2)})
    for row in rows:
        cosine = (vectors["float"] * vectors[row["copy"]]).sum(axis=1)
        row["cosine to float, min"] = round(float(cosine.min()), 4)
        row["cosine to float, mean"] = round(float(cosine.mean()), 4)
    base = next(r for r in rows if r["copy"] == "float")["CPU s"]
    for row in rows:
        row["speed-up"] = round(base / row["CPU s"], 2)
    return rows, vectors


def quality(q8_path: Path, out: Path) -> dict:
    """SciFact train rows (:data:`METHODS`) with the dynamic copy, beside the float model's
    rows from ``out/scifact.json``."""
    from evals import run
    from indexes.embedding import embedders
    from indexes.embedding.onnx_embedder import OnnxEmbedder

    class Q8(OnnxEmbedder):
        name = Q8_MODEL

    embedders.register(Q8_MODEL, lambda: Q8(q8_path))
    os.environ["EVAL_EMBED_MODEL"] = Q8_MODEL
    with tempfile.TemporaryDirectory() as folder:
        run.main(["--dataset", "scifact", "--split", "train",
                  *(a for m in METHODS for a in ("--method", m)), "--out", folder])
        new = json.loads((Path(folder) / "scifact.json").read_text())["results"]["train"]
    base = json.loads((out / "scifact.json").read_text())["results"]["train"]
    return {m: {"float": {c: base[m][c] for c in COLUMNS},
                Q8_MODEL: {c: new[m][c] for c in COLUMNS}} for m in METHODS}


def main(argv: list[str] | None = None) -> int:
    """Write the tables; exit 0."""
    parser = argparse.ArgumentParser(prog="python -m evals.quantized_model",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", help="shared data folder (default $WIKI_DATA or "
                        "../shared/data)")
    parser.add_argument("--sample", type=int, default=96)
    parser.add_argument("--quality", action="store_true")
    parser.add_argument("--out", type=Path, default=datasets.REPO_ROOT / "evals" / "results")
    args = parser.parse_args(argv)
    data = datasets.data_dir(args.data)
    float_path = _float_copy()
    q8_path = dynamic_copy(float_path)
    copies: dict[str, tuple[Path, Path | None]] = {"float": (float_path, None)}
    packaged = _packaged_copy()
    if packaged is not None:
        copies["packaged-int8"] = packaged
    copies["dynamic-int8"] = (q8_path, None)
    rows, _ = speed(copies, _abstracts(data, args.sample))
    payload = {"date": now(), "project commit": project_commit(),
               "machine": f"{os.cpu_count()} CPUs",
               "sample": f"the first {args.sample} SciFact abstracts (title + text, at most "
                         "256 tokens), one ONNX Runtime thread, after a warm-up batch",
               "load average at the end": f"{os.getloadavg()[0]:.1f}"}
    parts = [header("Int8 embedding model: speed, closeness, SciFact train", payload),
             "## Speed and closeness to the float model",
             md_table(list(rows[0]), [list(r.values()) for r in rows])]
    payload["speed"] = rows
    if args.quality:
        payload["quality"] = quality(q8_path, args.out)
        table = [[m, name, *(values[c] for c in COLUMNS)]
                 for m, models in payload["quality"].items() for name, values in models.items()]
        parts += ["## SciFact train (809 queries); the float model's rows from scifact.json",
                  md_table(["method", "model", *COLUMNS], table)]
    write(args.out, "quantized-model", "\n\n".join(parts), payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
