"""Set-up as a newcomer meets it (issue 17, "installs anywhere, says what is true"): the
Makefile's choice of interpreter, the pytest configuration, the README's prerequisites and
command list, and the demo script that `make demo` runs.

The Makefile is run for real with ``make -n`` (nothing installed) against a venv folder made
here: its ``bin/python`` is a link to a real interpreter, so its version is real; the other
interpreter is a two-line script that answers the Makefile's version question like a Python
of another version would.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from indexes.retrieval.legs import LEG_NAMES

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
THIS = ".".join(map(str, sys.version_info[:3]))


def _venv(tmp_path: Path, python: str) -> Path:
    """A venv folder whose bin/python is ``python``, installed as far as make can tell."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(python)
    (venv / ".installed").touch()
    os.utime(venv / ".installed", (2**31, 2**31))  # newer than pyproject.toml/constraints.txt
    return venv


def _other_python(tmp_path: Path) -> Path:
    """An executable that answers the Makefile's version question as Python 3.12.9 would."""
    script = tmp_path / "python3.12"
    script.write_text("#!/bin/sh\necho 3.12 3.12.9\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def _make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()  # not the outer make's (CI runs make test)
           if k not in {"PYTHON", "VENV", "PYTEST_ARGS", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}
    return subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=60)


def test_make_stops_when_python_differs_from_the_venvs(tmp_path: Path) -> None:
    """Issue 17.1: `PYTHON=` of another version is not silently ignored once the venv
    exists: make stops with one line naming both versions and the VENV= form."""
    venv = _venv(tmp_path, sys.executable)
    other = _other_python(tmp_path)
    done = _make("test", f"PYTHON={other}", f"VENV={venv}")
    assert done.returncode == 2
    assert done.stdout == ""
    line = done.stderr.strip()
    assert "\n" not in line
    assert f"{venv} is Python {THIS} but PYTHON={other} is Python 3.12.9" in line
    assert f"make test PYTHON={other} VENV=.venv-3.12" in line
    assert f"make clean VENV={venv}" in line


def test_make_keeps_a_venv_of_the_same_python(tmp_path: Path) -> None:
    """The same version given again (what .ci/run does for lint then test), or no PYTHON
    at all, uses the venv as it is."""
    venv = _venv(tmp_path, sys.executable)
    for args in ([f"PYTHON={sys.executable}"], []):
        done = _make("test", *args, f"VENV={venv}")
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"PYTHONDONTWRITEBYTECODE= {venv}/bin/python -m pytest -n auto"


def test_make_names_a_python_that_does_not_run(tmp_path: Path) -> None:
    venv = _venv(tmp_path, sys.executable)
    done = _make("test", "PYTHON=no-such-python3", f"VENV={venv}")
    assert done.returncode == 2
    assert "PYTHON=no-such-python3 does not run" in done.stderr


def test_make_clean_is_not_stopped_by_the_check(tmp_path: Path) -> None:
    venv = _venv(tmp_path, sys.executable)
    done = _make("clean", f"PYTHON={_other_python(tmp_path)}", f"VENV={venv}")
    assert done.returncode == 0, done.stderr
    assert f"rm -rf {venv} " in done.stdout


def test_a_fresh_install_says_each_step(tmp_path: Path) -> None:
    """Issue 17.4: a line per step, the long one saying it takes about a minute; the
    recipe's comments are not echoed as commands."""
    done = _make("setup", f"VENV={tmp_path / 'fresh'}")
    assert done.returncode == 0, done.stderr
    echoed = re.findall(r'^echo "(make: [^"]*)"', done.stdout, re.M)
    assert any("creating" in line for line in echoed)
    assert any("installing wiki and its dependencies" in line and "about a minute" in line
               for line in echoed)
    assert not re.search(r"^\s*#", done.stdout, re.M)


# -- pyproject.toml -------------------------------------------------------------------------

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it() -> None:
    """Issue 17.3: no deprecation banner on install: `license` is an SPDX string, which
    setuptools reads from 77 on; the build requires that and constraints.txt pins one."""
    assert PYPROJECT["project"]["license"] == "MIT"
    assert PYPROJECT["build-system"]["requires"] == ["setuptools>=77"]
    pinned = re.search(r"^setuptools==(\d+)\.", (ROOT / "constraints.txt").read_text(), re.M)
    assert pinned and int(pinned[1]) >= 77


def test_pytest_filters_only_the_third_party_warnings_and_shows_skip_reasons(
        tmp_path: Path) -> None:
    """Issue 17.8: this project's pytest settings run on a test file that raises pydantic's
    ReadOnly warning and litellm's event-loop warning (attributed to their modules, as
    they are), one warning of the same kinds from elsewhere, and a skip: only the two
    third-party ones are filtered, and the skip's reason is shown."""
    test = tmp_path / "test_noise.py"
    test.write_text(
        "import warnings\n"
        "import pytest\n\n"
        "def warn(message, category, module):\n"
        "    warnings.warn_explicit(message, category, module + '.py', 1, module=module)\n\n"
        "def test_third_party():\n"
        "    warn(\"Item 'x' on TypedDict class 'T' is using the `ReadOnly` qualifier. \"\n"
        "         'Pydantic will not protect items', UserWarning,\n"
        "         'pydantic._internal._generate_schema')\n"
        "    warn('There is no current event loop', DeprecationWarning,\n"
        "         'litellm._service_logger')\n\n"
        "def test_ours():\n"
        "    warn('There is no current event loop', DeprecationWarning, 'wiki.something')\n\n"
        "def test_skipped():\n"
        "    pytest.skip('needs torch (Python 3.11)')\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", str(test)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stdout
    assert "SKIPPED [1] test_noise.py:" in done.stdout
    assert "needs torch (Python 3.11)" in done.stdout
    assert "ReadOnly" not in done.stdout
    assert "1 warning" in done.stdout  # test_ours' warning is still shown
    assert "wiki/something.py" in done.stdout or "wiki.something" in done.stdout


# -- README and the demo script ---------------------------------------------------------------

def _prerequisites() -> str:
    start = README.index("## Two commands on a fresh machine")
    return README[start:README.index("```", start)]


def test_readme_prerequisites_name_ssh_keygen_and_the_makefiles_interpreter_form() -> None:
    """Issue 17.2 and 17.1: what the Makefile header says a fresh machine needs, and the
    form of choosing an interpreter the Makefile supports (its own venv)."""
    text = " ".join(_prerequisites().split())
    for needed in ("git", "make", "ssh-keygen", "openssh-client"):
        assert f"`{needed}`" in text
    assert "`make setup PYTHON=python3.13 VENV=.venv-3.13`" in text
    header = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nPYTHON ?=")[0]
    assert "ssh-keygen" in header and "VENV=.venv-3.13" in " ".join(header.split())


def test_every_page_that_writes_a_venv_path_says_where_the_313_venv_is() -> None:
    """Issue 28.6: the README's ``export PATH=.../.venv/bin`` and docs/postgres.md assumed
    ``.venv``, where the Makefile's way to use Python 3.13 makes ``.venv-3.13``."""
    start = README.index("## Using it")
    using = README[start:README.index("```", start)]
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in using and "$PWD/.venv-3.13/bin" in using
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    silent = [page.name for page in pages if page.name != "decisions.md"
              and ".venv/bin" in (text := page.read_text(encoding="utf-8"))
              and ".venv-3.13" not in text]
    assert not silent, f"pages that write .venv/bin and never name .venv-3.13: {silent}"


def test_readme_legs_line_lists_every_leg() -> None:
    line = next(line for line in README.splitlines() if "# pick legs:" in line)
    listed = re.findall(r"\b(\w+)\b", line.split("# pick legs:")[1])
    assert set(LEG_NAMES) <= set(listed)


def test_readme_parts_of_indexes_are_modules_that_exist() -> None:
    """Issue 17.9: "confidence" was folded into indexes/retrieval/coverage.py."""
    part = README[README.index("- `indexes/`:"):README.index("- `wiki/`:")]
    assert "confidence" not in part
    assert "coverage" in part and (ROOT / "indexes" / "coverage.py").exists()


def test_demo_approves_with_the_review_hash_as_the_readme_shows() -> None:
    """Issue 17.9: the README shows `wiki approve <name> --expect HASH`; the demo does the
    same, with the hash `wiki diff` printed."""
    assert "wiki approve <name> --expect HASH" in README
    demo = (ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    approve = next(line for line in demo.splitlines() if '"$WIKI" approve' in line)
    assert '--expect "$hash"' in approve
    assert "sed -n 's/.*review hash //p'" in demo


@pytest.fixture()
def wiki_command(tmp_path: Path) -> Path:
    """A `wiki` executable running this checkout's code with this interpreter."""
    command = tmp_path / "bin" / "wiki"
    command.parent.mkdir()
    command.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT}" exec "{sys.executable}" -m wiki_cli "$@"\n',
                       encoding="utf-8")
    command.chmod(0o755)
    return command


@pytest.mark.slow
def test_demo_runs_through_review_with_expect(tmp_path: Path, wiki_command: Path) -> None:
    """scripts/demo.sh end to end on a two-page folder (no vectors): the approval with
    `--expect` lands, and the questions are asked."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "start.md").write_text("# Getting started\n\nTo get started, run `make setup` "
                                     "and read the guide in the docs folder.\n", encoding="utf-8")
    (corpus / "help.md").write_text("# Help\n\nAsk the platform team in the #help channel "
                                    "for help with the tools.\n", encoding="utf-8")
    env = {**os.environ, "WIKI": str(wiki_command), "DEMO_CORPUS": str(corpus),
           "WIKI_EMBED_MODEL": "none", "WIKI_EMBED_SERVER": "off", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"== wiki approve \S+ --expect [0-9a-f]{12}\.\.\. \(as a second person\)",
                     done.stderr)
    assert '$ wiki ask "how do I get started?"' in done.stdout
