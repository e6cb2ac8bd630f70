"""The line-based markdown splitter the product used before the CommonMark parser, against
the parser-based one, over every handbook page at the eval checkpoint.

For each page (``pages/**/*.md`` of the handbook bundle at
:data:`evals.datasets.CHECKPOINT`, frontmatter stripped as ingest strips it) it compares
what ingest and the index see: the blocks (``blocks``), the indexed text
(``plain_text``, code kept), the answer sentences (``sentences``), the ``##`` sections
ingest cuts (``split_sections``), the summary and the first ``#`` heading. It reports the
pages that differ, the blocks added and removed, and a few examples.

The old splitter is kept here only, copied, for this comparison; the product has only the
parser (:mod:`wiki.store.markdown_blocks`). Inline handling (``inline_plain``,
``strip_templates``) and the sentence cutting are the product's, unchanged.

    python -m evals.markdown_diff [--data DIR] [--out evals/results] [--examples 8]
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

from evals.datasets import BUNDLE, CHECKPOINT, data_dir
from evals.report import header, md_table, now, project_commit, write
from wiki.store import markdown_text as new
from wiki.store.frontmatter import parse as parse_frontmatter
from wiki.store.markdown_text import _SENTENCE_END, _WORD, _closed, inline_plain, strip_templates

# -- the old splitter (copied from wiki/store/markdown_text.py before the parser) -------------

_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s+\S+.*$", re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


def old_blocks(markdown: str, *, keep_code: bool = False, headings: bool = True) -> list[str]:
    """The old line-based ``blocks``."""
    out: list[str] = []
    paragraph: list[str] = []
    in_fence = False
    last_was_row = False

    def flush() -> None:
        if paragraph:
            text = inline_plain(" ".join(paragraph))
            if text:
                out.append(text)
            paragraph.clear()

    for line in _REF_DEF.sub("", strip_templates(markdown)).splitlines():
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            if keep_code and line.strip():
                out.append(line.strip())
            continue
        stripped = line.strip()
        if not stripped or _TABLE_RULE.match(stripped):
            flush()
            if stripped and not headings and last_was_row and out:
                out.pop()
            continue
        heading = _HEADING.match(stripped)
        last_was_row = stripped.startswith("|")
        if heading:
            flush()
            if headings:
                out.append(inline_plain(heading.group(2)))
            continue
        if stripped.startswith("|"):
            flush()
            cells = [inline_plain(c) for c in stripped.strip("|").split("|")]
            row = " | ".join(c for c in cells if c)
            if row:
                out.append(row)
            continue
        if _LIST_MARK.match(line):
            flush()
            paragraph.append(_LIST_MARK.sub("", line))
            continue
        paragraph.append(stripped.lstrip("> ").strip())
    flush()
    return out


def old_sentences(markdown: str) -> list[str]:
    """The old ``sentences`` (the same cutting, over the old blocks)."""
    return [s.strip() for block in old_blocks(markdown, headings=False)
            for s in _closed(_SENTENCE_END.split(block)) if s.strip()]


def _old_headings(markdown: str) -> list[tuple[int, str, int]]:
    found = []
    in_fence = False
    for number, line in enumerate(markdown.splitlines()):
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), inline_plain(strip_templates(match.group(2))),
                          number))
    return found


def old_sections(markdown: str, level: int = 2) -> list[tuple[str, str]]:
    """The old ``split_sections`` as ``(heading, text)``."""
    lines = markdown.splitlines(keepends=True)
    cuts = [(n, t) for lv, t, n in _old_headings(markdown) if lv == level]
    starts = [0] + [n for n, _ in cuts]
    names = [""] + [t for _, t in cuts]
    out = []
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(lines)
        text = "".join(lines[start:end])
        if index == 0 and not text.strip():
            continue
        out.append((names[index], text))
    return out


def old_summary(markdown: str, *, max_chars: int = 240) -> str:
    """The old ``summary``."""
    heads = {inline_plain(m.group(2)) for m in
             (_HEADING.match(line.strip()) for line in markdown.splitlines()) if m}
    prose = [b for b in old_blocks(markdown)
             if b not in heads and " | " not in b and len(_WORD.findall(b)) >= 3] \
        or old_blocks(markdown, headings=False)
    if not prose:
        return ""
    picked = ""
    for sentence in _SENTENCE_END.split(prose[0]):
        candidate = f"{picked} {sentence}".strip()
        if picked and len(candidate) > max_chars:
            break
        picked = candidate
        if len(picked) >= 80:
            break
    if len(picked) > max_chars:
        picked = picked[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return picked


def old_first_heading(markdown: str) -> str | None:
    """The old ``first_heading`` (level 1)."""
    return next((t for lv, t, _ in _old_headings(markdown) if lv == 1), None)


# -- the comparison ----------------------------------------------------------------------------

def pages(data: Path) -> dict[str, str]:
    """``{path: body}`` of every handbook page at the checkpoint, frontmatter stripped."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "handbook"
        subprocess.run(["git", "clone", "-q", str(data / BUNDLE), str(repo)], check=True)
        subprocess.run(["git", "-c", "advice.detachedHead=false", "checkout", "-q",
                        CHECKPOINT], cwd=repo, check=True)
        out = {}
        for path in sorted((repo / "pages").rglob("*.md")):
            text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
            out[path.relative_to(repo).as_posix()] = parse_frontmatter(text, path.name).body
        return out


def _changes(old: list[str], now_: list[str]) -> tuple[list[str], list[str]]:
    """The items removed from ``old`` and added in ``now_`` (in order, as a diff)."""
    removed: list[str] = []
    added: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=now_, autojunk=False) \
            .get_opcodes():
        if tag != "equal":
            removed += old[i1:i2]
            added += now_[j1:j2]
    return removed, added


def compare(bodies: dict[str, str]) -> dict:
    """Per-aspect counts of differing pages, block totals, and the differing pages' diffs."""
    differ: Counter = Counter()
    totals: Counter = Counter()
    diffs: dict[str, dict] = {}
    for path, body in bodies.items():
        ob, nb = old_blocks(body), new.blocks(body)
        removed, added = _changes(ob, nb)
        totals.update(old_blocks=len(ob), new_blocks=len(nb), removed=len(removed),
                      added=len(added), old_sentences=len(old_sentences(body)),
                      new_sentences=len(new.sentences(body)))
        checks = {
            "blocks": ob != nb,
            "plain_text (indexed)": old_text(body) != new.plain_text(body),
            "sentences": old_sentences(body) != new.sentences(body),
            "## sections": old_sections(body) != [(s.heading, s.text)
                                                   for s in new.split_sections(body)],
            "summary": old_summary(body) != new.summary(body),
            "first # heading": old_first_heading(body) != new.first_heading(body),
        }
        differ.update(k for k, v in checks.items() if v)
        if any(checks.values()):
            s_removed, s_added = _changes(old_sentences(body), new.sentences(body))
            diffs[path] = {"differs": [k for k, v in checks.items() if v],
                           "blocks_removed": removed, "blocks_added": added,
                           "sentences_removed": s_removed, "sentences_added": s_added,
                           "sections_old": [h for h, _ in old_sections(body)],
                           "sections_new": [s.heading for s in new.split_sections(body)],
                           "summary_old": old_summary(body), "summary_new": new.summary(body)}
    return {"pages": len(bodies), "differ": dict(differ), "totals": dict(totals),
            "diffs": diffs}


def old_text(body: str) -> str:
    """The old ``plain_text`` (what was indexed)."""
    return "\n".join(old_blocks(body, keep_code=True))


def _clip(text: str, width: int = 110) -> str:
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[:width - 1] + "…"


def report(result: dict, examples: int) -> str:
    """The markdown report of :func:`compare`'s ``result``."""
    facts = {"date": now(), "project commit": project_commit(),
             "checkpoint": CHECKPOINT[:12], "pages": result["pages"]}
    rows = [[aspect, result["differ"].get(aspect, 0)] for aspect in
            ("blocks", "plain_text (indexed)", "sentences", "## sections", "summary",
             "first # heading")]
    totals = result["totals"]
    lines = [header("Markdown blocks: the old line splitter against the CommonMark parser",
                    facts),
             "", "## Pages that differ\n",
             md_table(["what", f"pages (of {result['pages']})"], rows),
             "", f"Blocks over all pages: {totals.get('old_blocks', 0)} before, "
             f"{totals.get('new_blocks', 0)} after; {totals.get('removed', 0)} removed and "
             f"{totals.get('added', 0)} added (a block whose text changed counts in both). "
             f"Answer sentences: {totals.get('old_sentences', 0)} before, "
             f"{totals.get('new_sentences', 0)} after.",
             "", "## Examples\n"]
    ranked = sorted(result["diffs"].items(),
                    key=lambda kv: -(len(kv[1]["blocks_removed"]) + len(kv[1]["blocks_added"])))
    for path, diff in ranked[:examples]:
        lines.append(f"### {path}\n")
        lines.append(f"differs in: {', '.join(diff['differs'])}\n")
        for label, key in (("removed", "blocks_removed"), ("added", "blocks_added")):
            shown = diff[key][:4]
            more = len(diff[key]) - len(shown)
            if shown:
                lines += [f"- block {label}: {_clip(b)}" for b in shown]
                if more:
                    lines.append(f"- ... and {more} more {label}")
        if diff["sections_old"] != diff["sections_new"]:
            lines.append(f"- sections before: {diff['sections_old']}; after: "
                         f"{diff['sections_new']}")
        if diff["summary_old"] != diff["summary_new"]:
            lines.append(f"- summary before: {_clip(diff['summary_old'])}")
            lines.append(f"- summary after: {_clip(diff['summary_new'])}")
        lines.append("")
    lines.append("All differing pages: " + ", ".join(sorted(result["diffs"])) + ".")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.markdown_diff", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--examples", type=int, default=8)
    args = parser.parse_args(argv)
    result = compare(pages(data_dir(args.data)))
    text = report(result, args.examples)
    print(text)
    write(Path(args.out), "markdown-diff", text, result)


if __name__ == "__main__":
    main()
