"""Extractive answer quality of ``wiki ask`` on the handbook dev questions.

Every dev question is asked through :func:`wiki.answering.ask.ask` (the product path: hybrid
retrieval with the default legs, the gap rule, sentence extraction, the answer-type check;
no model, no revalidation) over the wiki built at the checkpoint
(:func:`evals.datasets.cached_handbook`), once per *variant* of the sentence picker. A
variant is a :class:`wiki.answering.sentence_scoring.PickerConfig` passed to
:func:`wiki.answering.ask.ask` (``picker=``); nothing here sets a module's globals.

Per answerable question (35, each with ``support: [{page, quote}]``):

* **support recall**: the share of its support quotes whose key words
  (:mod:`evals.keywords`: content words, stop words and link fragments left out) are at
  least half present in the answer's sentences; averaged over the questions (a false gap
  counts 0);
* **covered**: at least one support quote held; **gold cited**: a citation's entry comes
  from a support page;
* **sentences**, **characters**: of the answer (mean over the answered questions);
* **p50 ms**: median in-process ``ask`` wall time over all 41 questions (one warm-up ask
  first, so the model load is not counted);
* with ``--cli-runs N``: the median wall time of N ``wiki ask`` processes (bench section
  6's question, the embedding server as configured) for the product and the first fused
  variant.

The 6 unanswerable questions count the evidence gaps (should stay 6/6), the answerable
ones the false gaps. The questions are a *dev* set: the variants were chosen and compared
on them, so the numbers are optimistic for unseen questions.

    python -m evals.answers [--data DIR] [--out evals/results] [--cli-runs 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evals import embedcache
from evals.datasets import QUESTIONS, cached_handbook, data_dir, read_jsonl
from evals.keywords import holds
from evals.metrics import percentile
from evals.report import header, md_table, now, project_commit, write
from wiki.answering.sentence_scoring import PickerConfig


@dataclass(frozen=True)
class Variant:
    """A setting of the sentence picker: ``config`` is passed to :func:`wiki.answering.ask.ask`."""

    name: str
    what: str
    config: PickerConfig = field(default_factory=PickerConfig)
    synthesize: bool = False
    """The configured model writes the answer from the cited entries (only its verified
    sentences are kept, :mod:`wiki.llm.answer`); ``--llm MODEL`` adds such a variant."""


BM25_ONLY = PickerConfig(lexical=1.0, cosine=0.0, form=0.0, fragment_weight=1.0, floor=0.4)
"""The picker before issue 16 (BM25 ÷ √(1 + entry position), floor 0.4, places entry by
entry, at most 3 per entry first), except that the best sentence now opens the answer."""
VARIANTS = [
    Variant("picker", "BM25 + cosine (stored sentence vectors) + question form; the "
            "product (wiki.answering.picker.DEFAULT)", PickerConfig()),
    Variant("bm25-only", "BM25 alone, floor 0.4 (the picker before issue 16)", BM25_ONLY),
    Variant("bm25+cosine", "¼ BM25 + cosine, no form", PickerConfig(form=0.0)),
    Variant("bm25+form", "BM25 + form, no cosine", PickerConfig(cosine=0.0)),
]


def product_variant() -> str:
    """The name of the variant whose config is the product's picker."""
    from wiki.answering.picker import DEFAULT

    return next((v.name for v in VARIANTS if v.config == DEFAULT), "?")


def run_variant(wiki, variant: Variant, answerable: list[dict],
                unanswerable: list[dict]) -> dict:
    """One variant's rows and totals (see the module docstring)."""
    from wiki.answering.ask import ask_for
    from wiki.answering.search import is_gap

    rows, seconds = [], []
    ask_for(wiki, answerable[0]["question"], synthesize=variant.synthesize,
        revalidate=False, picker=variant.config)  # warm-up
    for question in [*answerable, *unanswerable]:
        started = time.perf_counter()
        answer = ask_for(wiki, question["question"], synthesize=variant.synthesize,
                     revalidate=False, picker=variant.config)
        seconds.append(time.perf_counter() - started)
        text = " ".join(t for t, _ in answer.sentences)
        support = question.get("support") or []
        held = [holds(s["quote"], text) for s in support]
        pages = {f"git:{s['page']}" for s in support} | {
            f"git:{p}" for p in question.get("gold") or []}
        rows.append({"id": question["id"], "answerable": bool(support),
                     "gap": answer.gap, "held": held,
                     "recall": sum(held) / len(held) if held else None,
                     "gold_cited": any(pages & set(c.sources) for c in answer.citations),
                     "sentences": len(answer.sentences), "chars": len(text),
                     "mode": answer.mode, "note": answer.note,
                     "reason": answer.gap_reason.code if answer.gap_reason else None,
                     "score": answer.answer_score, "form_missing": answer.form_missing,
                     "cosine": answer.sentence_cosine, "coverage": answer.coverage,
                     "missing_type": answer.missing_type,
                     "retrieval_gap": is_gap(True, answer.coverage, answer.top_cosine,
                                             answer.threshold, 0.54, 0.45),
                     "answer": [[t, n] for t, n in answer.sentences]})
    asked = [r for r in rows if r["answerable"]]
    answered = [r for r in asked if not r["gap"]]
    return {"variant": variant.name, "what": variant.what, "config": asdict(variant.config),
            "support_recall": statistics.mean(r["recall"] for r in asked),
            "covered": sum(any(r["held"]) for r in asked), "answerable": len(asked),
            "gold_cited": sum(r["gold_cited"] for r in asked),
            "sentences": statistics.mean(r["sentences"] for r in answered),
            "chars": statistics.mean(r["chars"] for r in answered),
            "false_gaps": sum(r["gap"] for r in asked),
            "gaps": sum(r["gap"] for r in rows if not r["answerable"]),
            "unanswerable": len(rows) - len(asked),
            "p50_ms": 1000 * percentile(seconds, 50), "rows": rows}


CHILD = """import sys
sys.path.insert(0, sys.argv[4])
sys.argv = ["wiki", "-C", sys.argv[2], "ask", sys.argv[3]]
from wiki_cli.app import main
main()
"""


def cli_latency(repo: Path, names: list[str], runs: int) -> dict[str, float]:
    """Median wall seconds of ``runs`` ``wiki ask`` processes per variant in ``names``
    (bench section 6's question; the runs alternate between the variants, after one
    untimed run each)."""
    from evals.bench import ASK_QUESTION, run_child

    walls: dict[str, list[float]] = {name: [] for name in names}
    saved = os.environ.get("WIKI_EMBED_SERVER")
    os.environ["WIKI_EMBED_SERVER"] = "auto"  # as `wiki ask` runs by default
    try:
        for attempt in range(runs + 1):
            for name in names:
                wall = run_child([sys.executable, "-c", CHILD, name, str(repo), ASK_QUESTION,
                                  str(Path(__file__).resolve().parent.parent)])[0]
                if attempt:
                    walls[name].append(wall)
    finally:
        if saved is None:
            os.environ.pop("WIKI_EMBED_SERVER", None)
        else:
            os.environ["WIKI_EMBED_SERVER"] = saved
    return {name: statistics.median(values) for name, values in walls.items()}


def markdown(results: list[dict], product: str) -> str:
    """The variants table and the per-question support held, before vs the product."""
    table = md_table(
        ["variant", "picker", "support recall", "≥1 quote held", "gold cited",
         "sentences", "chars", "false gaps", "gaps (unanswerable)", "p50 ask ms"],
        [[f"**{r['variant']}** (product)" if r["variant"] == product else r["variant"],
          r["what"],
          r["support_recall"], f"{r['covered']}/{r['answerable']}",
          f"{r['gold_cited']}/{r['answerable']}", f"{r['sentences']:.2f}",
          f"{r['chars']:.0f}", f"{r['false_gaps']}/{r['answerable']}",
          f"{r['gaps']}/{r['unanswerable']}", f"{r['p50_ms']:.0f}"] for r in results])
    first, chosen = results[0], next(r for r in results if r["variant"] == product)
    changed = [[a["id"], "".join("x" if h else "." for h in a["held"]),
                "".join("x" if h else "." for h in b["held"])]
               for a, b in zip(first["rows"], chosen["rows"], strict=True)
               if a["answerable"] and a["held"] != b["held"]]
    return "\n".join([
        "Support quotes held per question where the product differs from the first row "
        f"(`x` held, `.` not; {first['variant']} → {product}):", "",
        md_table(["question", first["variant"], product], changed) if changed else "(none)",
        "", table])


def main() -> None:
    """Run every variant; write evals/results/answers.md and .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--llm", metavar="MODEL", default=None,
                        help="only the product picker, extractive and written by MODEL "
                             "(e.g. local/qwen2.5-coder-1.5b): writes answers-llm.md")
    parser.add_argument("--questions", choices=("dev", "staff"), default="dev",
                        help="dev: questions-dev (41); staff: evals/questions/"
                             "handbook-staff.jsonl (writes answers-staff-<split>.md)")
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune",
                        help="the staff questions' half (default tune: choose on it)")
    parser.add_argument("--cli-runs", type=int, default=0,
                        help="also time N `wiki ask` processes, product vs fused-0.3-floor-0.6")
    args = parser.parse_args()
    data = data_dir(args.data)
    path, _ = cached_handbook(data)
    from wiki.store.workspace import Wiki

    wiki = Wiki(path)
    embedcache.seed_wiki(wiki)
    if args.questions == "staff":
        from evals.staff_questions import records

        rows = records(args.split)
        answerable = [r for r in rows if r["support"]]
        unanswerable = [r for r in rows if not r["support"]]
    else:
        answerable = read_jsonl(data / QUESTIONS / "answerable.jsonl")
        unanswerable = read_jsonl(data / QUESTIONS / "unanswerable.jsonl")
    product = product_variant()
    suffix = f"-staff-{args.split}" if args.questions == "staff" else ""
    variants, stem = VARIANTS, "answers" + suffix
    if args.llm:
        os.environ["WIKI_MODEL"] = args.llm
        base = next(v for v in VARIANTS if v.name == product)
        variants, stem = [base, Variant(f"llm {args.llm}", "the model writes the answer from "
                                        "the product picker's cited entries; only verified "
                                        "sentences kept", base.config, synthesize=True)], \
            "answers-llm" + suffix
    results = [run_variant(wiki, v, answerable, unanswerable) for v in variants]
    for result in results[1:]:  # answer texts of the first row and the product only
        for row in result["rows"] if result["variant"] != product else ():
            row.pop("answer")
    cli = cli_latency(path, [product], args.cli_runs) \
        if args.cli_runs else {}
    text = "\n".join([
        header("Extractive answers of `wiki ask` (handbook "
               + (f"staff questions, {args.split} half)" if suffix else "dev)"),
               {"date": now(), "project commit": project_commit(),
                "questions": f"{len(answerable)} answerable, {len(unanswerable)}"
                             + (f" unanswerable (staff set, {args.split} half)" if suffix
                                else " unanswerable (dev set: variants chosen on it)"),
                "retrieval": f"default legs, embedding model "
                             f"{embedcache.embedder().name}; "
                             f"{'model: ' + args.llm if args.llm else 'no LLM'}, no "
                             "revalidation",
                "support recall": "share of a question's support quotes with ≥ half "
                                  "their key words in the answer, mean over questions"}),
        "", markdown(results, product)])
    if cli:
        text += "\n\n" + "\n".join([
            f"`wiki ask` as a process (bench section 6's question, {args.cli_runs} runs "
            "each, alternating, through the embedding server as by default):", "",
            md_table(["variant", "median s"], [[k, f"{v:.3f}"] for k, v in cli.items()])])
    write(Path(args.out), stem, text,
          {"product": product, "cli_median_s": cli, "variants": results})
    print(text)


if __name__ == "__main__":
    main()
