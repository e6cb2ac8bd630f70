"""What showing stored text safely costs (docs/security.md, "What reaches the terminal"):
the search table of 10 hits, an 8-sentence extractive answer and ``search --json`` of 10
hits, rendered by a plain rich console (markup and emoji off) and by the CLI's
:class:`~wiki_cli.render.InertConsole` with :func:`~wiki_cli.render.plain` (secrets masked,
controls made inert). Text is paragraphs of the project's own docs. Median of 100 renders,
best of 3 rounds, in milliseconds.

    python -m evals.bench_inert
"""

from __future__ import annotations

import io
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from wiki_cli.inert import shown
from wiki_cli.render import InertConsole, json_document, plain, table

DOCS = Path(__file__).parent.parent / "docs"


def _paragraphs() -> list[str]:
    return [p.replace("\n", " ") for doc in sorted(DOCS.glob("*.md"))
            for p in doc.read_text(encoding="utf-8").split("\n\n") if 80 < len(p) < 300]


def _console(inert: bool) -> Console:
    if inert:
        return InertConsole(file=io.StringIO(), highlight=False, width=100_000)
    return Console(file=io.StringIO(), highlight=False, width=100_000, markup=False,
                   emoji=False)


def _median_ms(fn: Callable[[], object], runs: int = 100, rounds: int = 3) -> float:
    def once() -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000
    return min(once() for _ in range(rounds))


def main() -> None:
    """Print one line per output: before -> after (added) milliseconds."""
    paras = _paragraphs()
    hits = [{"rank": i + 1, "score": 0.5, "id": f"e{i:011d}", "path": f"ops/entry-{i}.md",
             "title": paras[i][:70], "summary": paras[i + 10][:200], "status": "active",
             "sources": [{"uri": f"git:docs/x{i}.md"}]} for i in range(10)]
    answer = [f"{paras[20 + i]} [{i % 3 + 1}]" for i in range(8)]

    def search(inert: bool) -> None:
        wrap = plain if inert else Text
        grid = table("#", "score", "title", "path")
        for hit in hits:
            grid.add_row(str(hit["rank"]), "0.500", wrap(hit["title"]), wrap(hit["path"]))
        _console(inert).print(grid)

    def ask(inert: bool) -> None:
        console, wrap = _console(inert), plain if inert else Text
        for line in answer:
            console.print(wrap(line))

    shown("warm up")  # the pattern table compiles on first use
    rows = {"search, 10 hits": (lambda: search(False), lambda: search(True)),
            f"ask, 8 sentences ({sum(map(len, answer))} chars)": (lambda: ask(False),
                                                                   lambda: ask(True)),
            "search --json, 10 hits": (
                lambda: json.dumps({"hits": hits}, ensure_ascii=False, indent=2),
                lambda: json_document({"hits": hits}))}
    for name, (before, after) in rows.items():
        b, a = _median_ms(before), _median_ms(after)
        print(f"{name}: {b:.2f} ms -> {a:.2f} ms (+{a - b:.2f} ms)")


if __name__ == "__main__":
    main()
