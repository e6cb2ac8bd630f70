"""The ``wiki ask`` use case in one call: answer a question, then (as asked) save the answer
as a proposal and offer or open the update of out-of-date entries.

:func:`answer_question` is what the CLI's ``ask`` and the MCP ``ask`` tool both call; they
only parse their arguments and render its :class:`Answered`. The steps, in order:

1. :func:`wiki.answering.ask.answer` retrieves, revalidates the hits' sources, answers with
   citations, and records an evidence gap in ``gaps.jsonl``;
2. with ``save`` (and no gap), :func:`wiki.knowledge.distill.save_answer` proposes the
   answer as entries, distilled by the configured model unless ``extractive``;
3. when cited entries' sources changed, :func:`offer_update` finds the local files to
   re-ingest and, with ``propose``, opens that proposal
   (:func:`wiki.answering.revalidate.propose_update`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from indexes.sqlite.vectors import Progress
    from wiki.answering.ask import Answer, AskRequest
    from wiki.ingest.pipeline import IngestReport
    from wiki.knowledge.distill import Saved
    from wiki.store.workspace import Wiki


@dataclass(frozen=True)
class UpdateOffer:
    """The re-ingest that would bring an answer's out-of-date entries up to their changed
    sources: the changed source ``uris``, the local files among them (``paths``, allowed
    by the reader's source policy; empty when none is a local file) and, when it was asked
    for, the ingest that ``proposed`` it (``report.proposal`` ``None``: nothing to
    change)."""

    uris: list[str]
    paths: list[Path]
    proposed: IngestReport | None = None


@dataclass(frozen=True)
class Answered:
    """What :func:`answer_question` did: the ``answer``; the ``saved`` proposal
    (``None`` unless ``save`` was asked and the wiki answered); the ``update`` offer
    (``None`` when no cited entry's source changed, or when not asked for)."""

    answer: Answer
    saved: Saved | None = None
    update: UpdateOffer | None = None


def answer_question(wiki: Wiki, request: AskRequest, *,
                    progress: Progress | None = None) -> Answered:
    """The ``wiki ask`` use case (CLI, MCP and REST ``ask``): answer ``request.question``
    (:func:`wiki.answering.ask.answer`; ``progress`` is called while missing vectors are
    embedded); not ``request.synthesize`` quotes the entries even with a model configured
    (and saves without distilling). With ``request.save``, a confident answer is proposed
    as entries (``request.redact``: secrets replaced, not refused). With
    ``request.offer``, the update of out-of-date entries is worked out
    (:func:`offer_update`) and, with ``request.propose``, opened as a proposal. Raises what
    ``answer`` raises (``EmptyQueryError``, ``NotInitializedError``) and, for
    ``save``/``propose``, what a proposal raises (``SecretError``, ``IdentityError``); an
    evidence gap is a normal return (``answered.answer.gap``)."""
    from wiki.answering.ask import answer

    found = answer(wiki, request, progress=progress)
    saved = _save(wiki, found, extractive=not request.synthesize, redact=request.redact) \
        if request.save and not found.gap else None
    update = offer_update(wiki, found, propose=request.propose) if request.offer else None
    return Answered(found, saved, update)


def offer_update(wiki: Wiki, answer: Answer, *, propose: bool = False) -> UpdateOffer | None:
    """The update of ``answer``'s out-of-date entries: ``None`` when none of their sources
    changed; else the changed uris, their local files and, with ``propose`` (and a local
    file to read), the ingest that proposed re-reading them."""
    from wiki.answering.revalidate import local_paths, propose_update

    uris = (answer.revalidation or {}).get("update") or []
    if not uris:
        return None
    paths = local_paths(wiki, uris)
    proposed = propose_update(wiki, uris) if paths and propose else None
    return UpdateOffer(list(uris), paths, proposed)


def _save(wiki: Wiki, answer: Answer, *, extractive: bool, redact: bool) -> Saved:
    """The answer as a proposal, distilled by the configured model unless ``extractive``
    or no model is configured."""
    from wiki.knowledge.distill import save_answer
    from wiki.llm.settings import open_client

    client = None if extractive else open_client(wiki)
    return save_answer(wiki, answer, client=client, redact=redact)
