"""A model-written answer over the extractive one, when a model is configured
(docs/architecture.md, "Asking").

The extractive answer (:mod:`wiki.answering.ask`) decides *which* entries are cited; this module
hands the model those entries' best sentences as numbered, fenced evidence and keeps only
the sentences of its reply that :func:`wiki.llm.answer.verify` can tie to a passage it was
shown. When nothing survives, or the model fails, times out or is over budget, the
extractive answer stands and ``answer.note`` says why.
"""

from __future__ import annotations

from indexes.passages import rank_passages
from wiki.store.markdown_text import sentences

EXTRA_SENTENCES = 6
"""Best further sentences of each cited entry shown beside the extractive picks."""


def synthesize_answer(answer, entries: list, client) -> None:
    """Replace ``answer.sentences`` (:class:`wiki.answering.ask.Answer`, not a gap) by the verified
    sentences of ``client``'s answer over the cited ``entries`` (current texts, as
    revalidated); sets ``answer.mode`` to ``"llm"`` then, else leaves the extractive
    sentences and sets ``answer.note``. ``answer.dropped`` lists the model's sentences that
    failed verification, with why. Never raises for a model failure."""
    from wiki.llm.answer import passages, synthesize

    by_path = {entry.path: entry for entry in entries}
    numbered = {}
    for citation in answer.citations:
        entry = by_path.get(citation.path)
        if entry is None:
            continue
        picked = [text for text, number in answer.sentences if number == citation.number]
        others = [s for s in sentences(entry.body) if s not in picked]
        ranked = rank_passages(answer.question, others, limit=EXTRA_SENTENCES)
        numbered[citation.number] = (entry.title, picked + [others[i] for i, _ in ranked])
    with client.budget():
        result = synthesize(client, answer.question, passages(numbered))
    answer.dropped = result.dropped
    if result.sentences:
        answer.sentences, answer.mode = result.sentences, "llm"
    else:
        answer.note = result.note
