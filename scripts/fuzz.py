"""``make fuzz``: hypothesis-driven fuzzing of the FTS query builder (with code-like tokens
such as ``c++``, ``std::vector<int>``, ``@scope/pkg`` and mixed scripts) and the frontmatter
parser, for a bounded time (default 60 s in all, split between the targets).

Each target is a ``fuzz_*`` property of tests/test_properties.py, run over and over with
the ``fuzz`` profile (500 new random examples a round, no deadline, no example database)
until its share of the time is spent. A failure prints hypothesis's shrunk falsifying
example and exits 1; copy it into an ``@example`` of the property as a regression test.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    """Run every fuzz target for ``--seconds`` in total; 0 when all stay clean."""
    parser = argparse.ArgumentParser(prog="scripts/fuzz.py")
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    os.environ["WIKI_HYPOTHESIS_PROFILE"] = "fuzz"
    os.environ.setdefault("WIKI_EMBED_MODEL", "none")
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    import test_properties as properties

    targets = [(name, getattr(properties, name)) for name in sorted(dir(properties))
               if name.startswith("fuzz_")]
    share = args.seconds / len(targets)
    for name, target in targets:
        rounds, stop = 0, time.monotonic() + share
        while time.monotonic() < stop:
            target()  # raises on a falsifying example
            rounds += 1
        print(f"{name}: clean after {rounds} rounds of 500 examples ({share:.0f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
