"""The int8 model (``all-MiniLM-L6-v2-q8``, issue 27 item 1): made once from the float ONNX
copy, close to its vectors, refused when it drifts, recorded under its own name, the
default where it can be made, and encoding batches on every core gives the same vectors."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import numpy as np
import onnx
import pytest

from indexes.embedding import embed_spec, embedders, onnx_build, onnx_embedder
from indexes.embedding.embed_spec import DEFAULT_MODEL, QUANTIZED_MODEL, EmbedderSpec
from indexes.embedding.embedders import EmbedderUnavailableError
from indexes.embedding.onnx_embedder import OnnxEmbedder

TEXTS = ["How do I rotate the signing keys?", "", "Le café est fermé le lundi.",
         "東京の天気は晴れです", "word " * 600, "a", "file a travel voucher",
         "reimbursement for a trip", "the garage takes the blue badge"]


@pytest.fixture(scope="module")
def copies(tmp_path_factory) -> tuple[Path, Path]:
    """(float copy, int8 copy), made the torch-free way on every Python."""
    folder = tmp_path_factory.mktemp("q8")
    source = onnx_build.build_onnx(onnx_embedder.model_dir(), folder / "float.onnx")
    return source, onnx_embedder.quantize_copy(source, folder / "q8.onnx")


@pytest.fixture()
def cache_home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in (DEFAULT_MODEL, QUANTIZED_MODEL):
        embedders._LOADED.pop(name, None)
    yield tmp_path / "cache"
    for name in (DEFAULT_MODEL, QUANTIZED_MODEL):
        embedders._LOADED.pop(name, None)


def test_int8_copy_is_close_to_the_float_copy_and_smaller(copies) -> None:
    source, q8 = copies
    want = OnnxEmbedder(source).encode(TEXTS)
    got = OnnxEmbedder(q8, name=QUANTIZED_MODEL).encode(TEXTS)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = (got * want).sum(axis=1)
    assert cosines.min() >= onnx_embedder.QUANTIZED_MIN_COSINE, cosines
    assert not np.allclose(got, want, atol=1e-4)  # really another model: its own name
    a, b, c = got[-3:]
    assert float(a @ b) > float(a @ c)
    kinds = {node.op_type for node in onnx.load(str(q8)).graph.node}
    assert "MatMulInteger" in kinds and "DynamicQuantizeLinear" in kinds
    assert q8.stat().st_size < 0.75 * source.stat().st_size


def test_parallel_batches_give_the_vectors_of_one_batch_at_a_time(copies) -> None:
    _, q8 = copies
    texts = [f"{i} " + " ".join(["travel", "leave", "badge", "voucher"][: 1 + i % 4]) * (i % 7)
             for i in range(75)]
    serial = OnnxEmbedder(q8, threads=1)
    parallel = OnnxEmbedder(q8, threads=3)
    one, many = serial.encode(texts), parallel.encode(texts)
    assert float(np.abs(one - many).max()) < 1e-5
    # each row is its own text's, whatever batch it ran in
    assert float(np.abs(parallel.encode([texts[40]])[0] - many[40]).max()) < 1e-5


def test_a_copy_that_drifts_is_refused_and_nothing_is_left(copies, tmp_path,
                                                             monkeypatch) -> None:
    source, _ = copies
    monkeypatch.setattr(onnx_embedder, "QUANTIZED_MIN_COSINE", 0.9999999)
    target = tmp_path / "copy" / "q8.onnx"
    with pytest.raises(EmbedderUnavailableError, match="too far from the float copy"):
        onnx_embedder.quantize_copy(source, target)
    assert list(target.parent.iterdir()) == []


def test_a_source_that_is_not_a_model_is_a_clear_error(tmp_path) -> None:
    broken = tmp_path / "float.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(EmbedderUnavailableError, match="making the int8 copy failed"):
        onnx_embedder.quantize_copy(broken, tmp_path / "q8.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["float.onnx"]


def test_the_quantizer_writes_no_warning(copies, tmp_path, capsys, caplog) -> None:
    source, _ = copies
    with caplog.at_level(logging.DEBUG):
        onnx_embedder.quantize_copy(source, tmp_path / "q8.onnx")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert capsys.readouterr().err == ""


def test_load_makes_both_copies_once_and_says_so(cache_home, copies) -> None:
    said: list[str] = []
    spec = EmbedderSpec(model=QUANTIZED_MODEL, runtime="onnx", server="off",
                        notify=said.append)
    assert embedders.needs_preparing(spec)
    model = embedders.load_quantized(spec)
    assert model.name == QUANTIZED_MODEL and isinstance(model, OnnxEmbedder)
    assert onnx_embedder.onnx_copy_path(QUANTIZED_MODEL).exists()
    assert onnx_embedder.onnx_copy_path(DEFAULT_MODEL).exists()
    assert said[0] == embedders.PREPARING and "int8 embedding model ready" in said[-1]
    assert not embedders.needs_preparing(spec)
    _, q8 = copies
    want = OnnxEmbedder(q8).encode(TEXTS[:3])
    # the float copy here may be torch's export (3.11), not onnx_build's: int8 rounds both
    assert float(np.abs(model.encode(TEXTS[:3]) - want).max()) < 1e-3
    said.clear()
    embedders.load_quantized(spec)  # made already: nothing to say
    assert said == []


def test_a_broken_cached_int8_copy_is_made_again(cache_home, copies) -> None:
    path = onnx_embedder.onnx_copy_path(QUANTIZED_MODEL)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"truncated")
    source, _ = copies
    onnx_embedder.onnx_copy_path(DEFAULT_MODEL).write_bytes(source.read_bytes())
    model = embedders.load_quantized(EmbedderSpec(model=QUANTIZED_MODEL, server="off"))
    assert model.encode(["travel voucher"]).shape == (1, 384)
    assert path.read_bytes()[:4] != b"trun"


def test_the_int8_model_has_no_pytorch_form(cache_home) -> None:
    spec = EmbedderSpec(model=QUANTIZED_MODEL, runtime="torch")
    with pytest.raises(EmbedderUnavailableError, match="ONNX Runtime only.*all-MiniLM-L6-v2"):
        embedders.load_quantized(spec)
    assert "ONNX Runtime only" in embedders.probe(QUANTIZED_MODEL, spec)
    assert embedders.probe(QUANTIZED_MODEL, EmbedderSpec(model=QUANTIZED_MODEL)) is None
    assert not onnx_embedder.onnx_copy_path(QUANTIZED_MODEL).exists()


def test_the_default_is_the_int8_model_where_it_can_be_made(monkeypatch) -> None:
    assert embed_spec.installed_default() == QUANTIZED_MODEL  # make setup installs all
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "onnx" else real(name, *a))
    assert embed_spec.installed_default() == DEFAULT_MODEL
    assert QUANTIZED_MODEL in embed_spec.SERVED_MODELS and \
        DEFAULT_MODEL in embed_spec.SERVED_MODELS


def test_a_user_who_sets_nothing_searches_with_the_int8_model(cli, wiki, monkeypatch) -> None:
    """The CLI end to end with no embedding setting: `wiki index` embeds with the int8 model
    and records its vectors under its name; a search ranks by them."""
    from conftest import ALICE, BOB, entry_text

    from wiki.review.proposals import approve, propose

    monkeypatch.delenv("WIKI_EMBED_MODEL")
    entries = {
        "hr/leave.md": entry_text("lv", "Annual leave", "Request vacation days in HR Links."),
        "ops/voucher.md": entry_text("vo", "Travel voucher", "File your voucher in Concur."),
        "it/laptop.md": entry_text("lp", "Laptop setup", "New laptops are set up by IT.")}
    proposal = propose(wiki, {p: t.encode() for p, t in entries.items()}, base=None,
                       kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    assert cli("index").exit_code == 0
    result = cli("search", "how many days off can I take", "--legs", "vector", "--json")
    assert result.exit_code in (0, 1), result.stderr  # 1: weak hits only (a vector leg alone)
    reply = json.loads(result.stdout)
    assert reply["legs"] == ["vector"] and reply["vectors_pending"] == 0
    assert reply["hits"][0]["path"] == "hr/leave.md"
    with sqlite3.connect(wiki.database_path()) as conn:
        models = {row[0] for row in conn.execute("SELECT DISTINCT model FROM embeddings")}
    assert models == {QUANTIZED_MODEL}
