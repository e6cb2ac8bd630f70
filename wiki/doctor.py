"""``wiki doctor``: check the install and the repository, and say how to fix each finding.

Every check returns :class:`Check` values with a level: ``ok``, ``info`` (worth knowing,
nothing wrong), ``warning`` (works, but something is missing or behind) or ``error``
(a command will fail or degrade). The cheap checks import no model library; ``deep``
loads the embedding model and encodes one sentence.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from indexes.embedding import embedders
from indexes.embedding.embed_spec import installed_default
from indexes.errors import IndexSchemaError, IndexUnavailableError
from wiki.answering.embed_settings import current_spec
from wiki.answering.embedding import model_name
from wiki.errors import ConfigError, WikiError

OK, INFO, WARNING, ERROR = "ok", "info", "warning", "error"
MIN_GIT = (2, 25)
"""Oldest git the project is tested with (worktree --porcelain, update-ref CAS, git var)."""
LOCAL_MODEL_INSTALL = ("in a checkout `make setup-llm`; else pip install 'wiki-kb[local]' "
                       "(llama-cpp-python, compiled, and the model's weights; docs/llm.md)")
"""How to install the offline model, as README.md and docs/llm.md say it."""
OPTIONAL = {
    "litellm": ("LLM answers and the index walk (WIKI_MODEL)",
                "litellm is a dependency of wiki: reinstall wiki ({how})"),
    "llama_cpp": ("the offline model, WIKI_MODEL=local/qwen2.5-coder-1.5b", LOCAL_MODEL_INSTALL),
}
"""Optional modules: what each gives, and how to install it."""
SERVER_START_S = 0.3
"""Seconds from the embedding server's spawn to its first reply, p50, as measured by
``python -m evals.bench_model_start`` (evals/results/model-start.json, ``server.p50_s``;
the README's Measured section states the same number, tests/test_readme_table.py checks
both)."""


def reinstall_hint(package_dir: Path | None = None, prefix: Path | None = None) -> str:
    """How this install is repaired, in the words of how it was made: ``make setup`` in a
    checkout (``package_dir``'s parent holds the Makefile and pyproject.toml), ``pipx
    reinstall wiki-kb`` in a pipx venv, else pip into this environment (``prefix``,
    default ``sys.prefix``). One clause, no full stop."""
    root = (package_dir or Path(__file__).resolve().parent).parent
    if (root / "Makefile").is_file() and (root / "pyproject.toml").is_file():
        return f"run `make setup` in {root}"
    prefix = prefix or Path(sys.prefix)
    if "pipx" in prefix.parts:
        return "run `pipx reinstall wiki-kb`"
    return (f"reinstall wiki-kb into {prefix} (`{prefix}/bin/python -m pip install "
            "--force-reinstall` with the wheel or the checkout you installed from)")


@dataclass
class Check:
    """One finding: what was checked, its level, what was found and how to fix it."""

    name: str
    level: str
    message: str
    fix: str = ""


def run_checks(repo: Path | str = ".", branch: str | None = None, *,
               deep: bool = False) -> list[Check]:
    """Every check, install first, then the repository's wiki (skipped when there is no
    repository or wiki branch: that is itself the finding)."""
    checks = [check_git(), *check_model(deep=deep), check_embed_server(), *check_optional()]
    return checks + check_repository(repo, branch)


def has_errors(checks: list[Check]) -> bool:
    """True when any finding is error-level (``wiki doctor`` then exits 1)."""
    return any(c.level == ERROR for c in checks)


def check_git() -> Check:
    """git is on PATH and not older than :data:`MIN_GIT`."""
    program = shutil.which("git")
    if program is None:
        return Check("git", ERROR, "git is not on PATH", "install git (2.25 or newer)")
    done = subprocess.run([program, "--version"], capture_output=True, text=True)
    found = re.search(r"(\d+)\.(\d+)", done.stdout)
    version = (int(found[1]), int(found[2])) if found else (0, 0)
    text = done.stdout.strip() or "unknown version"
    if version < MIN_GIT:
        return Check("git", WARNING, f"{text} is older than {MIN_GIT[0]}.{MIN_GIT[1]}",
                     "upgrade git")
    return Check("git", OK, text)


def check_model(*, deep: bool = False) -> list[Check]:
    """The configured embedding model: installed (cheap probe) and, with ``deep``,
    loadable (loads it and encodes one sentence)."""
    name = model_name()
    if name is None:
        return [Check("embedding model", INFO, "vector leg turned off (WIKI_EMBED_MODEL=none)",
                      "unset WIKI_EMBED_MODEL to search by meaning with "
                      f"{installed_default()}")]
    problem = embedders.probe(name, current_spec())
    if problem:
        fix = ("set WIKI_EMBED_MODEL to a known model" if name not in embedders.names() else
               "set WIKI_EMBED_RUNTIME to auto, onnx or torch" if "RUNTIME" in problem else
               f"unset WIKI_EMBED_RUNTIME, or set WIKI_EMBED_MODEL={embedders.DEFAULT_MODEL}"
               if "ONNX Runtime only" in problem else reinstall_hint())
        return [Check("embedding model", ERROR, f"{name}: {problem}",
                      fix + ", or set WIKI_EMBED_MODEL=none to search without vectors")]
    checks = [Check("embedding model", OK, f"{name}: installed")]
    loaded = _load_model(name) if deep else None  # first: loading may make the ONNX copy
    if name in embedders.SERVED_MODELS:
        checks.append(_runtime(name))
    if loaded is not None:
        checks.append(loaded)
    return checks


def _runtime(name: str) -> Check:
    """Which runtime encodes queries for model ``name``: its ONNX copy (fast start) or
    PyTorch."""
    from indexes.embedding.onnx_embedder import onnx_copy_path

    if current_spec().runtime == "torch":
        return Check("embedding runtime", INFO, "PyTorch (WIKI_EMBED_RUNTIME=torch)")
    path = onnx_copy_path(name)
    if path.exists():
        return Check("embedding runtime", OK, f"ONNX Runtime, copy at {path}")
    return Check("embedding runtime", INFO, "ONNX copy not made yet: the first use makes "
                 "it from the installed weights (once)", "run `wiki doctor --deep` to make it now")


def _load_model(name: str) -> Check:
    started = time.monotonic()
    try:
        vectors = embedders.load(name, current_spec()).encode(["wiki doctor"])
    except Exception as exc:  # any failure of a third-party model is the finding
        return Check("model load", ERROR, f"{name} failed to load: {type(exc).__name__}: "
                     f"{' '.join(str(exc).split())}", reinstall_hint())
    return Check("model load", OK, f"{name} loaded and encoded a sentence in "
                 f"{time.monotonic() - started:.1f}s ({vectors.shape[1]} dimensions)")


def check_embed_server() -> Check:
    """``WIKI_EMBED_SERVER`` is valid, and whether the warm server is running now."""
    from indexes.embedding.embed_server import RemoteEmbedder

    spec = current_spec()
    mode = spec.server
    if mode not in ("auto", "off"):
        return Check("embed server", ERROR, f"WIKI_EMBED_SERVER={mode!r} is not valid",
                     "set it to 'auto' (default) or 'off'")
    name = model_name()
    if name is None:
        return Check("embed server", INFO, "not used: vectors are off")
    if mode == "off":
        return Check("embed server", INFO,
                     "not used (WIKI_EMBED_SERVER=off): each process loads the model")
    if name not in embedders.SERVED_MODELS:
        return Check("embed server", INFO, f"not used for {name}: loaded in each process")
    try:
        reply = RemoteEmbedder(name, start=False, request_timeout=5, spec=spec).ping()
    except embedders.EmbedderUnavailableError as exc:
        if "owned by this user" in str(exc):
            return Check("embed server", WARNING, str(exc),
                         "remove that path, or set WIKI_EMBED_SERVER=off")
        first = ("; this first time about 10 s more: it makes the model's ONNX copies"
                 if embedders.needs_preparing(replace(spec, model=name)) else "")
        return Check("embed server", INFO, "not running; the first search that needs a "
                     f"vector starts it (about {SERVER_START_S:.1f} s{first}), it stops "
                     "after 15 idle minutes")
    return Check("embed server", OK, f"running: {reply.get('model')}, pid {reply.get('pid')}")


def check_optional() -> list[Check]:
    """Optional extras: present or not (an import lookup, nothing is imported)."""
    return [Check(module, OK, "installed") if importlib.util.find_spec(module) else
            Check(module, INFO, f"not installed (optional: {use})",
                  fix.format(how=reinstall_hint()))
            for module, (use, fix) in OPTIONAL.items()]


def check_repository(repo: Path | str, branch: str | None) -> list[Check]:
    """The repository, its wiki branch, ``wiki.toml``, the derived index, hook and cron."""
    from wiki.store.workspace import Wiki

    try:
        wiki = Wiki(repo, branch)
    except WikiError as exc:
        return [Check("repository", ERROR, str(exc), "run `wiki doctor` inside a git "
                      "repository (or pass -C PATH)")]
    try:
        head = wiki.require_head()
    except WikiError as exc:
        return [Check("wiki branch", ERROR, str(exc), "run `wiki init`, or pick the wiki "
                      "with --branch / WIKI_BRANCH / `git config wiki.branch`")]
    checks = [Check("wiki branch", OK, f"'{wiki.branch}' at {head[:12]}")]
    try:
        wiki.config()
        checks.append(Check("config", OK, "wiki.toml is valid"))
    except WikiError as exc:
        checks.append(Check("config", ERROR, str(exc), "correct wiki.toml on the wiki branch "
                            "(docs/cli.md, Settings) through a proposal"))
    return (checks + check_index(wiki, head) + check_proposal_names(wiki)
            + [check_hook(wiki), check_cron(wiki)])


def check_proposal_names(wiki) -> list[Check]:
    """Branches under the proposal namespace that are not listed as proposals because their
    names do not read as themselves (:func:`wiki.review.names.unreadable`): a warning each,
    nothing when there are none."""
    from wiki.review.proposals import unlisted_proposals

    return [Check("proposal names", WARNING, f"{ref} is not listed as a proposal: its name "
                  f"{why}", "rename it with git: `git branch -m OLD NEW` (or `git update-ref "
                  "refs/heads/<wiki>-proposals/NEW <commit>` and delete the old ref), then "
                  "review it as NEW") for ref, why in unlisted_proposals(wiki)]


def check_index(wiki, head: str) -> list[Check]:
    """The derived index is at the branch head, holds no invalid entry or duplicate id,
    and every chunk has a vector of the configured model."""
    from wiki.status import wiki_status

    try:
        info = wiki_status(wiki)
    except IndexUnavailableError as exc:  # the database, not the index: the other checks go on
        return [Check("index", ERROR, str(exc), "check WIKI_INDEX_URL and git config "
                      "wiki.indexUrl (unset both for the SQLite file in the git dir)")]
    except IndexSchemaError as exc:
        return [Check("index", ERROR, str(exc), "upgrade wiki")]
    except WikiError as exc:
        return [Check("index", ERROR, str(exc), "run `wiki index --rebuild`")]
    if info.indexed_commit is None:
        return [Check("index", INFO, "not built yet; the first read builds it",
                      "run `wiki index` to build it now")]
    checks = []
    if info.indexed_commit != head:
        checks.append(Check("index", WARNING, f"at {info.indexed_commit[:12]}, behind the "
                            f"branch head {head[:12]} (the next read catches up)",
                            "run `wiki index`"))
    else:
        checks.append(Check("index", OK, f"up to date at {head[:12]} ({info.entries} entries, "
                            f"{info.database})"))
    if info.invalid_entries:
        checks.append(Check("entries", WARNING, f"{info.invalid_entries} invalid entries are "
                            "left out of search", "run `wiki lint --select W007` to list them"))
    if info.duplicate_ids:
        checks.append(Check("entries", WARNING, "ids used by more than one entry: "
                            + ", ".join(info.duplicate_ids), "replace one of each pair "
                            "(by path) with `wiki propose --supersede PATH FILE`"))
    name = model_name()
    if name and info.chunks and info.embedded_chunks < info.chunks:
        checks.append(Check("vectors", WARNING, f"{info.embedded_chunks}/{info.chunks} chunks "
                            f"have a vector of {name}", "run `wiki index`"))
    return checks


def check_hook(wiki) -> Check:
    """Whether the post-commit hook is installed."""
    from wiki.lint.hook import status

    try:
        hook = status(wiki)
    except ConfigError as exc:
        return Check("post-commit hook", WARNING, str(exc), "add `wiki hook run` to the hook "
                     "your hook manager runs")
    if hook.installed:
        return Check("post-commit hook", OK, f"installed ({hook.path})")
    return Check("post-commit hook", WARNING, "not installed: commits that change cited "
                 "files do not mark their entries", "run `wiki hook install`")


def check_cron(wiki) -> Check:
    """Whether the weekly lint is in the crontab."""
    from wiki.lint.cron import show

    try:
        line = show(wiki)
    except ConfigError as exc:
        return Check("weekly lint", INFO, str(exc), "schedule `wiki lint` in CI (docs/cron.md)")
    if line.installed:
        return Check("weekly lint", OK, "in the crontab")
    return Check("weekly lint", INFO, "not in the crontab", "run `wiki cron install`, or "
                 "schedule `wiki lint` in CI (docs/cron.md)")
