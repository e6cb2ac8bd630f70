"""docs/architecture.md is a map of the code, and the code cites the repository's own docs.

* every module under ``wiki/``, ``indexes/`` and ``wiki_cli/`` has its line in
  docs/architecture.md, and every module the page names exists;
* no docstring or comment in those packages cites a document outside the repository
  (``DESIGN.md``, ``STYLE.md``, ``ROBUSTNESS.md``) or carries history (``issue 6``): the
  contracts are in docs/architecture.md, the history in docs/decisions.md.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGES = ("wiki", "indexes", "wiki_cli")
MAP = ROOT / "docs" / "architecture.md"
NAMED = re.compile(r"`((?:wiki|indexes|wiki_cli)/[\w/]*\.py)`")
LINE = re.compile(r"^- `((?:wiki|indexes|wiki_cli)/[\w/]*\.py)`: \S", re.MULTILINE)
FORBIDDEN = re.compile(r"\bDESIGN(?:\.md|\s*§)|\bSTYLE\.md|\bROBUSTNESS\b|\b[Ii]ssues?\s+#?\d+")


def _modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for package in PACKAGES
            for p in (ROOT / package).rglob("*.py")}


def test_every_module_has_one_line_on_the_map() -> None:
    listed = LINE.findall(MAP.read_text(encoding="utf-8"))
    missing = sorted(_modules() - set(listed))
    assert not missing, ("modules without a line in docs/architecture.md (add "
                         f"'- `path`: what it does' under its package): {missing}")
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"modules listed more than once in docs/architecture.md: {twice}"


def test_the_map_names_only_modules_that_exist() -> None:
    named = set(NAMED.findall(MAP.read_text(encoding="utf-8")))
    gone = sorted(named - _modules())
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def test_the_map_covers_the_three_packages_and_the_read_path() -> None:
    text = MAP.read_text(encoding="utf-8")
    for heading in ("### `indexes/`", "### `wiki/`", "### `wiki_cli/`", "## A read"):
        assert heading in text
    read_path = text[text.index("## A read"):]
    for step in ("wiki_cli/query.py", "wiki/answering/search.py", "wiki/store/derived.py",
                 "indexes/retrieval/hybrid.py", "indexes/retrieval/fusion.py", "wiki/answering/ask.py",
                 "wiki/answering/revalidate.py", "wiki/answering/picker.py"):
        assert f"`{step}`" in read_path, step


def _citations(path: Path) -> list[str]:
    """``path:line: text`` of each comment or string literal naming an outside document or
    an issue number."""
    found = []
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING) and FORBIDDEN.search(token.string):
            line = token.start[0] + token.string[:FORBIDDEN.search(token.string).start()] \
                .count("\n")
            found.append(f"{path.relative_to(ROOT)}:{line}: "
                         f"{FORBIDDEN.search(token.string).group(0)}")
    return found


def test_no_docstring_or_comment_cites_outside_documents_or_issues() -> None:
    found = [c for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
             for c in _citations(p)]
    assert not found, ("cite docs/*.md (contracts: docs/architecture.md; history: "
                       f"docs/decisions.md) instead: {found}")


def test_the_citation_check_catches_each_kind() -> None:
    for text in ('"""Search (DESIGN.md §5)."""', "# see STYLE.md", '"""Scan (ROBUSTNESS H1)."""',
                 '"""Routing (issue 6)."""', "x = 1  # before issue 16", '"""As DESIGN §6."""'):
        assert FORBIDDEN.search(text), text
    for text in ('"""Search (docs/architecture.md, "Retrieval")."""', "# robustness.md kind 1",
                 '"""issues a warning"""'):
        assert not FORBIDDEN.search(text), text
