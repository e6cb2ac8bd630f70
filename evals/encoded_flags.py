"""False flags of the instruction rules on real text (issue 25, item 10): the scanner
(:func:`wiki.safety.scan.scan`) over every 18F handbook page at HEAD, every distinct version
of a page in the handbook's history, and every SciFact document (title and abstract). Counts
the documents with a finding per instruction rule (every I-row is an instruction to nobody in
these corpora, so each is a false flag) and the scan time.

    python -m evals.encoded_flags --label after       # this checkout's table
    PYTHONPATH=<other checkout> python -m evals.encoded_flags --label before

Each run writes ``evals/results/encoded-flags-<label>.json``; the markdown table
``evals/results/encoded-flags.md`` is rewritten from every JSON there.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

from evals.datasets import BUNDLE, SCIFACT, data_dir, read_jsonl
from wiki.safety.patterns import INSTRUCTION, PATTERNS
from wiki.safety.scan import scan

RESULTS = Path(__file__).parent / "results"


def handbook_texts(data: Path) -> tuple[list[str], list[str]]:
    """(pages at HEAD, every distinct markdown blob of the bundle's history)."""
    head = [p.read_text(encoding="utf-8", errors="replace")
            for p in sorted((data / "handbook-18f" / "snapshot").rglob("*.md"))]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "clone", "-q", "--bare", str(data / BUNDLE), tmp], check=True)
        listed = subprocess.run(["git", "-C", tmp, "rev-list", "--objects", "--all"],
                                check=True, capture_output=True, text=True).stdout
        shas = sorted({line.split(" ", 1)[0] for line in listed.splitlines()
                       if line.endswith(".md")})
        blobs = subprocess.run(["git", "-C", tmp, "cat-file", "--batch"],
                               input="".join(f"{s}\n" for s in shas).encode(),
                               check=True, capture_output=True).stdout
    history, offset = [], 0
    while offset < len(blobs):
        header_end = blobs.index(b"\n", offset)
        parts = blobs[offset:header_end].split()
        size = int(parts[2]) if len(parts) == 3 and parts[1] == b"blob" else 0
        history.append(blobs[header_end + 1:header_end + 1 + size].decode("utf-8", "replace"))
        offset = header_end + 1 + size + 1
    return head, history


def scifact_texts(data: Path) -> list[str]:
    """Every SciFact corpus document as ``title\\n\\nabstract``."""
    return [f"{d.get('title', '')}\n\n{d.get('text', '')}"
            for d in read_jsonl(data / SCIFACT / "corpus.jsonl")]


def measure(texts: list[str]) -> dict:
    """Documents flagged per instruction rule, and scan time."""
    rules = [p.rule for p in PATTERNS if p.category == INSTRUCTION]
    flagged: Counter[str] = Counter()
    start = time.perf_counter()
    for text in texts:
        flagged.update({f.rule for f in scan(text) if f.category == INSTRUCTION})
    seconds = time.perf_counter() - start
    size = sum(len(t.encode("utf-8")) for t in texts)
    return {"documents": len(texts), "megabytes": round(size / 1e6, 2),
            "scan_seconds": round(seconds, 2), "ms_per_mb": round(seconds * 1000 / (size / 1e6), 1),
            "flagged": {r: flagged.get(r, 0) for r in rules}}


def write_table() -> Path:
    """``encoded-flags.md`` from every ``encoded-flags-*.json``."""
    rows = ["| code | corpus | documents | MB | scan s | ms/MB | I005 | I008 | other I-rules |",
            "|---|---|---|---|---|---|---|---|---|"]
    for path in sorted(RESULTS.glob("encoded-flags-*.json")):
        result = json.loads(path.read_text())
        for corpus, m in result["corpora"].items():
            other = sum(n for r, n in m["flagged"].items() if r not in ("I005", "I008"))
            rows.append(f"| {result['label']} | {corpus} | {m['documents']} | {m['megabytes']} "
                        f"| {m['scan_seconds']} | {m['ms_per_mb']} | "
                        f"{m['flagged'].get('I005', 0)} | {m['flagged'].get('I008', '-')} | "
                        f"{other} |")
    target = RESULTS / "encoded-flags.md"
    target.write_text("# Instruction-rule flags on real text (documents flagged)\n\n"
                      "`python -m evals.encoded_flags --label LABEL`; every flag on these "
                      "corpora is a false flag. I008 (`-`: the rule does not exist in that "
                      "code) is the encoded-instruction rule.\n\n" + "\n".join(rows) + "\n")
    return target


def main() -> None:
    """Measure the three corpora, write the JSON of ``--label`` and the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True)
    parser.add_argument("--data")
    args = parser.parse_args()
    data = data_dir(args.data)
    head, history = handbook_texts(data)
    corpora = {"handbook HEAD": head, "handbook history": history,
               "scifact": scifact_texts(data)}
    result = {"label": args.label,
              "corpora": {name: measure(texts) for name, texts in corpora.items()}}
    (RESULTS / f"encoded-flags-{args.label}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(write_table().read_text())


if __name__ == "__main__":
    main()
