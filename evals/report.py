"""Writing result tables: markdown for people, JSON for machines."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from evals.datasets import REPO_ROOT, git_head


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def project_commit() -> str:
    """Short HEAD of the project repository, with ``+dirty`` when files under ``wiki/``,
    ``indexes/`` or ``wiki_cli/`` differ from it (results then depend on uncommitted code)."""
    commit = git_head(REPO_ROOT)
    try:
        status = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--",
             "wiki", "indexes", "wiki_cli"],
            capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return commit
    return commit + ("+dirty" if status.strip() else "")


def fmt(value) -> str:
    """A table cell: floats with 3 decimals, others as text."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else ("yes" if value else "no")
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table (``|`` in cells escaped)."""
    def line(cells: Sequence) -> str:
        return "| " + " | ".join(fmt(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(headers), "|" + "|".join("---" for _ in headers) + "|",
                      *(line(r) for r in rows)])


def header(title: str, facts: dict) -> str:
    """A markdown title followed by a bullet list of ``facts``."""
    lines = [f"# {title}", ""]
    lines += [f"- **{k}**: {v}" for k, v in facts.items()]
    return "\n".join(lines)


def write(out: Path, stem: str, markdown: str, payload: dict | None = None) -> list[Path]:
    """Write ``<out>/<stem>.md`` (and ``.json`` when ``payload`` is given)."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / f"{stem}.md"]
    written[0].write_text(markdown.rstrip("\n") + "\n", encoding="utf-8")
    if payload is not None:
        path = out / f"{stem}.json"
        path.write_text(json.dumps(payload, indent=2, sort_keys=False, default=_default) + "\n",
                        encoding="utf-8")
        written.append(path)
    return written


def _default(value):
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
