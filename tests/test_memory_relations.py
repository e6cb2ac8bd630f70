"""Typed relations: W016 relation-cycle, `wiki show` both ways, the graph-expansion leg
(decay, depth bound, never along conflicts_with, never out of the filters), re-scoring."""

from __future__ import annotations

import datetime as dt
import json

from tests.memory_helpers import entry, land
from wiki.answering.filters import filters_for
from wiki.answering.search import search_for
from wiki.config import CONFIG_PATH
from wiki.lint import run_lint
from wiki.store.workspace import Wiki


def test_w016_reports_a_depends_on_cycle(wiki: Wiki) -> None:
    land(wiki, {"a.md": entry("e-a", "A", "x", relations="{depends_on: [e-b]}"),
                "b.md": entry("e-b", "B", "y", relations="{depends_on: e-c}"),
                "c.md": entry("e-c", "C", "z", relations="{depends_on: [e-a]}"),
                "d.md": entry("e-d", "D", "w", relations="{refines: [e-d]}")})
    findings = run_lint(wiki, {"W016"}).findings
    assert sorted(f.entry_id for f in findings) == ["e-a", "e-b", "e-c", "e-d"]
    assert "depends_on cycle among e-a, e-b, e-c" in findings[0].message


def test_w016_allows_chains_and_symmetric_relations(wiki: Wiki) -> None:
    land(wiki, {"a.md": entry("e-a", "A", "x", relations="{depends_on: [e-b], "
                                                        "related_to: [e-b]}"),
                "b.md": entry("e-b", "B", "y", relations="{depends_on: [e-c], "
                                                        "related_to: [e-a], "
                                                        "conflicts_with: [e-a]}"),
                "c.md": entry("e-c", "C", "z", relations="{refines: [e-a]}")})
    assert run_lint(wiki, {"W016"}).findings == []


def test_show_lists_relations_both_ways(cli, wiki: Wiki) -> None:
    land(wiki, {"a.md": entry("e-a", "A", "x", relations="{depends_on: [e-b, e-gone]}"),
                "b.md": entry("e-b", "B", "y")})
    shown = json.loads(cli("show", "e-b", "--json").stdout)["relations"]
    assert shown["incoming"] == [{"kind": "depends_on", "entry_id": "e-a", "path": "a.md",
                                  "title": "A", "status": "active"}]
    text = cli("show", "a.md")
    assert text.stdout.startswith("---\nid: e-a")
    assert "-> depends_on e-b (B — b.md)" in text.stderr
    assert "-> depends_on e-gone (no such entry)" in text.stderr


def _graph_wiki(w: Wiki, **memory) -> None:
    settings = "".join(f"{k} = {json.dumps(v)}\n" for k, v in memory.items())
    config = "[wiki]\nversion = 1\n\n[memory]\n" + settings
    land(w, {CONFIG_PATH: config,
             "ops/deploy.md": entry("e-deploy", "Deploy the zebra service",
                                    "Run the zebra deploy script.",
                                    relations="{depends_on: [e-creds], "
                                              "conflicts_with: [e-old]}"),
             "ops/creds.md": entry("e-creds", "Vault access", "Ask for a vault token.",
                                   relations="{depends_on: [e-badge]}"),
             "ops/badge.md": entry("e-badge", "Badge", "Get a badge at the desk.",
                                   relations="{depends_on: [e-far]}"),
             "ops/far.md": entry("e-far", "Far", "Three hops away."),
             "ops/old.md": entry("e-old", "Old way", "Copy files by hand."),
             "hr/secret.md": entry("e-hr", "HR", "Private.", ),
             })


def test_graph_leg_follows_relations_with_decay_and_a_depth_bound(wiki: Wiki) -> None:
    _graph_wiki(wiki, graph=True, graph_depth=2, graph_decay=0.5, graph_weight=0.3)
    hits = search_for(wiki, "zebra", limit=10).hits
    ids = [h.doc_id for h in hits]
    assert ids == ["e-deploy", "e-creds", "e-badge"]  # not e-far (3 hops), not e-old
    assert hits[1].contributions == {"graph": 0.3 * 0.5}
    assert hits[2].contributions == {"graph": 0.3 * 0.25}
    assert abs(hits[0].score - sum(hits[0].contributions.values())) < 1e-12


def test_graph_leg_respects_the_filters(wiki: Wiki) -> None:
    _graph_wiki(wiki, graph=True)
    land(wiki, {"ops/deploy2.md": entry("e-d2", "Zebra rollback", "Roll the zebra back.",
                                        relations="{depends_on: [e-hr]}")})
    assert "e-hr" not in {h.doc_id for h in search_for(wiki, "zebra",
                                                   filters=filters_for(scope="ops")).hits}


def test_graph_off_by_default(wiki: Wiki) -> None:
    _graph_wiki(wiki)
    assert [h.doc_id for h in search_for(wiki, "zebra").hits] == ["e-deploy"]


def test_recency_rescoring_prefers_newer_episodes(wiki: Wiki) -> None:
    now = dt.datetime.now(dt.UTC)
    old = (now - dt.timedelta(days=60)).strftime("%Y-%m-%dT%H:%M:%SZ")
    new = (now - dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _graph_wiki(wiki, rescore=True, recency=2.0)
    land(wiki, {"log/a.md": entry("e-old-ep", "Yak meeting", "Yak yak yak meeting notes.",
                                  type="episode", updated=old),
                "log/b.md": entry("e-new-ep", "Yak sync", "Yak meeting.", type="episode",
                                  updated=new)})
    hits = search_for(wiki, "yak meeting", limit=5).hits
    assert [h.doc_id for h in hits][:2] == ["e-new-ep", "e-old-ep"]
    assert 1.9 < hits[0].contributions["recency"] <= 2.0
    assert abs(hits[1].contributions["recency"] - 0.5) < 0.02  # 60 days, half-life 30
