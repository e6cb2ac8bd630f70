"""The README's Measured section is what evals.readme_table writes from the committed
results (issue 17.4): a number in the README that no results file holds fails here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evals import readme_table

ROOT = Path(__file__).resolve().parent.parent


def test_readme_measured_section_is_generated_from_the_committed_results() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme_table.replace_section(readme, readme_table.render()) == readme, (
        "README.md's Measured section differs from the results: run "
        "`python -m evals.readme_table`")


def test_the_section_carries_the_results_numbers() -> None:
    """The prose states the numbers of the committed results files (read here directly)."""
    results = Path(readme_table.__file__).parent / "results"
    bench = json.loads((results / "bench.json").read_text(encoding="utf-8"))
    gaps = json.loads((results / "ask-gaps.json").read_text(encoding="utf-8"))["handbook"]
    body = readme_table.render()
    prose = " ".join(body.split())
    build = bench["build"]
    assert f"{build['pages']} pages, {build['entries']} entries" in prose
    assert f"indexed in {build['total']:.1f} s" in prose
    first = json.loads((results / "first-build.json").read_text(encoding="utf-8"))["runs"]
    assert (f"fully indexed, vectors included, in {first[0]['total_wall_s']:.1f} s with "
            f"{first[0]['model']} (the default" in prose)
    assert (f"an evidence gap on {gaps['gaps']} of the {gaps['unanswerable']} unanswerable"
            in prose)
    assert f"among the {gaps['answerable']} answerable ones" in prose
    hedge = json.loads((results / "hedge-calibration.json").read_text(encoding="utf-8"))
    test = hedge["test"]
    assert (f"{test['caught']} of {test['unanswerable']['n']} (" in prose
            and "unanswerable questions end as an evidence gap or a hedged answer" in prose)
    assert (f"{test['answerable']['hedged']} of {test['answerable']['n']} (" in prose
            and f"below {hedge['adopted']['threshold']:.2f}, chosen on the tune half" in prose)


def test_doctor_and_the_readme_state_the_measured_model_start(monkeypatch) -> None:
    """Issue 28.6: ``wiki doctor`` said the embedding server starts in "about 5 s" (PyTorch's
    load time) where the README said 0.4 s; both now state model-start.json's numbers."""
    from served_vectors import runtime_dir

    from indexes.embedding.embedders import DEFAULT_MODEL
    from wiki import doctor

    results = Path(readme_table.__file__).parent / "results"
    start = json.loads((results / "model-start.json").read_text(encoding="utf-8"))
    server = f"{start['server']['p50_s']:.1f} s"
    assert f"{doctor.SERVER_START_S:.1f} s" == server
    prose = " ".join(readme_table.render().split())
    assert f"starts in {server} as the server" in prose
    assert f"loads in {start['load']['p50_s']:.1f} s in a process" in prose
    monkeypatch.setenv("WIKI_EMBED_MODEL", DEFAULT_MODEL)
    monkeypatch.setenv("WIKI_EMBED_SERVER", "auto")
    from indexes.embedding.onnx_embedder import onnx_copy_path

    with runtime_dir("ms-") as runtime:  # no server runs there
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        # a cache holding the model's copy (as after any first use; only its presence is
        # asked), whatever tests ran before in this process
        monkeypatch.setenv("XDG_CACHE_HOME", str(runtime / "made-cache"))
        onnx_copy_path(DEFAULT_MODEL).parent.mkdir(parents=True)
        onnx_copy_path(DEFAULT_MODEL).write_bytes(b"")
        said = doctor.check_embed_server().message
        # a cache without the model's copies: the first start makes them, and says so
        monkeypatch.setenv("XDG_CACHE_HOME", str(runtime / "empty-cache"))
        first = doctor.check_embed_server().message
    assert said.startswith("not running") and f"(about {server})" in said, said
    assert f"(about {server}; this first time about 10 s more" in first, first


def test_a_changed_result_changes_the_readme_and_check_says_stale(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(ROOT / "evals" / "results", results)
    bench = json.loads((results / "bench.json").read_text())
    bench["build"]["total"] = 12.34
    (results / "bench.json").write_text(json.dumps(bench))
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "README.md", readme)
    args = ["--readme", str(readme), "--results", str(results)]
    assert readme_table.main([*args, "--check"]) == 1
    assert readme.read_text() == (ROOT / "README.md").read_text()  # --check writes nothing
    assert readme_table.main(args) == 0
    assert "indexed in 12.3 s" in readme.read_text()
    assert readme_table.main([*args, "--check"]) == 0


def test_a_missing_field_names_the_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "scifact.json").write_text("{}")
    for name in ("handbook", "locomo", "bench", "model-start", "staleness", "ask-gaps",
                 "hedge-calibration", "bench-scale", "bench-serve", "first-build"):
        shutil.copy(ROOT / "evals" / "results" / f"{name}.json", tmp_path)
    with pytest.raises(readme_table.TableError, match=r"scifact.json: no field results"):
        readme_table.render(tmp_path)
