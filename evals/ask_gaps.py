"""Abstention of ``wiki ask`` end to end, and the answer-type check on LoCoMo's gold evidence.

1. **Handbook dev** (``questions-dev``): every answerable and unanswerable question is
   asked through :func:`wiki.answering.ask.ask` (the product's path: hybrid retrieval, the
   retrieval gap rule, extraction, then the answer-type check of
   :mod:`wiki.answering.answer_type`; no model, no revalidation) over the wiki built at the
   checkpoint. Counted: evidence gaps on the 6 unanswerable questions, false gaps on the
   35 answerable ones, and which rule made each gap.
2. **LoCoMo** (``questions.jsonl``, all categories): for every question that has an
   expected answer type, does the *gold* evidence state a value of that type? With the
   right evidence in hand the check must not fire, so each miss here is a false gap the
   check would cause even with perfect retrieval. The same is measured for candidate
   types that were *not* adopted (duration, year, count), to record why.

    python -m evals.ask_gaps [--data DIR] [--out evals/results]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from evals.datasets import cached_handbook, data_dir, handbook_questions, read_jsonl
from evals.report import header, md_table, now, project_commit, write
from wiki.answering.answer_type import QUESTION_TYPES, expected_type, missing_type

REJECTED_TYPES = {
    "duration": (re.compile(r"\bhow\s+(?:long|far\s+ahead|far\s+in\s+advance)\b|\bhow\s+many"
                            r"\s+(?:days|weeks|months|years|hours)\b", re.I),
                 re.compile(r"\b(?:\d[\d,.]*|a|an|one|two|three|four|five|six|seven|eight|"
                            r"nine|ten|twelve|several|few)[\s-]+(?:\w+[\s-]+)?(?:minute|hour|"
                            r"day|week|month|year)s?\b|\b(?:19|20)\d\d\b", re.I)),
    "year": (re.compile(r"\b(?:what|which)\s+year\b", re.I),
             re.compile(r"\b(?:1[5-9]|20)\d\d\b")),
    "count": (re.compile(r"\bhow\s+many\b", re.I),
              re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten)\b", re.I)),
}
"""Types measured and left out: ``name -> (question pattern, evidence pattern)``."""


def handbook(data: Path, questions: str = "dev", split: str = "tune") -> dict:
    """Ask every dev question (``questions="staff"``: the staff questions' ``split``
    half, :mod:`evals.staff_questions`) through :func:`wiki.answering.ask.ask`; gaps by rule."""
    from wiki.answering.ask import ask_for
    from wiki.store.workspace import Wiki

    path, _ = cached_handbook(data)
    wiki = Wiki(path)
    if questions == "staff":
        from evals.staff_questions import questions as staff_questions

        answerable, unanswerable = staff_questions(split)
    else:
        answerable, unanswerable = handbook_questions(data)
    rows = []
    for question, gold in [*((q, True) for q in answerable),
                           *((q, False) for q in unanswerable)]:
        answer = ask_for(wiki, question.question, synthesize=False, revalidate=False)
        rule = (answer.gap_reason.code if answer.gap_reason else "retrieval") \
            if answer.gap else ""
        rows.append({"id": question.id, "answerable": gold, "gap": answer.gap, "rule": rule,
                     "expected_type": expected_type(question.question),
                     "note": answer.note})
    return {"rows": rows,
            "gaps": sum(r["gap"] for r in rows if not r["answerable"]),
            "unanswerable": len(unanswerable),
            "false_gaps": sum(r["gap"] for r in rows if r["answerable"]),
            "answerable": len(answerable)}


def locomo(data: Path) -> dict:
    """Per (type, adopted or not, adversarial or not): questions, and how many of them
    the gold evidence turns / sessions do not state a value of the type for."""
    turns = {t["id"]: t["text"] for t in read_jsonl(data / "locomo" / "turns.jsonl")}
    sessions = {s["id"]: f"{s['date_time']}\n{s['text']}"
                for s in read_jsonl(data / "locomo" / "sessions.jsonl")}
    counts: Counter = Counter()
    total = 0
    for q in read_jsonl(data / "locomo" / "questions.jsonl"):
        total += 1
        group = "adversarial" if q["category"] == 5 else "categories 1-4"
        ev_turns = [turns[t] for t in q.get("evidence_turns", []) if t in turns]
        ev_sessions = [sessions[s] for s in q.get("evidence_sessions", []) if s in sessions]
        if not ev_turns:
            continue
        kind = expected_type(q["question"])
        if kind is not None:
            counts[(kind, "adopted", group, "n")] += 1
            counts[(kind, "adopted", group, "turns")] += bool(missing_type(q["question"],
                                                                          ev_turns))
            counts[(kind, "adopted", group, "sessions")] += bool(
                missing_type(q["question"], ev_sessions))
        for name, (asks, states) in REJECTED_TYPES.items():
            if asks.search(q["question"]):
                counts[(name, "rejected", group, "n")] += 1
                counts[(name, "rejected", group, "turns")] += not any(
                    states.search(t) for t in ev_turns)
                counts[(name, "rejected", group, "sessions")] += not any(
                    states.search(t) for t in ev_sessions)
    keys = sorted({k[:3] for k in counts}, key=lambda k: (k[1], k[0], k[2]))
    return {"questions": total,
            "rows": [[*k, counts[(*k, "n")], counts[(*k, "turns")], counts[(*k, "sessions")]]
                     for k in keys]}


def main() -> None:
    """Run both parts; write evals/results/ask-gaps.md and .json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--questions", choices=("dev", "staff"), default="dev",
                        help="staff: evals/questions/handbook-staff.jsonl (writes "
                             "ask-gaps-staff-<split>.md)")
    parser.add_argument("--split", choices=("tune", "test", "all"), default="tune")
    args = parser.parse_args()
    data = data_dir(args.data)
    hand, loco = handbook(data, args.questions, args.split), locomo(data)
    which = (f"staff questions, {args.split} half" if args.questions == "staff"
             else "handbook dev")
    gaps = [r for r in hand["rows"] if r["gap"]]
    text = "\n".join([
        header(f"Abstention of `wiki ask` ({which}) and the answer-type check (LoCoMo)",
               {"date": now(), "project commit": project_commit(),
                "answer types": ", ".join(name for name, _ in QUESTION_TYPES)}),
        "", f"## {which}: `wiki.answering.ask.ask`, extractive, no revalidation", "",
        md_table(["evidence gaps on unanswerable", "false gaps on answerable"],
                 [[f"{hand['gaps']}/{hand['unanswerable']}",
                   f"{hand['false_gaps']}/{hand['answerable']}"]]),
        "", md_table(["question", "answerable", "rule", "expected type", "note"],
                     [[r["id"], r["answerable"], r["rule"], r["expected_type"] or "",
                       r["note"]] for r in gaps]),
        "", "Questions with an expected type: " + ", ".join(
            f"{r['id']} ({r['expected_type']}, {'gap' if r['gap'] else 'answered'})"
            for r in hand["rows"] if r["expected_type"]),
        "", f"## LoCoMo: does the gold evidence state the type? ({loco['questions']} "
        "questions)", "",
        "A miss is a question whose gold evidence (its turns; its whole sessions with their "
        "dates) states no value of the type: the check would call it a gap even with "
        "perfect retrieval. Rejected types are measured with their own patterns "
        "(`REJECTED_TYPES`).", "",
        md_table(["type", "status", "question set", "questions", "misses (gold turns)",
                  "misses (gold sessions)"], loco["rows"])])
    stem = f"ask-gaps-staff-{args.split}" if args.questions == "staff" else "ask-gaps"
    write(Path(args.out), stem, text, {"handbook": hand, "locomo": loco})
    print(text)


if __name__ == "__main__":
    main()
