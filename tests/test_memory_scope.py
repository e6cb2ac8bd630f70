"""Scopes: an entry's scope (``scope:`` or its top folder) filters every leg before fusion.
A seeded run of 300 random scoped queries (1,000 until issue 26: the same behaviour, every
leg and all four scopes, at a third of the time) over a real index finds no entry of another
scope, while the same queries unscoped do reach other scopes (so the filter matters)."""

from __future__ import annotations

import random

import pytest

from tests.memory_helpers import entry, land
from tests.test_hybrid import fake_model  # noqa: F401 - the fixture, through the registry
from wiki.answering.search import filters_for, search_for
from wiki.store.derived import open_synced
from wiki.store.entry import Entry
from wiki.store.workspace import Wiki
from wiki.upkeep import update_index

WORDS = ["budget", "travel", "voucher", "approve", "lodging", "meal", "receipt", "policy", "leave", "badge", "laptop", "security", "review", "deploy", "release", "incident", "pager", "oncall", "backup", "restore", "invoice", "contract", "vendor", "hiring", "onboarding", "payroll", "benefit", "training", "design", "research", "privacy", "audit"]


def _build(w: Wiki, rng: random.Random) -> dict[str, str]:
    files: dict[str, str] = {}
    number = 0
    for folder in ("alpha", "beta", "gamma", "beta/deep", ""):
        for _ in range(12):
            number += 1
            title = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
            body = " ".join(rng.choice(WORDS) for _ in range(40)) + "."
            extra = {}
            if folder == "gamma" and number % 3 == 0:
                extra["scope"] = "alpha"  # an explicit scope beats the folder
            path = f"{folder}/e{number}.md" if folder else f"e{number}.md"
            files[path] = entry(f"e{number:03d}", title, body, **extra)
    land(w, files)
    return {path: Entry.parse(path, text.encode()).scope for path, text in files.items()}


def test_scope_defaults_to_the_top_folder_and_can_be_set() -> None:
    assert Entry.parse("beta/deep/x.md", entry("e-x", "X", "b").encode()).scope == "beta"
    assert Entry.parse("x.md", entry("e-x", "X", "b").encode()).scope == ""
    assert Entry.parse("beta/x.md", entry("e-x", "X", "b", scope="team-a").encode()
                       ).scope == "team-a"


@pytest.mark.slow
def test_hundreds_of_scoped_queries_never_leak(wiki: Wiki, fake_model) -> None:  # noqa: F811
    rng = random.Random(8)
    scope_of = _build(wiki, rng)
    update_index(wiki)  # 60 entries: a build's vectors, not a read's top-up
    assert set(scope_of.values()) == {"alpha", "beta", "gamma", ""}
    index = open_synced(wiki).index
    leaks, answered, crossed = 0, 0, 0
    try:
        for number in range(300):
            query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
            scope = rng.choice(("alpha", "beta", "gamma", ""))
            result = search_for(wiki, query, limit=60, index=index,
                            filters=filters_for(scope=scope))
            assert set(result.legs) == {"alias", "bm25", "vector"}
            leaks += sum(scope_of[h.key] != scope for h in result.hits)
            answered += bool(result.hits)
            if number % 10 == 0:  # the same query unscoped does reach other scopes
                unscoped = search_for(wiki, query, limit=60, index=index, filters=filters_for())
                crossed += any(scope_of[h.key] != scope for h in unscoped.hits)
    finally:
        index.close()
    assert leaks == 0
    assert answered > 270 and crossed > 27


def test_scope_on_the_command_line(cli, wiki: Wiki) -> None:
    land(wiki, {"ops/pager.md": entry("e-ops", "Pager duty", "The pager rotates weekly."),
                "hr/pager.md": entry("e-hr", "Pager allowance", "The pager allowance is paid.")})
    found = cli("search", "pager", "--scope", "hr", "--json")
    assert found.exit_code == 0, found.output
    assert '"e-hr"' in found.stdout and '"e-ops"' not in found.stdout
    asked = cli("ask", "pager allowance", "--scope", "ops")
    assert "allowance is paid" not in asked.stdout
