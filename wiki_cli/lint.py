"""``wiki lint``: parse the options, call :func:`wiki.lint.run_lint`, render the report."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki.errors import UsageError
from wiki_cli.common import JsonOption, app, open_wiki
from wiki_cli.errors import FINDINGS, report
from wiki_cli.render import out, plain, print_json, table

FORMATS = ("text", "json", "markdown")


def _codes(value: str | None) -> set[str] | None:
    if value is None:
        return None
    return {part.strip() for part in value.split(",") if part.strip()}


@app.command()
def lint(
    select: Annotated[str | None, typer.Option(
        "--select", help="Rules to run: codes, code prefixes or names (W001,W003).")] = None,
    ignore: Annotated[str | None, typer.Option(
        "--ignore", help="Rules to skip (same forms as --select).")] = None,
    output_format: Annotated[str, typer.Option(
        "--format", help="text (a table), json (same as --json), or markdown (a report to "
                     "post).")] = "text",
    fix: Annotated[bool, typer.Option(
        "--fix", help="Turn the safe fixes into one proposal (needs approval).")] = False,
    json_output: JsonOption = False,
) -> None:
    """Check the wiki: stale or missing sources, contradictions, duplicates, index drift,
    broken links, schema errors, expired entries (docs/lint.md). Exit 0 when no
    error-severity finding is left, 1 when one is, 2 on a usage or config error."""
    from wiki.lint import report_dict, run_lint, save_report

    if json_output and output_format not in ("text", "json"):
        raise UsageError(f"--json and --format {output_format} disagree; give one of them")
    output_format = "json" if json_output else output_format
    if output_format not in FORMATS:
        raise UsageError(f"--format takes {', '.join(FORMATS)}; got {output_format!r}")
    wiki = open_wiki()
    result = run_lint(wiki, _codes(select), _codes(ignore), fix=fix)
    try:
        saved = save_report(wiki, result)
    except OSError as exc:
        report(f"warning: could not save the report: {exc}")
        saved = None
    data = report_dict(result)
    if output_format == "json":
        print_json(data)
    elif output_format == "markdown":
        out.print(plain(markdown(data)))
    else:
        _text(data)
        if saved is not None:
            report(f"report saved to {saved}")
    if result.errors:
        raise typer.Exit(FINDINGS)


def _text(data: dict) -> None:
    if data["findings"]:
        grid = table("path", "code", "severity", "message", "fix", identifiers=("path",),
                     optional=("fix", "severity"))
        for f in data["findings"]:
            where = f["path"] + (f":{f['line']}" if f["line"] else "")
            grid.add_row(plain(where), f["code"], f["severity"], plain(f["message"]),
                         "yes" if f["fixable"] else "")
        out.print(grid)
    report(_summary(data))
    if data["proposal"]:
        name = data["proposal"]["name"]
        verb = "proposed" if data["proposal"]["created"] else "already proposed"
        report(f"fixes {verb} as {name}: review with `wiki diff {name}`")
    elif data["summary"]["fixable"]:
        report("run `wiki lint --fix` to propose the fixable ones")


def _summary(data: dict) -> str:
    s = data["summary"]
    fixed = f", {s['fixed']} fixed by a proposal" if s["fixed"] else ""
    return (f"{s['errors']} error(s), {s['warnings']} warning(s), {s['fixable']} fixable"
            f"{fixed} ({len(data['rules'])} rules, commit {data['commit'][:12]})")


def markdown(data: dict) -> str:
    """A markdown report (for a cron job to post): summary, counts, one table of findings."""
    lines = ["# wiki lint", "", f"Commit `{data['commit'][:12]}`: {_summary(data)}.", ""]
    if data["summary"]["counts"]:
        lines += ["| code | findings |", "|---|---|"]
        lines += [f"| {c} | {n} |" for c, n in data["summary"]["counts"].items()]
        lines.append("")
    if data["findings"]:
        lines += ["| path | code | severity | message |", "|---|---|---|---|"]
        for f in data["findings"]:
            where = f["path"] + (f":{f['line']}" if f["line"] else "")
            message = f["message"].replace("|", "\\|")
            lines.append(f"| `{where}` | {f['code']} | {f['severity']} | {message} |")
        lines.append("")
    else:
        lines += ["No findings.", ""]
    if data["proposal"]:
        lines += [f"Fixes proposed as `{data['proposal']['name']}`.", ""]
    return "\n".join(lines)
