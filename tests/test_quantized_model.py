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


def test_the_quantizer_writes_no_warning_and_leaves_no_handler(copies, tmp_path, capsys,
                                                                caplog) -> None:
    """ONNX Runtime's quantizer logs advice through ``logging.warning``, which also installs
    a stderr handler on a root logger that has none; it would have printed every later
    library log line (helper-29). Nothing is said, and no handler stays."""
    source, _ = copies
    saved = logging.root.handlers[:]
    for handler in saved:
        logging.root.removeHandler(handler)
    try:
        with caplog.at_level(logging.DEBUG):
            onnx_embedder.quantize_copy(source, tmp_path / "q8.onnx")
        assert [h for h in logging.root.handlers if h is not caplog.handler] == []
    finally:
        for handler in saved:
            logging.root.addHandler(handler)
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
    assert said[0] == embedders.PREPARING and said[-1].startswith("embedding model ready (")
    assert "  building the ONNX copy of the float weights" in said  # no PyTorch: helper-30
    assert "  making the int8 copy" in said
    assert len([line for line in said if "ready" in line]) == 1
    assert not embedders.needs_preparing(spec)
    _, q8 = copies
    want = OnnxEmbedder(q8).encode(TEXTS[:3])
    # made the torch-free way, as the fixture's: the same int8 copy, the same vectors
    assert float(np.abs(model.encode(TEXTS[:3]) - want).max()) < 1e-5
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


def test_switching_models_keeps_each_models_vectors(cli, wiki, monkeypatch) -> None:
    """Helper-29's finding: the first read under another model (the int8 default after an
    upgrade, or WIKI_EMBED_RUNTIME=torch picking the float model) deleted every stored
    vector of the old one. Both engines now keep each model's vectors; status and doctor
    count the model in use."""
    from conftest import ALICE, BOB, entry_text
    from test_hybrid import HashingEmbedder

    from wiki.review.proposals import approve, propose

    old, new = HashingEmbedder("fake-old", 32), HashingEmbedder("fake-new", 48)
    embedders.register("fake-old", lambda: old)
    embedders.register("fake-new", lambda: new)
    entries = {f"kb/page-{i}.md": entry_text(f"p{i}", f"Page {i}", f"Topic {i} of {30} pages.")
               for i in range(30)}  # more chunks than a read embeds by itself
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-old")
    proposal = propose(wiki, {p: t.encode() for p, t in entries.items()}, base=None,
                       kind="seed", subject="seed", author=ALICE).proposal
    approve(wiki, proposal.name, approver=BOB)
    assert cli("index").exit_code == 0
    embedded = old.calls
    assert embedded >= 30
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-new")
    read = cli("search", "topic pages", "--json")
    assert json.loads(read.stdout)["vectors_pending"] >= 30  # the new model: none yet
    status = json.loads(cli("status", "--json").stdout)
    assert status["embedded_chunks"] == 0 and status["embedding_model"].startswith("fake-new")
    monkeypatch.setenv("WIKI_EMBED_MODEL", "fake-old")
    back = cli("search", "topic pages", "--json")
    assert json.loads(back.stdout)["vectors_pending"] == 0
    assert old.calls == embedded + 1  # the query alone: no chunk embedded again
    with sqlite3.connect(wiki.database_path()) as conn:
        kept = conn.execute("SELECT count(*) FROM embeddings WHERE model = 'fake-old'")
        assert kept.fetchone()[0] >= 30


def test_two_first_uses_at_once_both_make_a_good_copy(copies, tmp_path) -> None:
    """Helper-29's finding: given a path, the quantizer wrote its shape-inferred copy
    beside the source under a fixed name, so two first uses at once deleted each other's
    (`No such file ...-inferred.onnx`). Two processes now both succeed, and nothing but
    the copies is left in the folder."""
    import subprocess
    import sys

    source, _ = copies
    folder = tmp_path / "models"
    folder.mkdir()
    float_copy = folder / "float.onnx"
    float_copy.write_bytes(source.read_bytes())
    code = ("import sys; from pathlib import Path; "
            "from indexes.embedding.onnx_embedder import quantize_copy; "
            "quantize_copy(Path(sys.argv[1]), Path(sys.argv[2]))")
    runs = [subprocess.Popen([sys.executable, "-c", code, str(float_copy),
                              str(folder / f"q8-{n}.onnx")], stderr=subprocess.PIPE, text=True)
            for n in range(2)]
    errors = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errors
    assert errors == ["", ""]  # and nothing said on stderr
    assert sorted(p.name for p in folder.iterdir()) == ["float.onnx", "q8-0.onnx", "q8-1.onnx"]


def test_a_damaged_float_copy_is_made_again_for_the_int8_one(cache_home, copies) -> None:
    float_copy = onnx_embedder.onnx_copy_path(DEFAULT_MODEL)
    float_copy.parent.mkdir(parents=True)
    source, _ = copies
    float_copy.write_bytes(source.read_bytes()[:1_000_000])  # truncated
    said: list[str] = []
    model = embedders.load_quantized(EmbedderSpec(model=QUANTIZED_MODEL, server="off",
                                                  notify=said.append))
    assert model.encode(["travel voucher"]).shape == (1, 384)
    assert OnnxEmbedder(float_copy).encode(["x"]).shape == (1, 384)  # whole again
    assert "  making the int8 copy" in said


def test_a_copy_that_cannot_be_written_says_how_to_go_on(cache_home, copies) -> None:
    """Where the int8 copy cannot be made (here a folder stands at its path; a read-only
    or full cache is the same case), the error names the float model as the way on."""
    float_copy = onnx_embedder.onnx_copy_path(DEFAULT_MODEL)
    float_copy.parent.mkdir(parents=True)
    float_copy.write_bytes(copies[0].read_bytes())
    onnx_embedder.onnx_copy_path(QUANTIZED_MODEL).mkdir()
    with pytest.raises(EmbedderUnavailableError,
                       match="int8 copy.*; set WIKI_EMBED_MODEL=all-MiniLM-L6-v2 to embed"):
        embedders.load_quantized(EmbedderSpec(model=QUANTIZED_MODEL, server="off"))
    assert sorted(p.name for p in float_copy.parent.iterdir()) == sorted(
        [float_copy.name, onnx_embedder.onnx_copy_path(QUANTIZED_MODEL).name])


def test_making_the_copies_never_loads_pytorch(tmp_path) -> None:
    """helper-30: the shared server that made the copies through torch's exporter kept
    PyTorch (~1 GB) loaded for as long as it ran. The float copy for the int8 one is now
    built without it wherever onnx_build can (every `make setup` install)."""
    import os
    import subprocess
    import sys

    code = ("import sys; from indexes.embedding import embedders; "
            "from indexes.embedding.embed_spec import EmbedderSpec, QUANTIZED_MODEL; "
            "m = embedders.load_quantized(EmbedderSpec(model=QUANTIZED_MODEL, server='off')); "
            "m.encode(['x']); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
                          check=True)
    assert done.stdout.strip() == "False", done.stderr
