"""Hybrid retrieval: RRF math, the alias leg, the vector sidecar's freshness and model
changes (ROBUSTNESS I1, I3, Q6). Fake models go through the real registry."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
from conftest import ALICE, BOB, entry_text, git

from indexes.documents import Document, Hit
from indexes.embedding import embedders
from indexes.retrieval.fusion import rrf
from indexes.retrieval.names import fold_name, spans
from indexes.sqlite.engine import Filters, SearchIndex
from indexes.sqlite.vectors import chunk_texts, embed_pending
from wiki.answering.search import search_for
from wiki.review.proposals import approve, propose
from wiki.store.workspace import Wiki


class HashingEmbedder:
    """A deterministic bag-of-words embedder: each word hashed to one of ``dim`` axes."""

    def __init__(self, name: str = "fake-hash", dim: int = 64):
        self.name, self.dim, self.calls = name, dim, 0

    def encode(self, texts):
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1
        return embedders.normalize(out)


@pytest.fixture
def fake_model(monkeypatch) -> HashingEmbedder:
    model = HashingEmbedder()
    embedders.register("fake-hash", lambda: model)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-hash")
    return model


def _hit(key: str, score: float = 0.0) -> Hit:
    return Hit(key, key, key, "", "", "active", score)


def test_rrf_matches_hand_computed_scores() -> None:
    legs = {"bm25": [_hit("a", 9.0), _hit("b", 5.0), _hit("c", 1.0)],
            "vector": [_hit("c", 0.9), _hit("a", 0.8)]}
    fused = rrf(legs, k=60, weights={"bm25": 1.0, "vector": 2.0})
    scores = {h.key: h.score for h in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 2 / 62)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 2 / 61)
    assert [h.key for h in fused] == ["c", "a", "b"]
    assert fused[0].legs == {"bm25": (3, 1.0), "vector": (1, 0.9)}
    # the explanation reproduces the score exactly
    for hit in fused:
        weights = {"bm25": 1.0, "vector": 2.0}
        assert hit.score == pytest.approx(sum(weights[leg] / (60 + rank)
                                              for leg, (rank, _) in hit.legs.items()))


def test_zscore_fusion_matches_hand_computed_scores() -> None:
    from indexes.retrieval.fusion import zscore
    legs = {"bm25": [_hit("a", 9.0), _hit("b", 5.0), _hit("c", 1.0)],
            "vector": [_hit("c", 0.9), _hit("a", 0.7)]}
    fused = zscore(legs, weights={"bm25": 1.0, "vector": 0.5})
    # bm25: mean 5, population std sqrt(32/3); vector: mean 0.8, std 0.1
    sd = (32 / 3) ** 0.5
    expected = {"a": 4 / sd + 0.5 * -1.0, "b": 0.0 + 0.5 * -1.0, "c": -4 / sd + 0.5 * 1.0}
    assert {h.key: h.score for h in fused} == pytest.approx(expected)
    assert [h.key for h in fused] == ["a", "b", "c"]
    for hit in fused:  # the explanation adds up to the score
        assert sum(hit.contributions.values()) == pytest.approx(hit.score)
    assert fused[1].legs == {"bm25": (2, 5.0)}  # b: not found by the vector leg
    flat = zscore({"alias": [_hit("t", 1.0)], "bm25": [_hit("t", 3.0), _hit("u", 1.0)]})
    assert flat[0].key == "t" and flat[0].contributions == {"alias": 1.0, "bm25": 1.0}
    assert flat[1].contributions == {"alias": 0.0, "bm25": -1.0}


def test_rrf_ties_are_deterministic() -> None:
    legs = {"x": [_hit("b"), _hit("a")], "y": [_hit("a"), _hit("b")]}
    assert [h.key for h in rrf(legs)] == ["a", "b"]


def test_alias_leg_folds_case_accents_and_punctuation(tmp_path) -> None:
    assert fold_name("PER-DIÉM  (M&IE)") == "per diem m ie"
    assert spans("what is the per diem?")["per diem"] == 2
    assert "what is the" not in spans("what is the per diem?")
    with SearchIndex(tmp_path / "x.sqlite") as index, index.transaction():
        index.upsert([Document("pd.md", "pd", "Per Diem", aliases=("M&IE",)),
                      Document("x.md", "x", "Expenses", body="per diem mentioned")])
    with SearchIndex(tmp_path / "x.sqlite") as index:
        assert [h.key for h in index.search_names("per DIEM")] == ["pd.md"]
        assert index.search_names("per DIEM")[0].score == 1.0
        assert [h.key for h in index.search_names("what is m&ie?")] == ["pd.md"]
        assert index.search_names("expenses for per diem")[0].key == "pd.md"


def test_chunks_overlap_and_carry_the_title() -> None:
    body = " ".join(f"w{i}" for i in range(400))
    chunks = chunk_texts("Title", "Summary.", body, words=180, overlap=30)
    assert len(chunks) == 3
    assert all(c.startswith("Title. Summary.\n") for c in chunks)
    assert chunks[1].split("\n")[1].startswith("w150 ")
    assert chunk_texts("T", "", "short body") == ["T\nshort body"]


def _seed(wiki: Wiki, entries: dict[str, str]) -> None:
    proposal = propose(wiki, {p: t.encode() for p, t in entries.items()}, base=None, kind="seed",
                          subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)


ENTRIES = {
    "hr/leave.md": entry_text("lv", "Annual leave", "Request vacation days in HR Links."),
    "it/laptop.md": entry_text("lp", "Laptop setup", "New laptops are set up by IT.",
                               aliases="[computer onboarding]"),
    "ops/voucher.md": entry_text("vo", "Travel voucher", "File your voucher in Concur."),
}


def test_hybrid_search_uses_all_legs_and_explains(wiki: Wiki, fake_model) -> None:
    _seed(wiki, ENTRIES)
    result = search_for(wiki, "computer onboarding")
    assert result.legs == ["alias", "bm25", "vector"] and result.skipped == {}
    top = result.hits[0]
    assert top.key == "it/laptop.md"
    assert set(top.legs) == {"alias", "bm25", "vector"}
    assert top.score == pytest.approx(sum(top.contributions.values()))
    assert set(top.contributions) == {"alias", "bm25", "vector"}
    only_vector = search_for(wiki, "laptops IT", legs=("vector",))
    assert only_vector.legs == ["vector"] and only_vector.hits[0].key == "it/laptop.md"


@pytest.mark.robustness("I1")
def test_vectors_follow_edits_and_deletes_and_skip_unchanged(wiki: Wiki, fake_model,
                                                             tmp_path) -> None:
    _seed(wiki, ENTRIES)
    search_for(wiki, "leave")
    first = fake_model.calls
    assert first == 4  # three entries' chunks (no answer sentence: an answer embeds those), the query
    search_for(wiki, "voucher")
    assert fake_model.calls == first + 1  # only the query: nothing re-embedded
    view = tmp_path / "view"
    git(wiki.root, "worktree", "add", "-q", "--detach", str(view), "wiki")
    (view / "ops" / "voucher.md").unlink()
    (view / "hr" / "leave.md").write_text(entry_text("lv", "Annual leave",
                                                     "Vacation requests go to the payroll robot."))
    git(view, "add", "-A")
    git(view, "commit", "-q", "-m", "hand edit")
    git(view, "push", "-q", str(wiki.root), "HEAD:refs/heads/wiki")
    hits = search_for(wiki, "payroll robot", legs=("vector",)).hits
    assert fake_model.calls == first + 1 + 2  # a changed chunk + the query
    assert hits[0].key == "hr/leave.md"
    assert "ops/voucher.md" not in [h.key for h in hits]


@pytest.mark.robustness("I3")
def test_model_change_rebuilds_vectors_never_mixes(wiki: Wiki, monkeypatch) -> None:
    _seed(wiki, ENTRIES)
    small = HashingEmbedder("fake-a", 16)
    embedders.register("fake-a", lambda: small)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-a")
    search_for(wiki, "leave")
    assert small.calls == 4  # three entries' chunks and the query
    big = HashingEmbedder("fake-a", 32)  # same name, another dimension
    embedders.register("fake-a", lambda: big)
    result = search_for(wiki, "laptop", legs=("vector",))
    assert big.calls == 4 and result.hits[0].key == "it/laptop.md"
    with SearchIndex(wiki.database_path()) as index:
        dims = {r[0] for r in index.conn.execute("SELECT DISTINCT dim FROM embeddings")}
        assert dims == {32}
        assert index.get_meta("embedding_model") == "fake-a:32"


@pytest.mark.robustness("I3")
def test_robustness_i3_another_model_name_re_embeds_everything(wiki: Wiki, monkeypatch) -> None:
    _seed(wiki, ENTRIES)
    first = HashingEmbedder("fake-one", 16)
    second = HashingEmbedder("fake-two", 16)  # same dimension: only the name tells them apart
    embedders.register("fake-one", lambda: first)
    embedders.register("fake-two", lambda: second)
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-one")
    search_for(wiki, "leave")
    with SearchIndex(wiki.database_path()) as index:
        assert index.get_meta("embedding_model") == "fake-one:16"
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-two")
    result = search_for(wiki, "laptop", legs=("vector",))
    assert second.calls == 4 and result.hits[0].key == "it/laptop.md"  # all three + query
    with SearchIndex(wiki.database_path()) as index:
        assert index.get_meta("embedding_model") == "fake-two:16"
        assert {r[0] for r in index.conn.execute("SELECT DISTINCT dim FROM embeddings")} == {16}


@pytest.mark.robustness("I3")
def test_wrong_shape_from_a_model_is_refused(tmp_path) -> None:
    class Broken(HashingEmbedder):
        def encode(self, texts):
            return np.zeros((len(texts), 3), dtype=np.float32)

    with SearchIndex(tmp_path / "x.sqlite") as index:
        with index.transaction():
            index.upsert([Document("a.md", "a", "A", body="text")])
        with pytest.raises(ValueError, match="returned shape"):
            embed_pending(index.vectors, Broken("broken", 8))


@pytest.mark.robustness("Q6")
def test_nonsense_query_is_a_gap_even_though_vectors_always_answer(wiki: Wiki,
                                                                  fake_model) -> None:
    _seed(wiki, ENTRIES)
    result = search_for(wiki, "zzqx plugh frobnicate")
    assert result.hits  # the vector leg always has nearest neighbours...
    assert result.gap   # ...but nothing the query says is in them


def test_vector_leg_is_skipped_with_a_reason_when_turned_off(wiki: Wiki) -> None:
    _seed(wiki, ENTRIES)
    result = search_for(wiki, "leave")
    assert result.skipped == {"vector": "turned off (WIKI_EMBED_MODEL=none)"}
    assert result.hits[0].key == "hr/leave.md"


def test_cli_legs_option(cli, wiki: Wiki, fake_model) -> None:
    _seed(wiki, ENTRIES)
    result = cli("search", "voucher", "--legs", "bm25,alias", "--json")
    assert result.exit_code == 0
    assert set(json.loads(result.stdout)["hits"][0]["legs"]) <= {"bm25", "alias"}
    assert cli("search", "voucher", "--legs", "bm25,nope").exit_code == 2


@pytest.mark.parametrize("question", ["how many days off can I take for holidays?"])
def test_real_model_finds_a_paraphrase(wiki: Wiki, monkeypatch, question: str) -> None:
    monkeypatch.setenv("WIKI_EMBED_MODEL", embedders.DEFAULT_MODEL)
    _seed(wiki, {**ENTRIES, "hr/pto.md": entry_text(
        "pto", "Vacation allowance", "Employees accrue annual leave every pay period.")})
    result = search_for(wiki, question, legs=("vector",))
    assert result.hits[0].key in {"hr/pto.md", "hr/leave.md"}



def test_bm25_prefetch_falls_back_when_filters_drop_the_best_matches(tmp_path) -> None:
    """The 300 best 'falcon' matches are in category a; a category-b search must still
    find b's (weaker) matches, in BM25 order, whatever the prefetch size."""
    strong = [Document(f"a/{i}.md", f"a{i}", f"Falcon falcon {i}", body="falcon " * 5,
                       category="a") for i in range(300)]
    weak = [Document(f"b/{i}.md", f"b{i}", f"Bird {i}", body="falcon" + " filler" * (20 + i),
                     category="b") for i in range(5)]
    with SearchIndex(tmp_path / "x.sqlite") as index, index.transaction():
        index.upsert(strong + weak)
    with SearchIndex(tmp_path / "x.sqlite") as index:
        found = index.search_bm25("falcon", limit=10, filters=Filters(category="b"))
        assert [h.key for h in found] == [f"b/{i}.md" for i in range(5)]
        everything = index.search_bm25("falcon", limit=10, filters=Filters())
        assert all(h.key.startswith("a/") for h in everything) and len(everything) == 10


def test_a_query_encoded_once_is_not_encoded_again(wiki: Wiki, fake_model) -> None:
    """The search-then-ask of one question (and a question asked again) encodes it once
    per embedder; the kept vector is read-only and ranks exactly as a fresh one."""
    from wiki.answering.embedding import QUERY_VECTORS

    _seed(wiki, ENTRIES)
    first = search_for(wiki, "computer onboarding laptops")
    calls = fake_model.calls
    again = search_for(wiki, "computer onboarding laptops")
    assert fake_model.calls == calls
    assert [(h.key, h.score) for h in again.hits] == [(h.key, h.score) for h in first.hits]
    kept = QUERY_VECTORS.get(fake_model, "computer onboarding laptops")
    assert kept is not None and not kept.flags.writeable
    search_for(wiki, "voucher laptops")
    assert fake_model.calls == calls + 1
    assert QUERY_VECTORS.get(HashingEmbedder(), "computer onboarding laptops") is None
