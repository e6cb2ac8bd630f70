"""The staff-written handbook question set (issue 16, part 1): loader, split and checks.

``evals/questions/handbook-staff.jsonl`` holds questions written for this project by
reading the handbook pages at the checkpoint the eval wiki is built from
(:data:`evals.datasets.CHECKPOINT`), in the dev set's format (``questions-dev/README.md``):
``id``, ``question``, ``gold`` (page paths), ``answer`` (reference), ``support``
(``[{page, quote}]``, each quote verbatim in its page at the checkpoint), ``style``
(:data:`STYLES`), ``notes`` (unanswerable ones: the greps that show the handbook does not
say), plus ``split`` (``tune`` or ``test``).

The split was made once, by :func:`assign_splits` (a seeded hash of the id, stratified by
style), and is stored in the file; the file is the truth from then on. Questions added
later carry a new ``batch`` number and get their split from the same rule applied to
their batch alone, so the old questions are never re-split (batch 1: 155 questions;
batch 2: 12 who/where questions added before any default was tuned on the set). Tune on
``tune``; report ``test``.

    python -m evals.staff_questions [--data DIR]     # verify gold pages and quotes
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from evals.datasets import BUNDLE, CHECKPOINT, Question, data_dir, read_jsonl

PATH = Path(__file__).resolve().parent / "questions" / "handbook-staff.jsonl"
STYLES = ("exact", "howto", "yesno", "amount", "who", "where", "unanswerable")
SPLITS = ("tune", "test")
SEED = "issue16-handbook-staff"
"""The split's seed: changing it would re-split, which the set must never do."""


def split_key(question_id: str) -> str:
    """The order of ``question_id`` within its style: sha256 of ``SEED:id`` (hex)."""
    return hashlib.sha256(f"{SEED}:{question_id}".encode()).hexdigest()


def assign_splits(records: list[dict]) -> dict[str, str]:
    """``{id: "tune" | "test"}``: within each batch and style (``batch`` defaults to 1)
    the questions are ordered by :func:`split_key` and alternate tune, test, tune, ...
    (so each batch's style halves differ by at most one question, tune getting the odd
    one)."""
    by_style: dict[tuple, list[str]] = defaultdict(list)
    for record in records:
        by_style[(record.get("batch", 1), record["style"])].append(record["id"])
    splits = {}
    for ids in by_style.values():
        for position, question_id in enumerate(sorted(ids, key=split_key)):
            splits[question_id] = SPLITS[position % 2]
    return splits


def records(split: str | None = None, path: Path = PATH) -> list[dict]:
    """The question records of ``split`` (``tune``, ``test``; ``None`` or ``all``: every
    one), in file order. Raises ``ValueError`` for another split name."""
    if split not in (None, "all", *SPLITS):
        raise ValueError(f"unknown split {split!r} (tune, test or all)")
    rows = read_jsonl(path)
    return [r for r in rows if split in (None, "all") or r["split"] == split]


def questions(split: str | None = None, path: Path = PATH
              ) -> tuple[list[Question], list[Question]]:
    """``(answerable, unanswerable)`` as :class:`evals.datasets.Question`, like
    :func:`evals.datasets.handbook_questions`."""
    rows = records(split, path)
    make = [Question(r["id"], r["question"], list(r.get("gold") or []), r["style"])
            for r in rows]
    return [q for q in make if q.gold], [q for q in make if not q.gold]


def checkpoint_pages(data: Path, target: Path) -> Path:
    """Clone the handbook bundle into ``target`` at the checkpoint; returns ``target``."""
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(data / BUNDLE), str(target)],
                   check=True, capture_output=True)
    subprocess.run(["git", "-c", "advice.detachedHead=false", "checkout", "-q", CHECKPOINT],
                   cwd=target, check=True, capture_output=True)
    return target


def problems(rows: list[dict], pages_root: Path) -> list[str]:
    """What is wrong with ``rows`` against the checkout at ``pages_root``: a gold or
    support page that does not exist, a quote that is not verbatim in its page, an
    answerable question without support, an unanswerable one with gold, a bad style or
    split, a duplicate id. Empty when all is well."""
    found, seen = [], set()
    texts: dict[str, str | None] = {}

    def text(page: str) -> str | None:
        if page not in texts:
            path = pages_root / page
            texts[page] = path.read_text(encoding="utf-8") if path.is_file() else None
        return texts[page]

    for r in rows:
        qid = r.get("id")
        if qid in seen:
            found.append(f"{qid}: duplicate id")
        seen.add(qid)
        if r.get("style") not in STYLES:
            found.append(f"{qid}: style {r.get('style')!r}")
        if r.get("split") not in SPLITS:
            found.append(f"{qid}: split {r.get('split')!r}")
        unanswerable = r.get("style") == "unanswerable"
        if unanswerable and (r.get("gold") or r.get("support")):
            found.append(f"{qid}: unanswerable with gold/support")
        if not unanswerable and not r.get("support"):
            found.append(f"{qid}: answerable without support")
        for page in r.get("gold") or []:
            if text(page) is None:
                found.append(f"{qid}: gold page {page} missing at the checkpoint")
        for s in r.get("support") or []:
            body = text(s["page"])
            if body is None:
                found.append(f"{qid}: support page {s['page']} missing")
            elif s["quote"] not in body:
                found.append(f"{qid}: quote not verbatim in {s['page']}: {s['quote'][:60]!r}")
            if s["page"] not in (r.get("gold") or []):
                found.append(f"{qid}: support page {s['page']} not in gold")
    return found


def verify(data: Path, path: Path = PATH) -> list[str]:
    """:func:`problems` of the question file against a fresh checkout of the checkpoint."""
    with tempfile.TemporaryDirectory(prefix="handbook-staff-") as folder:
        return problems(records(None, path), checkpoint_pages(data, Path(folder) / "repo"))


def main() -> int:
    parser = argparse.ArgumentParser(description="verify the staff question set")
    parser.add_argument("--data", default=None)
    args = parser.parse_args()
    rows = records()
    found = verify(data_dir(args.data))
    for line in found:
        print(line)
    counts = defaultdict(int)
    for r in rows:
        counts[(r["style"], r["split"])] += 1
    print(f"{len(rows)} questions; " + ", ".join(
        f"{style} {counts[(style, 'tune')]}/{counts[(style, 'test')]}" for style in STYLES)
          + " (tune/test); " + ("all quotes verbatim" if not found else
                                f"{len(found)} problems"))
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
