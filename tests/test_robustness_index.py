"""Every ROBUSTNESS case is a named test: each case id in ../shared/cases/ROBUSTNESS.md is
carried by at least one test marked ``@pytest.mark.robustness("<id>", ...)``, and no marker
names an id the file does not have. Read by AST, so the check needs no test to run.

The cases file lives outside the repository (``$WIKI_SHARED/cases``, default ``../shared``
beside the clone). Where a clone has no such folder (a CI runner), the ids known when these
tests were written (:data:`KNOWN_IDS`) stand in; where it has one, the file must list
exactly those ids, so a new case fails here until it gets a test."""

from __future__ import annotations

import ast
import os
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]
SHARED = Path(os.environ.get("WIKI_SHARED") or ROOT.parent / "shared")
CASES = SHARED / "cases" / "ROBUSTNESS.md"
CASE_ID = re.compile(r"^([A-Z]\d+)\.\s", re.MULTILINE)
KNOWN_IDS = ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "F1", "F2", "F3", "F4", "F5", "F6",
             "I1", "I2", "I3", "I4", "W1", "W2", "W3", "W4", "W5", "H1", "H2", "H3"]


def case_ids() -> list[str]:
    if not CASES.is_file():
        return KNOWN_IDS
    ids = CASE_ID.findall(CASES.read_text(encoding="utf-8"))
    assert ids, f"no case ids (lines like 'Q1. ...') found in {CASES}"
    assert len(ids) == len(set(ids)), f"a case id is listed twice in {CASES}: {ids}"
    return ids


def _robustness_ids(decorator: ast.expr) -> list[str] | None:
    """The ids of a ``pytest.mark.robustness(...)`` decorator, or None for any other."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "robustness"):
        return None
    mark = decorator.func.value
    assert isinstance(mark, ast.Attribute) and mark.attr == "mark" and \
        isinstance(mark.value, ast.Name) and mark.value.id == "pytest", \
        f"line {decorator.lineno}: write the marker as pytest.mark.robustness(...)"
    ids = [arg.value for arg in decorator.args
           if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    assert decorator.args and len(ids) == len(decorator.args) and not decorator.keywords, \
        f"line {decorator.lineno}: robustness(...) takes case ids as string literals only"
    return ids


def marked_tests() -> dict[str, list[str]]:
    """``file::test`` -> the case ids its robustness marker names."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for decorator in node.decorator_list:
                ids = _robustness_ids(decorator)
                if ids is not None:
                    name = f"{path.relative_to(ROOT)}::{node.name}"
                    assert node.name.startswith("test_"), f"{name} is not a test"
                    found.setdefault(name, []).extend(ids)
    return found


def test_every_robustness_case_is_a_named_passing_test() -> None:
    ids = case_ids()
    covered = {case for cases in marked_tests().values() for case in cases}
    missing = [case for case in ids if case not in covered]
    assert not missing, f"ROBUSTNESS cases without a @pytest.mark.robustness test: {missing}"


def test_no_marker_names_an_unknown_case() -> None:
    known = set(case_ids())
    unknown = {name: [c for c in cases if c not in known]
               for name, cases in marked_tests().items()}
    unknown = {name: cases for name, cases in unknown.items() if cases}
    assert not unknown, f"markers naming ids not in {CASES.name}: {unknown}"


def test_tests_named_for_a_case_carry_its_marker() -> None:
    marked = marked_tests()
    named = re.compile(r"::test_robustness_([a-z]\d+)_")
    wrong = [name for name, cases in marked.items()
             if (m := named.search(name)) and m.group(1).upper() not in cases]
    assert not wrong, f"test_robustness_<id>_ tests whose marker lacks that id: {wrong}"
    unmarked = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            name = f"{path.relative_to(ROOT)}::{getattr(node, 'name', '')}"
            if named.search(name) and name not in marked:
                unmarked.append(name)
    assert not unmarked, f"test_robustness_<id>_ tests without the marker: {unmarked}"


def test_known_ids_match_the_cases_file_when_present() -> None:
    if CASES.is_file():  # else nothing to compare: KNOWN_IDS are the cases then
        assert case_ids() == KNOWN_IDS, f"{CASES} changed: update KNOWN_IDS and add tests"
    assert len(set(KNOWN_IDS)) == 24


def test_the_marker_is_registered() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.split("(")[0].split(":")[0].strip() == "robustness" for m in markers)
