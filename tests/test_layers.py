"""Architecture rules: imports point one way, lower layers never print or exit."""

from __future__ import annotations

import ast
import re
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


SANITY_LINES = 800
"""Not a budget: a module has one job (docs/architecture.md, "Layers inside wiki/"), and
the old 400-line cap split jobs into 27-45-line fragments to fit. A file past this many
lines is checked by hand for a second job; none is near it today."""


def test_no_module_is_a_heap() -> None:
    for package in ("indexes", "wiki", "wiki_cli"):
        for path in _modules(package):
            lines = len(path.read_text().splitlines())
            assert lines <= SANITY_LINES, \
                f"{path.relative_to(ROOT)} has {lines} lines: does it do two jobs?"


def test_public_functions_have_docstrings() -> None:
    for package in ("indexes", "wiki"):
        for path in _modules(package):
            tree = ast.parse(path.read_text())
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and \
                        not node.name.startswith("_"):
                    assert ast.get_docstring(node), \
                        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} has no docstring"


SQL_PACKAGES = ("wiki", "wiki_cli")
"""Packages above the search index: they reach SQLite only through ``indexes``."""
SQL_MODULES = {"sqlite3", "sqlite_utils"}
SQL_CALLS = {"execute", "executescript", "executemany"}
SQL_TEXT = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|PRAGMA)\b")


def _sql_uses(source: str, name: str) -> list[str]:
    """Where ``source`` (the text of module file ``name``) imports a SQLite module, calls
    ``.execute(``-like methods (gitpython's ``repo.git.execute`` runs git, not SQL) or
    holds a string (an f-string's too) starting with a SQL verb."""
    found = []
    for node in ast.walk(ast.parse(source)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            found += [f"{where} imports {a.name}" for a in node.names
                      if a.name.split(".")[0] in SQL_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in SQL_MODULES:
            found.append(f"{where} imports from {node.module}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in SQL_CALLS and not (
                    isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "git"):
            found.append(f"{where} calls .{node.func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and SQL_TEXT.match(node.value):
            found.append(f"{where} holds SQL text {node.value[:30]!r}")
    return found


@pytest.mark.parametrize("package", SQL_PACKAGES)
def test_no_sql_outside_indexes(package: str) -> None:
    """The search index owns every statement and its schema (issue 14): ``wiki/`` and
    ``wiki_cli/`` call its methods and get typed rows, never a connection or SQL text."""
    found = [use for path in _modules(package)
             for use in _sql_uses(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "SQL outside indexes/:\n" + "\n".join(found)


def test_the_sql_check_sees_sql() -> None:
    """The check above finds what it forbids (and lets gitpython's execute pass)."""
    sample = ('import sqlite3\nfrom sqlite_utils import Database\n'
              'conn.execute("SELECT 1")\nconn.executescript(f"CREATE TABLE {t} (x)")\n'
              'repo.git.execute(["git", "status"])\nq = "PRAGMA user_version"\n'
              'note = "Select a branch"\n')
    found = sorted(_sql_uses(sample, "sample.py"))
    assert found == ["sample.py:1 imports sqlite3", "sample.py:2 imports from sqlite_utils",
                     "sample.py:3 calls .execute()", "sample.py:3 holds SQL text 'SELECT 1'",
                     "sample.py:4 calls .executescript()",
                     "sample.py:4 holds SQL text 'CREATE TABLE '",
                     "sample.py:6 holds SQL text 'PRAGMA user_version'"]


def _unit(module: str) -> str:
    """The sub-package a dotted module belongs to: ``wiki.store`` for
    ``wiki.store.branch``, ``wiki`` for a top-level module such as ``wiki.errors``,
    ``indexes`` and ``wiki_cli`` whole."""
    parts = module.split(".")
    if parts[0] == "wiki" and len(parts) > 1 and (ROOT / "wiki" / parts[1]).is_dir():
        return f"wiki.{parts[1]}"
    return parts[0]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _private_imports(source: str, module: str) -> list[str]:
    """``from <other sub-package> import _name`` (or a ``_module`` of it) in ``source``,
    the text of the dotted ``module``."""
    mine = _unit(module)
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module.split(".")[0] not in {"wiki", "wiki_cli", "indexes"} \
                or _unit(node.module) == mine:
            continue
        private = [p for p in node.module.split(".") if p.startswith("_")]
        private += [a.name for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
        found += [f"{module}:{node.lineno} imports {name} from "
                  f"{node.module}" for name in private]
    return found


@pytest.mark.parametrize("package", ("indexes", "wiki", "wiki_cli"))
def test_no_private_names_across_packages(package: str) -> None:
    """A name starting with ``_`` is its sub-package's own business: another sub-package
    (``wiki.store`` vs ``wiki.lint``, ``wiki`` vs ``indexes``, ``wiki_cli`` vs ``wiki``)
    imports only public names, so a helper that others need is made public (documented)
    or moved to where it belongs."""
    found = [hit for path in _modules(package)
             for hit in _private_imports(path.read_text(), _module_name(path))]
    assert not found, "private names imported across packages:\n" + "\n".join(found)


def test_the_private_import_check_sees_them() -> None:
    """The check above finds a private name imported from another sub-package, and
    leaves one imported inside its own sub-package alone."""
    sample = ("from wiki.store.branch import _helper, public\n"
              "from wiki.lint.model import _own\nfrom indexes._inner import x\n"
              "from wiki.errors import _top\n")
    assert sorted(_private_imports(sample, "wiki.lint.sample")) == [
        "wiki.lint.sample:1 imports _helper from wiki.store.branch",
        "wiki.lint.sample:3 imports _inner from indexes._inner",
        "wiki.lint.sample:4 imports _top from wiki.errors"]
    assert _private_imports("from wiki.errors import _top\n", "wiki.config") == []


ENGINES = ("indexes/sqlite", "indexes/pg")
"""The engine packages: the only code that holds a database connection
(:class:`indexes.backend.IndexBackend` is what everything else sees)."""
ENGINE_INSIDES = {"conn", "db"}
"""An engine's connection (``index.conn``), and ``index.db``, the name a database view
had before sqlite-utils was dropped."""


def _engine_probes(source: str, name: str) -> list[str]:
    """``getattr(<an index>, ...)`` (asking which engine it is) and ``<x>.conn`` /
    ``<x>.db`` (reaching past the interface to an engine's connection) in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"getattr", "hasattr"} and node.args:
            target = node.args[0]
            label = target.attr if isinstance(target, ast.Attribute) else \
                getattr(target, "id", "")
            if "index" in label.lower() or label == "idx":
                found.append(f"{name}:{node.lineno} probes {label} with {node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr in ENGINE_INSIDES:
            found.append(f"{name}:{node.lineno} reaches .{node.attr}")
    return found


@pytest.mark.parametrize("package", ("indexes", "wiki", "wiki_cli"))
def test_engines_only_behind_their_interface(package: str) -> None:
    """Everything outside ``indexes/sqlite/`` and ``indexes/pg/`` uses an index through
    :class:`indexes.backend.IndexBackend` alone (issue 26): no ``getattr(index, ...)``
    probe for what one engine has, no SQL on ``index.conn``; an engine lacking a method
    is incomplete, and the method belongs in both."""
    found = [hit for path in _modules(package)
             if not str(path.relative_to(ROOT)).startswith(ENGINES)
             for hit in _engine_probes(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "engine internals outside the engines:\n" + "\n".join(found)


def test_the_engine_check_sees_probes() -> None:
    """The check above finds a probe and a connection, and lets other getattr calls be."""
    sample = ('own = getattr(index, "hits_for", None)\nindex.conn.execute("x")\n'
              'hasattr(self.index, "word_matches")\nrows = opened.index.db["docs"]\n'
              'value = getattr(config, "search")\n')
    assert sorted(_engine_probes(sample, "s.py")) == [
        "s.py:1 probes index with getattr()", "s.py:2 reaches .conn",
        "s.py:3 probes index with hasattr()", "s.py:4 reaches .db"]


def test_each_engine_is_complete_behind_the_interface() -> None:
    """Both engines have every member of :class:`indexes.backend.IndexBackend` and no
    public method it lacks (a caller could only reach that one with a probe)."""
    from indexes.backend import IndexBackend
    from indexes.sqlite.engine import SearchIndex

    pytest.importorskip("psycopg")
    from indexes.pg.engine import PgIndex

    def public(cls) -> set[str]:
        return {n for n in dir(cls) if not n.startswith("_")}

    interface = public(IndexBackend) | set(IndexBackend.__annotations__)
    for engine in (SearchIndex, PgIndex):
        assert public(engine) - interface == set(), engine.__name__
        methods = {n for n in public(IndexBackend) if callable(getattr(IndexBackend, n))}
        assert methods <= public(engine), engine.__name__

WIKI_LAYERS = (
    "errors", "files", "config_template", "config",
    "store", "safety", "llm", "review", "adapters", "ingest", "answering", "knowledge",
    "lint",
    "serve", "status", "entry_view", "upkeep", "questions", "doctor",
)
"""The parts of ``wiki/``, lowest first: a sub-package (``wiki/store/``) or a top-level
module (``wiki/config.py``). A module imports its own part and lower ones only, at the
top or inside a function or ``TYPE_CHECKING`` block alike (docs/architecture.md, "Layers
inside wiki/")."""


def _wiki_part(module: str) -> str | None:
    """The part of ``wiki/`` that dotted ``module`` belongs to (``store`` for
    ``wiki.store.branch``, ``config`` for ``wiki.config``), ``None`` outside ``wiki`` and
    for the package ``wiki`` itself."""
    parts = module.split(".")
    return parts[1] if parts[0] == "wiki" and len(parts) > 1 else None


def _layer_breaks(source: str, module: str) -> list[str]:
    """Imports in ``source`` (the text of the dotted ``module`` of ``wiki/``) of a part of
    ``wiki/`` above the module's own in :data:`WIKI_LAYERS`."""
    mine = _wiki_part(module)
    rank = {part: i for i, part in enumerate(WIKI_LAYERS)}
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"wiki.{a.name}" for a in node.names] if node.module == "wiki" \
                else [node.module]
        else:
            continue
        for target in targets:
            part = _wiki_part(target)
            if part is None or part == mine:
                continue
            if part not in rank or rank[part] > rank[mine]:
                found.append(f"{module}:{node.lineno} imports {target} "
                             f"({part} is above {mine})")
    return found


def test_wiki_parts_have_a_layer() -> None:
    """Every sub-package and top-level module of ``wiki/`` has its place in the order."""
    parts = {p.stem for p in (ROOT / "wiki").iterdir()
             if (p.is_dir() and (p / "__init__.py").exists())
             or (p.suffix == ".py" and p.stem != "__init__")}
    assert parts == set(WIKI_LAYERS), \
        f"not in WIKI_LAYERS: {sorted(parts - set(WIKI_LAYERS))}; " \
        f"gone: {sorted(set(WIKI_LAYERS) - parts)}"


def test_wiki_layers_point_down() -> None:
    """``wiki/`` holds its layers as the top level does (``wiki_cli`` -> ``wiki`` ->
    ``indexes``): no part imports one above it, not even lazily inside a function."""
    found = [hit for path in _modules("wiki") if _module_name(path) != "wiki"
             for hit in _layer_breaks(path.read_text(), _module_name(path))]
    assert not found, "imports up the layers of wiki/:\n" + "\n".join(found)


def test_the_layer_check_sees_them() -> None:
    """The check above finds an upward import at the top, inside a function and under
    ``TYPE_CHECKING``, and lets its own part and lower ones pass."""
    sample = ("from wiki.store.entry import Entry\nimport wiki.review.proposals\n"
              "from wiki import errors, lint\n"
              "def f():\n    from wiki.answering.search import search\n"
              "if TYPE_CHECKING:\n    from wiki.doctor import Check\n")
    assert _layer_breaks(sample, "wiki.review.sample") == [
        "wiki.review.sample:3 imports wiki.lint (lint is above review)",
        "wiki.review.sample:5 imports wiki.answering.search (answering is above review)",
        "wiki.review.sample:7 imports wiki.doctor (doctor is above review)"]


STORE_WORDS = re.compile(r"^(store|storage|stores|storing)$")
"""Names that would mean "the store" (issue 26: one name per meaning)."""


def _store_names(path: Path) -> list[str]:
    """Module, function, method and attribute names in ``path`` that are a form of
    "store", other than the branch store itself (``wiki/store/``, ``Wiki.store``,
    ``Snapshot.store``: the git-backed wiki branch)."""
    found = [path.stem] if STORE_WORDS.match(path.stem) else []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and STORE_WORDS.match(node.name):
            found.append(f"def {node.name}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and STORE_WORDS.match(node.attr):
            found.append(f".{node.attr} =")
    return found


BRANCH_STORE = {"wiki/store/workspace.py": ["def store", ".store ="],
                "wiki/store/snapshot.py": [".store ="]}
"""Where "store" names the branch store (the only meaning it has)."""


def test_store_means_the_branch_store_only() -> None:
    for package in ("wiki", "indexes", "wiki_cli"):
        for path in _modules(package):
            rel = path.relative_to(ROOT).as_posix()
            names = [n for n in _store_names(path) if n not in BRANCH_STORE.get(rel, [])]
            assert not names, f"{rel}: {names} (\"store\" is the branch store only)"


def test_the_store_name_check_sees_them(tmp_path: Path) -> None:
    sample = tmp_path / "storage.py"
    sample.write_text("class V:\n    def store(self):\n        self.store = 1\n")
    assert _store_names(sample) == ["storage", "def store", ".store ="]
