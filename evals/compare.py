"""Compare two folders of eval results, number by number, ignoring what a re-run always changes.

    python -m evals.compare BASE_DIR NEW_DIR

Walks every ``*.json`` result present in both folders and prints each value that differs,
skipping keys that hold timings or run metadata (dates, commits, proposal names,
latencies: :data:`VOLATILE`). Exit 0 when nothing else differs, 1 otherwise. Used to show
that a refactor leaves every quality number where it was (docs/decisions.md, "Structure").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

VOLATILE = re.compile(r"(ms|time|seconds|_s$|p50|p95|date|commit|proposal|elapsed|wall|"
                      r"latency|per_s|rate|took|duration)", re.I)
"""Keys whose values change on every run (timings, dates, commits, generated names)."""

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ?")


def differences(base, new, path: str = "") -> list[str]:
    """``path: base -> new`` for each differing leaf of two JSON values, volatile keys
    skipped and ISO timestamps inside strings masked."""
    if isinstance(base, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(base) | set(new), key=str):
            if VOLATILE.search(str(key)):
                continue
            if key not in base or key not in new:
                out.append(f"{path}.{key}: only in {'new' if key in new else 'base'}")
                continue
            out += differences(base[key], new[key], f"{path}.{key}")
        return out
    if isinstance(base, list) and isinstance(new, list):
        if len(base) != len(new):
            return [f"{path}: {len(base)} items -> {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(base, new, strict=True))
                for d in differences(a, b, f"{path}[{i}]")]
    if isinstance(base, str) and isinstance(new, str):
        base, new = STAMP.sub("<time>", base), STAMP.sub("<time>", new)
    return [] if base == new else [f"{path}: {str(base)[:70]} -> {str(new)[:70]}"]


def main(argv: list[str] | None = None) -> int:
    """Print the differences between two results folders; 0 when there are none."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args(argv)
    found = 0
    for path in sorted(args.new.glob("*.json")):
        other = args.base / path.name
        if not other.exists():
            continue
        diffs = differences(json.loads(other.read_text()), json.loads(path.read_text()))
        found += len(diffs)
        for line in diffs:
            print(f"{path.name}{line}")
    print(f"{found} differences", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
