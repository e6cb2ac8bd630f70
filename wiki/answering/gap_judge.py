"""The model's yes/no judge of an extractive answer: does its opening answer the question?

After the picker (:mod:`wiki.answering.picker`) has chosen the answer's sentences, a
configured model may be asked, once per question, whether the first :data:`SHOWN` of them
(each with its entry's title, fenced as quoted evidence) answer the question. The answer
is the probability of "yes" from the first token's log-probabilities
(:meth:`wiki.llm.client.LLMClient.judge`). The answer is an evidence gap when the picker
finds none answering (its own rule) or that probability is below ``[llm]
gap_judge_below`` (reason ``judge_no``); a judge that fails, times out or is over budget
leaves the picker's rule alone in force and says so in a note.

Off by default (``[llm] gap_judge = "off"``; ``WIKI_GAP_JUDGE=on|off`` overrides it); the
prompt, the number of sentences shown and the threshold were chosen on the staff tune
half (docs/decisions.md, "The local model as a gap judge").
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from wiki.llm.errors import LLMError

ANSWERS = "Does this evidence answer the question? Answer yes or no."
STATES = ("Does this evidence state the answer to the question, not just mention its "
          "topic? Answer yes or no.")
HELPS = "Does this evidence help answer the question? Answer yes or no."
PROMPTS = {"answers": ANSWERS, "states": STATES, "helps": HELPS}
"""The instructions tried on the tune half (evals/ask_judge.py); ``PROMPT`` is the one
used."""
PROMPT = "answers"
SHOWN = 1
"""Sentences of the answer shown to the judge, the opening one first."""
MODES = ("off", "on")
ENV = "WIKI_GAP_JUDGE"


@dataclass(frozen=True)
class Verdict:
    """One judgement: ``p_yes`` (0-1, ``None`` when the judge failed), ``seconds`` spent
    and ``note`` (why there is no judgement: the model's error in one line)."""

    p_yes: float | None
    seconds: float
    note: str = ""


def enabled(setting: str) -> bool:
    """Whether the judge runs: ``WIKI_GAP_JUDGE`` (``on``/``off``) when set, else
    ``setting`` (``[llm] gap_judge``). Raises :class:`wiki.errors.ConfigError` for any
    other value of the variable."""
    value = os.environ.get(ENV)
    if value is None:
        return setting == "on"
    value = value.strip().lower()
    if value not in MODES:
        from wiki.errors import ConfigError

        raise ConfigError(f"{ENV} must be one of {', '.join(MODES)}, got {value!r}")
    return value == "on"


def evidence(sentences: list[tuple[str, str]], shown: int = SHOWN) -> str:
    """The text the judge reads: the first ``shown`` of ``sentences`` (``(entry title,
    sentence)`` pairs, the answer's opening first), one per line as ``title: sentence``."""
    return "\n".join(f"{' '.join(title.split())}: {' '.join(text.split())}"
                     for title, text in sentences[:max(shown, 1)])


def judge(client, question: str, sentences: list[tuple[str, str]], *,
          shown: int = SHOWN, prompt: str = PROMPT) -> Verdict:
    """Ask ``client`` (a :class:`wiki.llm.client.LLMClient`) whether the answer's first
    ``shown`` ``sentences`` (``(entry title, sentence)``) answer ``question``, with the
    instruction ``PROMPTS[prompt]``. Never raises for a model failure (a timeout, a
    provider error, a spent budget): the :class:`Verdict` then has ``p_yes=None`` and a
    note."""
    started = time.monotonic()
    try:
        p_yes = client.judge(question, evidence(sentences, shown), ask=PROMPTS[prompt])
    except LLMError as exc:
        return Verdict(None, time.monotonic() - started,
                       f"the gap judge did not answer ({exc}); the picker's rule stands")
    return Verdict(p_yes, time.monotonic() - started)


@dataclass
class GapJudge:
    """The judge of one command: ``client`` (a :class:`wiki.llm.client.LLMClient`) and
    ``below``, the P(yes) under which the answer is a gap."""

    client: object
    below: float

    def review(self, question: str, picked, titles: list[str]) -> dict:
        """Judge ``picked`` (a :class:`wiki.answering.picker.Picked`; ``titles``: its
        entries' titles by position) and set its ``gap``: a ``judge_no`` gap when P(yes)
        < ``below`` (in place of the picker's ``no_answer``, if it had one: either rule
        makes a gap; a yes leaves the picker's verdict). Returns what ``--json`` shows as
        ``judge``: ``p_yes``, ``below``, ``seconds`` and ``note`` (a failed judgement
        keeps the picker's verdict and says why)."""
        from wiki.answering.picker import GapReason

        if not picked.sentences:
            return {}
        shown = [(titles[position], text) for text, position in picked.sentences]
        verdict = judge(self.client, question, shown)
        out = {"p_yes": None if verdict.p_yes is None else round(verdict.p_yes, 4),
               "below": self.below, "seconds": round(verdict.seconds, 3),
               "note": verdict.note}
        if verdict.p_yes is None:
            return out
        if verdict.p_yes < self.below and (picked.gap is None
                                           or picked.gap.code == "no_answer"):
            picked.gap = GapReason("judge_no", f"the model judged that the answer's "
                                   f"opening does not answer the question (P(yes) "
                                   f"{verdict.p_yes:.2f} < {self.below:g})")
        return out


def open_judge(wiki, config) -> GapJudge | None:
    """The command's :class:`GapJudge` when the judge is on (:func:`enabled`, from
    ``config``, the branch's ``[llm]`` section) and a model is configured, else ``None``."""
    if not enabled(config.gap_judge):
        return None
    from wiki.llm.settings import open_client

    client = open_client(wiki, config)
    return None if client is None else GapJudge(client, config.gap_judge_below)
