"""Which sentence answers a question: scores over plain sentences and their vectors.

An answer is a few sentences quoted from the best entries. Words shared with the question
(BM25, :func:`indexes.retrieval.passages.rank_passages`) find the sentences *about* the topic; they
do not tell a sentence that *answers* ("Comp time expires one year after it is earned")
from one that only names the topic ("The amount of overtime pay depends on your GS level").
Two more signals do:

* the cosine of the sentence's vector to the question's (MiniLM, the vector leg's model;
  the sentence vectors are embedded at index time, :mod:`indexes.sqlite.vectors`), which reads
  meaning rather than shared words;
* the question's *form* matched to what the sentence states (the answer-type check of
  classic QA: Li & Roth, COLING 2002): a number for "how much / how many / how long", a
  yes or no (a permission, a rule, a negation) for "can I / do I / is it", steps (an
  imperative: "Go to ...", "Submit ...") for "how do I", a person, team or address for
  "who", a place, channel or link for "where".

A table row ("Band 1 | $600 | ...") and a bare heading-like fragment are scored as what
they are: a row counts when it states the type asked for, else it is discounted
(:attr:`PickerConfig.fragment_weight`). A sentence whose subject is a pronoun ("Its
proposals wait ...") does not open an answer on its own: the sentence it refers back to
comes first (:attr:`PickerConfig.anaphor`).

Everything here is pure: plain strings, numpy vectors and a :class:`PickerConfig`. The
domain side (entries, citations, gaps) is :mod:`wiki.answering.picker`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from indexes.retrieval.passages import rank_passages
from wiki.answering.answer_type import EVIDENCE, expected_type


@dataclass(frozen=True)
class PickerConfig:
    """The picker's parameters (chosen on the staff tune half, docs/decisions.md).

    A sentence scores ``lexical × BM25 / best BM25 + cosine × max(cos, 0) + form × (states
    the question's form)``, times :attr:`fragment_weight` for a table row or fragment that
    does not state it, divided by ``(1 + entry position) ** rank_discount``. Sentences at
    or above ``floor ×`` the best take the places, entry by entry (at most
    ``entry_places`` per entry before the lower entries' turn), at most ``max_sentences``;
    the best sentence opens the answer. The answer is a gap when the best sentence's cosine
    plus ``score_coverage ×`` the retrieval's word coverage is below ``gap_score``
    (``None``: never), or, with ``form_gap``, when the question asks for a number, a person
    or a place and no candidate sentence within ``form_gap_margin`` of the best states one.
    An answer that is not a gap but scores below ``hedge_score`` (``None``: never) is
    hedged: the closest evidence, which may not answer (docs/decisions.md, "Answers say
    how sure they are")."""

    lexical: float = 0.25
    cosine: float = 1.0
    form: float = 0.15
    fragment_weight: float = 0.7
    rank_discount: float = 0.5
    floor: float = 0.5
    max_sentences: int = 4
    entry_places: int = 3
    gap_score: float | None = 0.52
    hedge_score: float | None = 0.78
    """Below this answer score (and at or above ``gap_score``) the answer is shown hedged:
    the closest evidence, which may not answer. Chosen on the staff tune half as the
    largest value that hedges at most 15 % of its answerable questions
    (evals/results/hedge-calibration.md)."""
    score_coverage: float = 0.5
    score_by: str = "words"
    """Which sentence's cosine the answer score takes: ``words``, the sentence sharing most of
    the question's words (BM25 ÷ the entry's rank discount), or ``best``, the best-scored
    one. A sentence chosen by its cosine flatters an unanswerable question (the nearest of
    many sentences is near by selection); one chosen by its words is judged by its
    meaning."""
    form_gap: bool = False
    form_gap_margin: float = 0.1
    anaphor: str = "relevant-context"
    """An opening sentence that starts with a pronoun ("Its proposals wait ...", "This is
    GS-15, step 10"; :func:`is_anaphoric`): ``none`` (scored as any other), ``penalty``
    (times :attr:`anaphor_weight` for the opening place), ``context`` (the answer opens
    with the sentence before it in the entry, then it) or ``relevant-context`` (``context``
    when the sentence before it scores at least ``floor ×`` its score, else ``penalty``):
    the sentence it refers back to must be on the question's topic too."""
    anaphor_weight: float = 0.7
    row_weight: float = 1.0
    """A table row whose first cell (the row's key: a tool, a setting, a band) shares no
    word with the question is from a reference table about something else: its score is
    times this, whatever form it states (1.0: off)."""
    failure_weight: float = 0.7
    """For a how-to question that is not itself about a failure, a sentence about one ("If
    a test page fails to arrive, troubleshoot ..."; :func:`is_about_failure`) states no
    step and its score is times this: the steps open the answer, not what to do when they
    go wrong (1.0: off, scored as any other sentence). Set by hand like
    :attr:`anaphor_weight`, not tuned (docs/decisions.md)."""
    retrieval_gap: bool = False
    """Also apply the retrieval rule (``[search] gap_coverage`` / ``gap_cosine``) when the
    answer score can be computed; without vectors it always applies (the score needs
    them)."""


FORMS = ("percent", "money", "code", "amount", "howto", "yesno", "who", "where")
"""Question forms, in the order :func:`question_form` tries them."""

_YESNO = re.compile(r"^\s*(?:(?:so|and|but|ok|okay|also|hey|hi),?\s+)?(?:do|does|did|can|could|"
                    r"is|are|am|was|were|will|would|should|shall|may|might|must|have|has|"
                    r"had|isn't|aren't|don't|doesn't|can't|won't|shouldn't)\b", re.I)
_HOWTO = re.compile(r"\bhow\s+(?:do|can|should|would|could|does)\s+(?:i|we|you|one|someone|"
                    r"a|my|our)\b|\bhow\s+to\b|\bwhat\s+(?:are\s+)?(?:the\s+)?steps\b|"
                    r"\bwhat\s+do\s+i\s+(?:need\s+to\s+)?do\b|\bprocess\s+(?:for|to)\b", re.I)
_AMOUNT = re.compile(r"\bhow\s+(?:many|much|long|often|far|soon|early|late|old)\b|"
                     r"\b(?:what|what's|whats|is\s+there)\s+(?:is\s+|are\s+)?(?:the\s+|a\s+)?"
                     r"(?:\w+\s+)?(?:max(?:imum)?|min(?:imum)?|limit|rate|amount|number|"
                     r"deadline|cap)\b|\bwhen\b", re.I)
_CODE = re.compile(r"\b(?:which|what)\s+(?:exit|status|error|return)\s+(?:code|status)\b|"
                   r"\b(?:which|what)\s+port\b", re.I)
_WHO = re.compile(r"\bwho(?:m|se)?\b|\b(?:which|what)\s+(?:\w+\s+)?(?:team|office|person|"
                  r"people|group|division|contact)\b", re.I)
_WHERE = re.compile(r"\bwhere\b|\b(?:which|what)\s+(?:\w+\s+)?(?:channel|url|link|site|"
                    r"website|page|folder|drive|form|system|tool|email\s+address|address)\b",
                    re.I)

_NUMBER = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|"
                     r"twelve|fifteen|twenty|thirty|forty|fifty|hundred|thousand|half|"
                     r"once|twice|daily|weekly|monthly|annually|yearly|every)\b", re.I)
_STEP_VERBS = (
    "go|click|select|open|log|sign|fill|complete|submit|send|email|ask|request|contact|"
    "create|add|choose|enter|type|use|visit|navigate|find|download|install|follow|read|"
    "make|file|upload|attach|review|check|confirm|search|post|reach|call|write|save|"
    "copy|set|start|register|apply|enroll|tell|notify|let|talk|schedule|book|get|"
    "update|change|print|sign|scan|forward|mark|enable|turn|connect|put|include|note|"
    "first|then|next|finally|once|after|before|to")
_STEP = re.compile(rf"^(?:\d+[.)]\s*)?(?:please\s+)?(?:{_STEP_VERBS})\b|\b(?:steps?|follow "
                   r"these|instructions|you(?:'ll| will)? (?:need|have) to|you can|"
                   r"you should|you must|in order to|by (?:going|clicking|filling|sending|"
                   r"emailing|submitting))\b", re.I)
_CODE_STATES = re.compile(r"\b(?:exit|code|status|port)\b[^.|;]{0,12}?\d+|"
                          r"\d+\s*\(?(?:exit|code|status)\b", re.I)
_CODE_REACH = 30
_YESNO_STATES = re.compile(
    r"\b(?:not|no|never|cannot|can't|can|may|must|only|allowed|permitted|prohibited|"
    r"required|requires?|eligible|ineligible|need|needs|should|shouldn't|don't|doesn't|"
    r"isn't|aren't|won't|yes|always|unless|except|entitled|forbidden|mandatory|optional)\b",
    re.I)
_WHO_STATES = re.compile(
    r"\b(?:team|office|division|staff|supervisor|manager|lead|owner|responsible|contact|"
    r"coordinator|officer|director|admin\w*|desk|specialist|representative|hr|ohrm|"
    r"liaison|point of contact|poc|chief|head|handles?|approves?)\b|@|"
    r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\s+[A-Z][a-z]+", re.I)
_WHERE_STATES = re.compile(
    r"https?://|www\.|\b\w+\.(?:gov|com|org|io|net)\b|#[\w-]+|\b(?:channel|page|site|"
    r"website|portal|folder|drive|link|inbox|form|system|app|tab|menu|directory|"
    r"repo(?:sitory)?|wiki|handbook|located|available (?:at|in|on)|go to|visit)\b|"
    r"(?:^|[\s`(])(?:[~<./][\w.<>~/-]*/[\w.<>-]+|[\w.<>-]+/[\w./-]*\.\w{2,6}\b)", re.I)
_IMPERATIVE = re.compile(rf"^(?:\d+[.)]\s*)?(?:please\s+)?(?:{_STEP_VERBS})\b", re.I)
_NEGATED = r"(?:does|did|do|is|was|will|wo|ca|can)(?:\s+not|n't)"
_FAILURE = re.compile(
    r"\btroubleshoot\w*|\bif\b[^.;!?]{0,80}?(?:\bfail(?:s|ed|ing)?\b|"
    rf"\b{_NEGATED}\s+(?:arrive|work|show|appear|load|start|come|respond|connect)|"
    r"\bnot\s+(?:working|arriving|responding))", re.I)
_FAILURE_ASKED = re.compile(
    r"\b(?:fail\w*|troubleshoot\w*|fix\w*|broken|errors?|wrong|problems?|"
    rf"not\s+(?:working|arriving|responding))\b|\b{_NEGATED}\b", re.I)
_FRAGMENT_MIN_WORDS = 6
_ANAPHOR = re.compile(r"^\W*(?:it|its|it's|this|that|these|those|they|their|them|he|she|his|"
                      r"her|such|both)\b", re.I)
_EXPLETIVE = re.compile(r"^\W*it(?:'s|\s+is|\s+was|\s+will\s+be|\s+can\s+be|\s+may\s+be)?"
                        r"\s+(?:(?:not\s+)?\w+\s+(?:to|that|for)\b|takes\b|helps\b|"
                        r"depends\b|seems\b)", re.I)
_WORD = re.compile(r"[a-z0-9]{3,}")


def question_form(question: str) -> str | None:
    """The form of answer ``question`` asks for (one of :data:`FORMS`), or ``None``.
    A percentage or an amount of money comes from :func:`wiki.answering.answer_type.expected_type`;
    "how do I" is ``howto`` before it is a yes/no question."""
    typed = expected_type(question)
    if typed is not None:
        return typed
    if _CODE.search(question):
        return "code"
    if _HOWTO.search(question):
        return "howto"
    if _WHO.search(question):
        return "who"
    if _WHERE.search(question):
        return "where"
    if _AMOUNT.search(question):
        return "amount"
    if _YESNO.search(question):
        return "yesno"
    return None


def states_form(sentence: str, form: str | None, question: str = "") -> bool:
    """Whether ``sentence`` states what a question of ``form`` asks for (``False`` for
    ``None``). Lenient on purpose: the form separates answering sentences from topical
    ones among sentences already found by their words and meaning. A ``code`` (an exit
    code, a port) counts only next to a word of ``question`` ("an evidence gap (exit 3)"
    for "what exit code does an evidence gap return?"; not "no log yet: exit 0")."""
    if form in EVIDENCE:
        return EVIDENCE[form].search(sentence) is not None
    if form == "code":
        return _code_near(sentence, question)
    pattern = {"amount": _NUMBER, "howto": _STEP, "yesno": _YESNO_STATES, "who": _WHO_STATES,
               "where": _WHERE_STATES}.get(form or "")
    return pattern is not None and pattern.search(sentence) is not None


def _code_near(sentence: str, question: str) -> bool:
    asked = {w for w in _WORD.findall(question.lower())
             if w not in {"what", "which", "code", "exit", "status", "does", "return", "port"}}
    for match in _CODE_STATES.finditer(sentence):
        around = sentence[max(0, match.start() - _CODE_REACH):match.end() + _CODE_REACH]
        if not asked or any(w[:4] in around.lower() for w in asked):
            return True
    return False


def is_fragment(sentence: str) -> bool:
    """A table row (cells joined by `` | ``), a lead-in to a list ("To donate your
    leave:") or a short line without a full stop, rather than a statement."""
    return " | " in sentence or is_lead_in(sentence) or (
        len(sentence.split()) < _FRAGMENT_MIN_WORDS
        and not sentence.rstrip().endswith((".", "!", "?")))


def is_anaphoric(sentence: str) -> bool:
    """A sentence that opens with a pronoun or a demonstrative ("It", "Its", "This",
    "They", ...): its subject is in the sentence before it. An expletive "it" ("It's easy
    to ...", "It takes a week ...") refers to nothing and is not one."""
    return _ANAPHOR.match(sentence) is not None and _EXPLETIVE.match(sentence) is None


def row_key_missed(question: str, sentence: str) -> bool:
    """A table row (cells joined by `` | ``) whose first cell shares no word of three or
    more letters with ``question``: a row of a reference table about another key."""
    if " | " not in sentence:
        return False
    key = set(_WORD.findall(sentence.split(" | ", 1)[0].lower()))
    return not key & set(_WORD.findall(question.lower()))


def is_imperative(sentence: str) -> bool:
    """A sentence that opens with a step's verb ("Open ...", "2. Click ...", "Then
    submit ..."): a step of a list or an instruction, not only a sentence that mentions
    what one can do ("You can also check ...")."""
    return _IMPERATIVE.match(sentence) is not None


def is_about_failure(sentence: str) -> bool:
    """A sentence about what to do when something goes wrong: it troubleshoots, or says
    "if ... fails / does not arrive / is not working"."""
    return _FAILURE.search(sentence) is not None


def asks_about_failure(question: str) -> bool:
    """A question about something that went wrong ("how do I fix ...", "... when the page
    does not arrive?"): its answer may well be a troubleshooting sentence."""
    return _FAILURE_ASKED.search(question) is not None


def is_lead_in(sentence: str) -> bool:
    """A line ending in a colon: it names what follows and answers nothing itself."""
    return sentence.rstrip().endswith(":")


@dataclass(frozen=True)
class Scored:
    """One candidate sentence: ``index`` into the caller's list, its ``entry`` position,
    the parts of its score and the total (``score``, rank-discounted); ``imperative``: for
    a how-to question, it opens with a step's verb (:func:`is_imperative`)."""

    index: int
    entry: int
    lexical: float
    cosine: float
    states: bool
    fragment: bool
    score: float
    anaphoric: bool = False
    imperative: bool = False


def score_sentences(question: str, texts: Sequence[str], entries: Sequence[int],
                    vectors: np.ndarray | None, query_vector: np.ndarray | None,
                    config: PickerConfig) -> list[Scored]:
    """Score every sentence ``texts[i]`` of entry position ``entries[i]`` (0 = top hit)
    against ``question``; ``vectors`` (``(len(texts), dim)``, unit rows; ``None``: no
    vector signal, and the words take the cosine's weight too) and ``query_vector``
    (unit). For a how-to question not about a failure, a sentence about one states no
    step and is discounted (:attr:`PickerConfig.failure_weight`). Returns them best
    first."""
    if not texts:
        return []
    lexical = np.zeros(len(texts))
    for i, value in rank_passages(question, list(texts), limit=len(texts)):
        lexical[i] = value
    lexical /= max(float(lexical.max()), 1e-9)
    cosine = np.zeros(len(texts))
    words = config.lexical + config.cosine  # without vectors the words take the weight
    if vectors is not None and query_vector is not None:
        cosine = np.clip(vectors @ np.asarray(query_vector, dtype=np.float32), 0.0, None)
        words = config.lexical
    form = question_form(question)
    steps_asked = (form == "howto" and config.failure_weight < 1.0
                   and not asks_about_failure(question))
    out = []
    for i, text in enumerate(texts):
        failure = steps_asked and is_about_failure(text)
        states = states_form(text, form, question) and not is_lead_in(text) and not failure
        fragment = is_fragment(text)
        value = words * lexical[i] + config.cosine * cosine[i] + config.form * states
        if fragment and not states:
            value *= config.fragment_weight
        if failure:
            value *= config.failure_weight
        if config.row_weight != 1.0 and row_key_missed(question, text):
            value *= config.row_weight
        value /= (1 + entries[i]) ** config.rank_discount
        out.append(Scored(i, entries[i], float(lexical[i]), float(cosine[i]), states,
                          fragment, float(value), is_anaphoric(text),
                          form == "howto" and is_imperative(text)))
    return sorted(out, key=lambda s: (-s.score, s.index))


def pick(scored: Sequence[Scored], config: PickerConfig) -> list[Scored]:
    """The answer's sentences: the best first, then those at or above ``floor ×`` the best
    score, entry by entry in rank order (at most ``entry_places`` per entry before the lower
    entries' turn), at most ``max_sentences``. An opening sentence that starts with a
    pronoun is discounted or preceded by the sentence it refers back to
    (:attr:`PickerConfig.anaphor`)."""
    ranked = [s for s in scored if s.score > 0]
    if not ranked:
        return []
    by_index = {s.index: s for s in scored}

    def referent(s: Scored) -> Scored | None:
        before = by_index.get(s.index - 1)
        return before if before is not None and before.entry == s.entry else None

    def resolved(s: Scored) -> bool:
        """The sentence before ``s`` may open the answer ahead of it."""
        before = referent(s)
        return before is not None and (config.anaphor == "context" or (
            config.anaphor == "relevant-context" and before.score >= config.floor * s.score))

    if config.anaphor != "none":
        ranked.sort(key=lambda s: (-s.score * (
            config.anaphor_weight if s.anaphoric and not resolved(s) else 1.0), s.index))
    best = ranked[0]
    floor = config.floor * best.score
    within: dict[int, int] = {}
    turn: dict[int, int] = {}
    entries = 1 + max(s.entry for s in ranked)
    for s in ranked:
        within[s.entry] = within.get(s.entry, 0) + 1
        turn[s.index] = s.entry + (entries if within[s.entry] > config.entry_places else 0)
    rest = sorted((s for s in ranked[1:] if s.score >= floor),
                  key=lambda s: (turn[s.index], -s.score, s.index))
    if best.anaphoric and config.anaphor != "penalty" and resolved(best):
        before = referent(best)
        return [before, best, *(s for s in rest if s.index != before.index)][
            :max(config.max_sentences, 2)]
    return [best, *rest][:config.max_sentences]


def answer_score(scored: Sequence[Scored], coverage: float, config: PickerConfig) -> float:
    """How well the answer is supported: the cosine of the best sentence plus
    ``score_coverage ×`` ``coverage`` (the share of the question's words, IDF-weighted,
    that the top entry holds: :mod:`indexes.retrieval.coverage`); ``coverage`` alone without
    candidates. Compared with ``gap_score`` and ``hedge_score``."""
    return judged_cosine(scored, config) + config.score_coverage * coverage


def judged_cosine(scored: Sequence[Scored], config: PickerConfig) -> float:
    """The cosine the answer score takes (:attr:`PickerConfig.score_by`); 0 without
    candidates."""
    if not scored:
        return 0.0
    if config.score_by == "words":
        return max(scored, key=lambda s: (
            s.lexical / (1 + s.entry) ** config.rank_discount, s.score)).cosine
    return scored[0].cosine


def form_missing(question: str, scored: Sequence[Scored], config: PickerConfig) -> str | None:
    """The form ``question`` asks for (``amount``, ``who``, ``where``, a percentage or
    money) when no sentence scoring within ``form_gap_margin`` of the best states it;
    ``None`` otherwise or for forms every text can state (yes/no, how-to)."""
    form = question_form(question)
    if form not in ("amount", "code", "who", "where", "percent", "money") or not scored:
        return None
    top = scored[0].score
    near = [s for s in scored if s.score >= top - config.form_gap_margin * max(top, 1e-9)]
    return None if any(s.states for s in near) else form
