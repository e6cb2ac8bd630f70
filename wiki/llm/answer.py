"""The model-written answer: cited, checked in code (docs/architecture.md, "Asking";
docs/robustness.md, H1-H2).

When a model is configured, it writes the answer over the extractive one
(:mod:`wiki.answering.ask`), which has decided *which* entries are cited
(:func:`answer_from`). The model sees the question and, fenced as quoted evidence,
numbered passages: for each cited entry, its title, the extractive answer's sentences from
it and its best further ones (the same BM25 sentence ranking). It is asked for at most
:data:`MAX_SENTENCES` short sentences, each ending with the numbers of the passages it
comes from (``[2]``). Code then keeps a sentence only when

* it cites at least one passage, and every number it cites is a passage it was shown;
* it is *supported*: at least :data:`MIN_SUPPORT` of its content words (and every number
  in it) occur in the passages it cites.

Everything else is dropped. When no sentence survives, the model fails, times out or its
budget is spent, the caller keeps the extractive answer and a note says why. Text leaves
the process only through :class:`wiki.llm.client.LLMClient`, which redacts secrets first.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from indexes.retrieval.passages import rank_passages
from indexes.retrieval.query import STOPWORDS
from wiki.llm import prompts
from wiki.llm.errors import LLMError
from wiki.store.markdown_text import sentences as split_sentences

MAX_SENTENCES = 3
EXTRA_SENTENCES = 6
"""Best further sentences of each cited entry shown beside the extractive picks."""
MAX_PASSAGE_WORDS = 120
MIN_SUPPORT = 0.6
"""Share of a sentence's content words that must occur in the passages it cites."""
NOT_FOUND = "NOT IN EVIDENCE"
ANSWER = ("Answer the question using only the evidence, in at most {n} short sentences. "
          "End every sentence with the number of the passage it comes from, like [1]. "
          f"If the evidence does not answer the question, reply exactly: {NOT_FOUND}")

_CITATION = re.compile(r"\s*\[(\d+(?:\s*,\s*\d+)*)\]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CONTENT = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")


@dataclass
class Passage:
    """Evidence ``number`` (as cited, ``[n]``): an entry's ``title`` and ``text``."""

    number: int
    title: str
    text: str


@dataclass
class Synthesis:
    """The verified ``sentences`` as ``(text, citation number)``; ``dropped`` the model's
    sentences that failed verification, each with why; ``note`` says why the caller should
    keep the extractive answer instead (empty when the synthesis stands);
    ``not_found`` when the model said the evidence does not answer."""

    sentences: list[tuple[str, int]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    not_found: bool = False


def passages(numbered: dict[int, tuple[str, list[str]]]) -> list[Passage]:
    """``number -> (title, ranked sentences)`` as passages of at most
    :data:`MAX_PASSAGE_WORDS` words each."""
    return [Passage(n, title, prompts.clip(" ".join(sents), MAX_PASSAGE_WORDS))
            for n, (title, sents) in sorted(numbered.items())]


def answer_from(client, question: str, picked: list[tuple[str, int]],
                cited: list[tuple[int, str]], entries: list) -> Synthesis:
    """``client``'s verified answer to ``question`` over the cited entries (see the module
    docstring). ``picked``: the extractive answer's ``(sentence, citation number)``;
    ``cited``: its ``(citation number, entry path)``; ``entries``: the candidate entries
    (current texts, as revalidated), each with ``path``, ``title`` and ``body``. The
    calls share the client's budget (:meth:`wiki.llm.client.LLMClient.budget`). Never
    raises for a model failure: ``note`` says why the extractive answer stands."""
    by_path = {entry.path: entry for entry in entries}
    numbered = {}
    for number, path in cited:
        entry = by_path.get(path)
        if entry is None:
            continue
        chosen = [text for text, n in picked if n == number]
        others = [s for s in split_sentences(entry.body) if s not in chosen]
        ranked = rank_passages(question, others, limit=EXTRA_SENTENCES)
        numbered[number] = (entry.title, chosen + [others[i] for i, _ in ranked])
    with client.budget():
        return synthesize(client, question, passages(numbered))


def messages(question: str, evidence: list[Passage]) -> list[dict]:
    """The chat messages: system prompt, then the question, the fenced passages and the
    instruction (question first: a local provider reuses the cached prefix)."""
    listing = "\n".join(f"[{p.number}] {p.title}: {' '.join(p.text.split())}"
                        for p in evidence)
    return [{"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": f"Question: {' '.join(question.split())}\n"
                                        f"{prompts.fence(listing)}\n"
                                        f"{ANSWER.format(n=MAX_SENTENCES)}"}]


def synthesize(client, question: str, evidence: list[Passage], *,
               max_tokens: int = 160) -> Synthesis:
    """Ask ``client`` (:class:`wiki.llm.client.LLMClient`) for a cited answer from
    ``evidence`` and verify it (:func:`verify`). Never raises for a model failure: an
    ``LLMError`` (timeout, provider error, budget spent) becomes ``note``."""
    if not evidence:
        return Synthesis(note="no evidence to answer from")
    try:
        reply = client.complete(messages(question, evidence), max_tokens=max_tokens)
    except LLMError as exc:
        return Synthesis(note=f"the model did not answer ({exc}); extractive answer shown")
    return verify(reply.text, evidence)


def verify(text: str, evidence: list[Passage]) -> Synthesis:
    """Keep the sentences of the model's ``text`` that cite shown passages and are
    supported by them (see the module docstring); the rest go to ``dropped``."""
    if NOT_FOUND.lower() in text.lower():
        return Synthesis(not_found=True, note="the model found no answer in the evidence; "
                                              "extractive answer shown")
    shown = {p.number: p for p in evidence}
    out = Synthesis()
    for raw in _SENTENCE.split(text.strip()):
        sentence = raw.strip()
        if not sentence:
            continue
        cited = [int(n) for group in _CITATION.findall(sentence) for n in group.split(",")]
        plain = " ".join(_CITATION.sub("", sentence).split())
        if not cited:
            out.dropped.append((plain, "no citation"))
        elif any(n not in shown for n in cited):
            out.dropped.append((plain, f"cites a passage it was not shown: {cited}"))
        elif not supported(plain, " ".join(shown[n].title + " " + shown[n].text
                                            for n in cited)):
            out.dropped.append((plain, "not supported by the passages it cites"))
        elif len(out.sentences) < MAX_SENTENCES:
            out.sentences.append((plain, cited[0]))
    if not out.sentences:
        out.note = "no sentence of the model's answer could be verified; extractive answer shown"
    return out


def fold(text: str) -> str:
    """``text`` NFKC-normalised and case-folded, as the support check compares it."""
    return unicodedata.normalize("NFKC", text).casefold()


def numbers_in(text: str, evidence: str) -> bool:
    """Whether every number of ``text`` is a whole number of ``evidence`` (``5`` is not in
    ``75``, ``1,200`` not in ``11,200``, ``0.5`` not in ``0.55``)."""
    have = set(_NUMBER.findall(evidence))
    return all(number in have for number in _NUMBER.findall(text))


def supported(sentence: str, evidence: str) -> bool:
    """Every number of ``sentence`` and :data:`MIN_SUPPORT` of its content words occur in
    ``evidence`` (see :func:`support`)."""
    return support(sentence, evidence) >= MIN_SUPPORT


def support(sentence: str, evidence: str) -> float:
    """The share (0-1) of ``sentence``'s content words that occur in ``evidence``
    (case-folded; a word also counts when the evidence has it with a different ending,
    e.g. ``approve``/``approved``); 0.0 when a number of ``sentence`` is not a whole number of
    ``evidence`` (:func:`numbers_in`) or the sentence has no content word."""
    folded = fold(evidence)
    if not numbers_in(sentence, folded):
        return 0.0
    have = set(_CONTENT.findall(folded))
    words = [w for w in _CONTENT.findall(fold(sentence)) if w not in STOPWORDS]
    if not words:
        return 0.0
    stems = {w[:5] for w in have if len(w) >= 5}
    found = sum(1 for w in words if w in have or (len(w) >= 5 and w[:5] in stems))
    return found / len(words)
