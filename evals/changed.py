"""Changed-source benchmark: `ask` answers from the current source or flags the entry.

Build the handbook wiki at the dev checkpoint, move the source work tree to the bundle's
HEAD (the wiki branch stays), and ask each question of ``changed.jsonl`` (with the
default revalidation, no model). Per question:

* **HEAD answer**: the answer holds at least half of the *new* key words (words of the
  ``support_after`` quote that ``support_before`` lacks, stop words and link fragments
  left out) and none of the *removed* ones (words of ``support_before`` that
  ``support_after`` lacks; none when the before quote is still on the page at HEAD, as in
  chg-05 where a sentence was appended);
* **flagged**: a citation whose entry comes from the gold page is flagged ``stale``;
* **old without warning** (the failure): the answer holds a removed key word (or, when
  nothing was removed, lacks every new one) and none of its citations is flagged stale.

Then the 35 answerable questions are asked with the repository at the checkpoint: nothing
should be flagged and no source re-read
(counts from :class:`wiki.answering.revalidate.Revalidation`).
Last, the update proposal (``ask --propose``) for the changed sources is opened, approved
by a second identity, and the 8 questions are asked again: nothing should be flagged. Each
question's row after approval is kept (``update.after_rows``, and the two "after approval"
columns of the table), scored exactly as before: the revalidated answer shows a stale
candidate's best sentence even below the relative floor, a fresh entry's answer does not,
so a value can be shown before approval and trimmed after it (docs/decisions.md,
"After the update").

    python -m evals.changed [--data DIR] [--out evals/results]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from evals.datasets import (
    APPROVER,
    CHECKPOINT,
    QUESTIONS,
    bench_environment,
    build_handbook,
    data_dir,
    git_head,
    handbook_questions,
    read_jsonl,
)
from evals.keywords import keys, squash, words


def _show(repo: Path, commit: str, path: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"],
                          capture_output=True)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def score(question: dict, answer, repo: Path, head: str, ids: dict[str, set[str]]) -> dict:
    """One changed question's row (see the module docstring)."""
    page = question["gold"][0]
    before = " ".join(q["quote"] for q in question["support_before"])
    after = " ".join(q["quote"] for q in question["support_after"])
    added = keys(words(after) - words(before))
    still = squash(before) in squash(_show(repo, head, page))
    removed = set() if still else keys(words(before) - words(after))
    text = " ".join(t for t, _ in answer.sentences)
    found = words(text)
    new_hits, old_hits = sorted(added & found), sorted(removed & found)
    head_answer = bool(text) and not old_hits and (
        len(new_hits) * 2 >= len(added) if added else True)
    gold = [c for c in answer.citations if f"git:{page}" in c.sources]
    flagged = any(c.stale for c in gold)
    any_flag = any(c.stale for c in answer.citations)
    old = bool(old_hits) if removed else (bool(text) and not new_hits)
    stale_ids = set((answer.revalidation or {}).get("stale_entries", []))
    return {"id": question["id"], "gap": answer.gap, "head_answer": head_answer,
            "flagged": flagged, "head_or_flagged": head_answer or flagged,
            "old_without_warning": old and not any_flag,
            "gold_cited": bool(gold),
            "gold_stale_candidate": bool(stale_ids & ids.get(page, set())),
            "new_keys": sorted(added), "new_found": new_hits,
            "removed_keys": sorted(removed), "removed_found": old_hits,
            "reasons": [c.reason for c in gold], "answer": text,
            "revalidation": answer.revalidation}


def _ask_all(wiki, questions, **kwargs) -> tuple[list, float]:
    from wiki.answering.ask import ask_for

    answers, started = [], time.perf_counter()
    for question in questions:
        text = question["question"] if isinstance(question, dict) else question.question
        answers.append(ask_for(wiki, text, **kwargs))
    return answers, time.perf_counter() - started


def _counts(answers) -> dict:
    total = {"questions": len(answers), "gaps": sum(a.gap for a in answers),
             "citations": sum(len(a.citations) for a in answers),
             "flagged_stale": sum(c.stale for a in answers for c in a.citations),
             "flagged_unverifiable": sum(c.unverifiable for a in answers for c in a.citations)}
    for key in ("checked", "unchanged", "proven", "changed", "unverifiable", "reread"):
        total[key] = sum((a.revalidation or {}).get(key, 0) for a in answers)
    return total


def run(data: Path) -> dict:
    """Build, ask at the checkpoint, move to HEAD, ask the changed questions, propose."""
    from wiki.answering.revalidate import propose_update
    from wiki.review.proposals import approve
    from wiki.store.gitrepo import Identity
    from wiki.store.workspace import Wiki

    answerable, _ = handbook_questions(data)
    changed = read_jsonl(data / QUESTIONS / "changed.jsonl")
    with tempfile.TemporaryDirectory(prefix="wiki-changed-") as folder:
        repo = Path(folder) / "handbook"
        build_handbook(data, repo, checkpoint=CHECKPOINT)
        wiki = Wiki(repo)
        at_checkpoint, seconds = _ask_all(wiki, answerable)
        _, plain_seconds = _ask_all(wiki, answerable, revalidate=False)
        checkpoint = {**_counts(at_checkpoint), "seconds": round(seconds, 2),
                      "seconds_without_revalidation": round(plain_seconds, 2)}
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"],
                              capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["git", "-C", str(repo), "-c", "advice.detachedHead=false",
                        "checkout", "-q", head], check=True)
        ids: dict[str, set[str]] = {}
        for entry in wiki.snapshot().entries()[0]:
            for source in entry.sources:
                ids.setdefault(source.uri.removeprefix("git:"), set()).add(entry.id)
        answers, _ = _ask_all(wiki, changed)
        rows = [score(q, a, repo, head, ids) for q, a in zip(changed, answers, strict=True)]
        baseline, _ = _ask_all(wiki, changed, revalidate=False)
        baseline_rows = [score(q, a, repo, head, ids)
                         for q, a in zip(changed, baseline, strict=True)]
        uris = sorted({u for a in answers for u in (a.revalidation or {}).get("update", [])})
        report = propose_update(wiki, uris)
        proposal = report.proposal.name if report.proposal else None
        if proposal:
            approve(wiki, proposal, approver=Identity(*APPROVER),
                    override="replay of the handbook's own history: a public corpus")
        after, _ = _ask_all(wiki, changed)
        after_rows = [score(q, a, repo, head, ids) for q, a in zip(changed, after, strict=True)]
    return {"checkpoint": CHECKPOINT, "head": head,
            "legs": "alias + bm25" if os.environ.get("WIKI_EMBED_MODEL") == "none" else
            f"alias + bm25 + vector ({os.environ.get('WIKI_EMBED_MODEL')})",
            "project_commit": git_head(),
            "changed": rows, "changed_totals": _totals(rows),
            "without_revalidation": _totals(baseline_rows),
            "answerable_at_checkpoint": checkpoint,
            "changed_counts": _counts(answers),
            "update": {"sources": uris, "proposal": proposal,
                       "entries_updated": report.updated, "entries_added": report.added,
                       "entries_retracted": report.retracted,
                       "after_approval": {**_totals(after_rows), **_counts(after)},
                       "after_rows": after_rows}}


def _totals(rows: list[dict]) -> dict:
    return {key: sum(r[key] for r in rows) for key in
            ("head_answer", "flagged", "head_or_flagged", "old_without_warning", "gap",
             "gold_cited")} | {"questions": len(rows)}


def markdown(result: dict) -> str:
    """The results table."""
    yes = {True: "yes", False: "-"}
    lines = ["# Changed sources: ask at HEAD over a wiki built at the checkpoint", "",
             f"- **project commit**: {result['project_commit']}",
             f"- **wiki built at** {result['checkpoint'][:12]}, sources moved to "
             f"{result['head'][:12]}; legs: {result['legs']}; no LLM, extractive answers",
             "",
             "| question | HEAD answer | flagged stale | old without warning | gap | gold page "
             "cited | gold entry stale among candidates | new key words found | removed key "
             "words found | after approval: HEAD answer | after approval: gold page cited |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    after = {r["id"]: r for r in result["update"].get("after_rows", [])}
    for r in result["changed"]:
        a = after.get(r["id"])
        later = (f"{yes[a['head_answer']]} | {yes[a['gold_cited']]}" if a else "? | ?")
        lines.append(f"| {r['id']} | {yes[r['head_answer']]} | {yes[r['flagged']]} | "
                     f"{yes[r['old_without_warning']]} | {yes[r['gap']]} | "
                     f"{yes[r['gold_cited']]} | {yes[r['gold_stale_candidate']]} | "
                     f"{', '.join(r['new_found']) or '-'} of {len(r['new_keys'])} | "
                     f"{', '.join(r['removed_found']) or '-'} | {later} |")
    t, b = result["changed_totals"], result["without_revalidation"]
    lines += ["", "| run | HEAD answer | flagged | HEAD or flagged | old without warning |",
              "|---|---|---|---|---|",
              f"| with revalidation | {t['head_answer']}/{t['questions']} | {t['flagged']} | "
              f"{t['head_or_flagged']}/{t['questions']} | {t['old_without_warning']} |",
              f"| `--no-revalidate` (before this change) | {b['head_answer']}/{b['questions']}"
              f" | {b['flagged']} | {b['head_or_flagged']}/{b['questions']} | "
              f"{b['old_without_warning']} |"]
    u = result["update"]
    a = u["after_approval"]
    lines += ["", f"Update proposal for {len(u['sources'])} changed sources: "
              f"`{u['proposal']}` ({u['entries_updated']} entries updated, "
              f"{u['entries_added']} added, {u['entries_retracted']} retracted); after its "
              f"approval by a second identity: HEAD answer {a['head_answer']}/"
              f"{a['questions']}, gold page cited {a['gold_cited']}/{a['questions']}, "
              f"flagged stale {a['flagged_stale']}, sources re-read {a['reread']}.", ""]
    c = result["answerable_at_checkpoint"]
    lines += ["35 answerable questions with the sources at the checkpoint (nothing changed):",
              "", "| questions | citations | flagged stale | flagged unverifiable | sources "
              "checked | unchanged (by blob id, unread) | changed | re-read | ask s (35) | "
              "ask s without revalidation |", "|---|---|---|---|---|---|---|---|---|---|",
              f"| {c['questions']} | {c['citations']} | {c['flagged_stale']} | "
              f"{c['flagged_unverifiable']} | {c['checked']} | {c['unchanged']} "
              f"({c['proven']}) | {c['changed']} | {c['reread']} | {c['seconds']} | "
              f"{c['seconds_without_revalidation']} |"]
    if "vector" in result["legs"]:
        lines += ["", "(With the vector leg, the first of the 35 asks embeds the fresh wiki: "
                  "its time is in the revalidated column.)"]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run the benchmark; write evals/results/changed.md and .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--vectors", metavar="MODEL", default=None,
                        help="also run the vector leg with this embedding model (slow: the "
                             "fresh wiki is embedded); results go to changed-vectors.*")
    args = parser.parse_args()
    bench_environment()
    if args.vectors:
        os.environ["WIKI_EMBED_MODEL"] = args.vectors
    result = run(data_dir(args.data))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = "changed-vectors" if args.vectors else "changed"
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    text = markdown(result)
    (out / f"{stem}.md").write_text(text)
    print(text)  # noqa: T201 - a script's report


if __name__ == "__main__":
    main()
