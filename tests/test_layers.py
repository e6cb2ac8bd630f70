"""Architecture rules: imports point one way, lower layers never print or exit."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
FORBIDDEN = {
    "indexes": {"wiki", "wiki_cli", "typer", "rich", "git", "yaml", "click"},
    "wiki": {"wiki_cli", "typer", "rich", "click"},
}


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_back_edges(package: str) -> None:
    for path in _modules(package):
        bad = _imports(path) & FORBIDDEN[package]
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_lower_layers_never_print_or_exit(package: str) -> None:
    for path in _modules(package):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"print", "exit", "quit"}, \
                    f"{path.relative_to(ROOT)}:{node.lineno} calls {node.func.id}()"
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                assert (node.value.id, node.attr) != ("sys", "exit"), \
                    f"{path.relative_to(ROOT)}:{node.lineno} calls sys.exit"


def test_modules_stay_small() -> None:
    for package in ("indexes", "wiki", "wiki_cli"):
        for path in _modules(package):
            lines = len(path.read_text().splitlines())
            assert lines <= 400, f"{path.relative_to(ROOT)} has {lines} lines (budget 400)"


def test_public_functions_have_docstrings() -> None:
    for package in ("indexes", "wiki"):
        for path in _modules(package):
            tree = ast.parse(path.read_text())
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and \
                        not node.name.startswith("_"):
                    assert ast.get_docstring(node), \
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} has no docstring"
