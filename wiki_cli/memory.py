"""Memory commands: keyed facts (`wiki facts`) and procedure outcomes (`wiki feedback`)."""

from __future__ import annotations

from typing import Annotated

import typer

from wiki.errors import UsageError
from wiki_cli.common import JsonOption, app, open_wiki, report_proposal
from wiki_cli.errors import report
from wiki_cli.render import out, plain, print_json, table


@app.command()
def facts(
    words: Annotated[list[str] | None, typer.Argument(
        help="KEY to show, or: set KEY VALUE to propose a new value (none: list the keys).")
    ] = None,
    unit: Annotated[str, typer.Option("--unit", help="Unit of the value (set).")] = "",
    as_of: Annotated[str, typer.Option("--as-of", help="Date the value holds from (set).")] = "",
    entry: Annotated[str | None, typer.Option(
        "--entry", help="Entry (id or path) that states the fact, when no entry holds KEY "
                        "yet (set).")] = None,
    json_output: JsonOption = False,
) -> None:
    """Show a keyed fact (current value, entry, sources, history) or propose a new value
    in the entry that states it; without KEY, list every key the wiki holds now."""
    from wiki.knowledge import facts as memory

    wiki = open_wiki()
    if not words:
        _list_keys(memory.all_current(wiki), json_output)
        return
    if words[0] == "set" and len(words) == 3:
        result = memory.set_fact(wiki, words[1], words[2], unit=unit, as_of=as_of,
                                 entry=entry)
        if json_output:
            print_json(result)
        else:
            report_proposal(result.proposal, result.created, result.existing)
        return
    if len(words) != 1:
        raise UsageError("give KEY, or: set KEY VALUE")
    key = words[0]
    now = memory.current(wiki, key)
    changes = memory.history(wiki, key)
    if json_output:
        print_json({"key": key, "current": now,
                    "history": [{"commit": c.commit, "date": c.date.isoformat(),
                                 "change": c.change, "fact": c.fact} for c in changes]})
        return
    if not now:
        report(f"{key}: no active entry holds it now (history below)")
    for fact in now:
        out.print(plain(f"{key} = {fact.text}"))
        out.print(plain(f"  from {fact.title} — {fact.path} (id {fact.entry_id}); sources: "
                        f"{', '.join(fact.sources) or 'none'}"))
    if len(now) > 1:
        report(f"warning: {len(now)} entries disagree about {key} (wiki lint --select W003)")
    out.print("history:")
    for change in changes:
        out.print(plain(f"  {change.date:%Y-%m-%d} {change.commit[:10]} {change.change:<10} "
                        f"{change.fact.text}  ({change.fact.entry_id})"))


def _list_keys(found: dict, json_output: bool) -> None:
    """``wiki facts`` without a key: each key, its value(s) now and the entry holding it."""
    if json_output:
        print_json([{"key": key, "current": facts} for key, facts in found.items()])
        return
    if not found:
        report("no keyed facts yet (`wiki facts set KEY VALUE --entry ID` proposes one)")
        return
    grid = table("key", "value", "entry", identifiers=("key", "entry"), optional=("value",))
    for key, facts in found.items():
        for fact in facts:
            grid.add_row(plain(key), plain(fact.text), plain(fact.path))
    out.print(grid)
    report(f"{len(found)} key(s); `wiki facts KEY` shows one with its sources and history")


@app.command()
def feedback(
    target: Annotated[str, typer.Argument(help="Procedure entry id or path.")],
    outcome: Annotated[str | None, typer.Argument(
        help="worked or failed (omit to show the counts).")] = None,
    propose: Annotated[bool, typer.Option(
        "--propose", help="Propose writing the counts into the entry's `outcomes`.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Record whether a procedure worked (kept locally; --propose shares the counts)."""
    from wiki.knowledge import feedback as outcomes

    wiki = open_wiki()
    counts = outcomes.record(wiki, target, outcome) if outcome else \
        outcomes.counts(wiki, target)
    proposal, created = None, False
    if propose:
        opened = outcomes.propose_counts(wiki, target)
        proposal, created = opened.proposal, opened.created
    if json_output:
        print_json({**vars(counts), "proposal": proposal.name if proposal else None})
        return
    out.print(plain(f"{counts.path}: worked {counts.worked}, failed {counts.failed}"
                    + (f" (last {counts.last})" if counts.last else "")))
    if proposal is not None:
        report_proposal(proposal, created, None, name_on_stdout=False)
