"""Distilled ingest and saved answers: a model's atomic drafts, placed as one proposal.

:class:`Distiller` is the hook of ``wiki ingest --distill`` (``ingest(distiller=...)``):
for each new or changed source it asks the model for atomic drafts (:mod:`wiki.knowledge.distill`)
and places them (:mod:`wiki.knowledge.placement`: new entry, update or supersession). When the model
fails, times out, answers invalid JSON or nothing it wrote can be verified, it returns
``None`` and ingest compiles that source the plain, model-free way, so no source is lost;
:attr:`DistillReport.fallbacks` says why. The source reaches the hook already screened
(a secret refuses the source unless ``--redact``), and every proposal is screened again.

:func:`save_answer` is ``wiki ask --save``: the answer's sentences, distilled the same way
with a model, or saved as one entry without one (or when the model fails), cite the cited
entries' sources and name the entries in ``relations: derived_from``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wiki.errors import NotFoundError
from wiki.ingest.report import SourceText
from wiki.ingest.sections import compile_sections
from wiki.knowledge.distill import AtomicDraft, distill
from wiki.knowledge.placement import Placed, Placer
from wiki.llm.answer import fold
from wiki.review.proposals import Proposal, propose
from wiki.store.entry import Source, now_iso
from wiki.store.gitrepo import Identity
from wiki.store.workspace import Wiki

MAX_TITLE_CHARS = 80


@dataclass
class DistillReport:
    """What a distilled ingest did: ``sources`` distilled, ``fallbacks`` (``{path,
    reason}`` of sources compiled without the model), drafts the model ``proposed``, those
    ``kept`` after the checks and ``dropped`` (``{source, claim, why}``), and where the kept
    ones went: ``new``, ``updated``, ``superseded`` entries and ``known`` claims (already
    said, nothing to change)."""

    sources: int = 0
    fallbacks: list[dict] = field(default_factory=list)
    proposed: int = 0
    kept: int = 0
    dropped: list[dict] = field(default_factory=list)
    new: int = 0
    updated: int = 0
    superseded: int = 0
    known: int = 0


class Distiller:
    """The ingest hook (:data:`wiki.ingest.pipeline.Distiller`) for ``wiki`` with ``client`` (a
    :class:`wiki.llm.client.LLMClient`); one per ingest run. :attr:`report` and
    :meth:`llm` describe the run afterwards."""

    def __init__(self, wiki: Wiki, client) -> None:
        self.wiki = wiki
        self.client = client
        self.config = wiki.config()
        self.report = DistillReport()
        self.placer: Placer | None = None
        self._start = client.usage.copy()

    def __call__(self, source: SourceText, taken: set[str], ids: set[str]):
        """Distil one source; ``(changes, added, updated, 0)`` or ``None`` to fall back."""
        sections = [(d.locator, d.body) for d in
                    compile_sections(source.title, source.body, self.config.ingest)]
        result = distill(self.client, source.title, sections)
        self.report.proposed += result.proposed
        self.report.dropped += [{"source": source.shown, "claim": claim, "why": why}
                                for claim, why in result.dropped]
        if result.note:
            self.report.fallbacks.append({"path": source.shown, "reason": result.note})
            return None
        self.report.sources += 1
        if self.placer is None:
            self.placer = Placer(self.wiki, taken, ids, base=source.base or None)
        stamp = now_iso()
        touched: list[str] = []
        added = updated = 0
        for draft in result.drafts:
            record = Source(source.uri, source.fingerprint, stamp, draft.locator).to_dict()
            record.update({"blob": source.blob} if source.blob else {})
            record["distilled"] = True
            placed = self.placer.place(draft, category=source.category, sources=[record],
                                       seed=f"{source.uri}\0distill\0{fold(draft.summary)}")
            self._tally(source.shown, placed)
            touched += [p for p in (placed.path, placed.target) if p in self.placer.changes]
            added += placed.kind in ("new", "supersede")
            updated += placed.kind in ("update", "supersede")
        return {p: self.placer.changes[p] for p in touched}, added, updated, 0

    def _tally(self, shown: str, placed: Placed) -> None:
        report = self.report
        if placed.kind == "dropped":
            report.dropped.append({"source": shown, "claim": placed.title, "why": placed.why})
            return
        report.kept += 1
        kind = {"update": "updated", "supersede": "superseded"}.get(placed.kind, placed.kind)
        setattr(report, kind, getattr(report, kind) + 1)

    def llm(self) -> dict:
        """The model and this run's usage, shaped like a search's ``llm`` report
        (:meth:`wiki.llm.leg.LLMStage.report`)."""
        return llm_report(self.client, self._start)


def llm_report(client, start) -> dict:
    """``{model, usage, stopped, walk_cached, note}`` for ``client`` since the usage
    snapshot ``start``: what ``--json`` shows under ``llm`` and ``--verbose`` prints."""
    return {"model": client.model, "usage": client.usage.since(start).to_dict(),
            "walk_cached": False, "stopped": [], "note": None}


@dataclass
class Saved:
    """The result of :func:`save_answer`: the ``proposal`` (``None`` when every claim is
    already in the wiki: ``existing`` names the entry), whether it was ``created`` now,
    ``mode`` (``distilled``: the model's atomic drafts; ``answer``: the answer as one
    entry), where each draft went (``placed``), the model's ``dropped`` drafts, a ``note``
    when the model failed, and its usage (``llm``, ``None`` without a model)."""

    proposal: Proposal | None = None
    created: bool = False
    mode: str = "answer"
    placed: list[Placed] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    existing: str | None = None
    llm: dict | None = None


def save_answer(wiki: Wiki, answer, *, client=None, author: Identity | None = None,
                redact: bool = False) -> Saved:
    """Propose ``answer`` (:class:`wiki.answering.ask.Answer`) as entries: distilled by ``client``
    when given, else one entry holding the answer's sentences. Raises ``NotFoundError``
    for an evidence gap, ``SecretError`` like any proposal."""
    if answer.gap:
        raise NotFoundError("nothing to save: the wiki does not answer this question")
    snapshot = wiki.snapshot(answer.commit)
    cited = [snapshot.entry(c.path) for c in answer.citations]
    sources: list[dict] = []
    for entry in cited:
        sources += [s for s in entry.meta.get("sources") or []
                    if s.get("uri") not in {o.get("uri") for o in sources}]
    relations = {"derived_from": [e.id for e in cited]} if cited else None
    category = cited[0].category if cited else ""
    placer = Placer(wiki, base=snapshot.commit)
    saved = Saved()
    if client is not None:
        start = client.usage.copy()
        text = " ".join(sentence for sentence, _ in answer.sentences)
        result = distill(client, answer.question, [("", text)])
        saved.dropped, saved.llm = result.dropped, llm_report(client, start)
        if result.note:
            saved.note = f"{result.note}; the answer is saved as one entry"
        else:
            saved.mode = "distilled"
            for draft in result.drafts:
                placer.place(draft, category=category, sources=sources, relations=relations,
                             seed=f"answer\0{fold(draft.summary)}")
    if saved.mode == "answer":
        placer.place(_answer_draft(answer, cited, sources), category=category,
                     sources=sources, relations=relations,
                     seed=f"answer\0{fold(answer.question)}\0{answer.sentences}")
    saved.placed = placer.placed
    if not placer.changes:
        saved.existing = next((p.target for p in placer.placed if p.target), None)
        return saved
    body = "Question: " + " ".join(answer.question.split()) + "\nFrom entries: " + \
        ", ".join(f"{e.path} ({e.id})" for e in cited)
    saved.proposal, saved.created = propose(
        wiki, placer.changes, base=placer.snapshot.commit, kind="save",
        subject=f"save answer: {_title(answer.question)}", body=body, author=author,
        redact=redact)
    return saved


def _answer_draft(answer, cited: list, sources: list[dict]) -> AtomicDraft:
    """The answer as one draft: its sentences, each citing (``[n]``) the sources of the
    entry it came from, numbered as in ``sources``."""
    uris = [s.get("uri") for s in sources]
    lines = []
    for sentence, number in answer.sentences:
        entry = cited[number - 1] if 0 < number <= len(cited) else None
        marks = "".join(f"[{uris.index(s.uri) + 1}]" for s in (entry.sources if entry else [])
                        if s.uri in uris)
        lines.append(f"{sentence} {marks}".rstrip())
    first = answer.sentences[0][0]
    return AtomicDraft(_title(answer.question), first, " ".join(lines), "note")


def _title(question: str) -> str:
    text = " ".join(question.split())
    return text if len(text) <= MAX_TITLE_CHARS else text[:MAX_TITLE_CHARS].rsplit(" ", 1)[0]
