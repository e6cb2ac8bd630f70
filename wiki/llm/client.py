"""The LLM client: every model call of the project goes through :class:`LLMClient`.

It sends chat messages through ``litellm.completion`` (any provider litellm supports, or
a custom one registered in :mod:`wiki.llm.backend`, such as the offline ``local`` model),
and adds what the product needs around it:

* a persistent response cache keyed by (model, prompt, parameters): an identical call is
  answered from the cache and is not a provider call;
* usage accounting (:class:`~wiki.llm.usage.Usage`) and per-question budgets
  (:meth:`LLMClient.budget`) that refuse a call once calls, tokens or seconds are spent;
* one deadline (:class:`~wiki.llm.usage.Deadline`, ``[llm] timeout``) for all the calls
  of a command, and no provider retries: a provider that accepts the connection and never
  answers, or trickles its answer a byte at a time, costs the command at most the
  deadline (each call is waited for in a thread, :func:`within`), not a timeout per
  retry or per read; provider failures become :class:`LLMCallError` /
  :class:`LLMTimeoutError`, never a traceback;
* :func:`redact_outbound` on every message before it is sent;
* scored yes/no judgements (:meth:`LLMClient.judge`) from the log-probabilities of the
  first answer token, and JSON-constrained choices (:meth:`LLMClient.choose`).

Nothing here prints; the client never decides what to do about a failure, its caller does.
"""

from __future__ import annotations

import contextvars
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from wiki.llm import backend, prompts
from wiki.llm.cache import ResponseCache, cache_key
from wiki.llm.errors import LLMCallError, LLMTimeoutError
from wiki.llm.usage import Budget, Deadline, Limits, Usage
from wiki.safety.scan import redact

T = TypeVar("T")
YES = frozenset({"yes", "y", "true"})
NO = frozenset({"no", "n", "false"})
TOP_LOGPROBS = 10


def redact_outbound(text: str) -> tuple[str, int]:
    """``(text with secrets replaced by [REDACTED:<kind>], number of secrets found)``: the
    single choke point every message passes before it leaves the process for a provider
    (hosted or local). Secrets are found and masked by :func:`wiki.safety.scan.redact`,
    the same pattern table that guards every proposal (docs/security.md)."""
    cleaned, findings = redact(text)
    return cleaned, len(findings)


class CallExpiredError(TimeoutError):
    """A call run by :func:`within` did not return in its time."""


def within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result, waited for at most ``seconds`` (one deadline for the whole
    call: a provider that sends a byte every second never trips a per-read timeout).
    The call runs in a daemon thread with this context's variables; raises
    :class:`CallExpiredError` when it has not returned in time (the thread is abandoned:
    it ends when the provider stops sending or closes, its result unused), and whatever
    ``call`` raised otherwise."""
    box: dict[str, object] = {}
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box["result"] = context.run(call)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, name="wiki-llm-call", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        raise CallExpiredError(f"no answer within {seconds:.1f} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


@dataclass
class Completion:
    """One answer: ``text``; ``top_logprobs`` holds, per generated token (when the
    provider gives them), ``{token: natural-log probability}`` of its most likely
    alternatives; token counts as the provider reported them; ``cached`` when it came from
    the cache (then it cost nothing)."""

    text: str
    top_logprobs: list[dict[str, float]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False

    def to_json(self) -> dict:
        """The cached form."""
        return {"text": self.text, "top_logprobs": self.top_logprobs,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


class LLMClient:
    """Calls one ``model`` (a litellm model name, e.g. ``local/qwen2.5-coder-1.5b`` or
    ``openai/gpt-4o-mini``).

    ``cache``: a :class:`ResponseCache` (``None``: no caching); ``timeout``: seconds per
    call; ``deadline``: a :class:`Deadline` shared with the command's other clients
    (:func:`wiki.llm.settings.open_client` gives one) that bounds all the calls
    together; ``limits``: the default per-question caps used by
    :meth:`budget`;
    ``litellm_kwargs``: extra keyword arguments for every ``litellm.completion`` call
    (``api_base``, ``mock_response`` in tests, ...). Not thread-safe: one per thread.
    """

    def __init__(self, model: str, *, cache: ResponseCache | None = None,
                 timeout: float = 30.0, limits: Limits | None = None,
                 litellm_kwargs: dict | None = None, deadline: Deadline | None = None):
        self.model = model
        self.cache = cache
        self.timeout = timeout
        self.deadline = deadline
        self.limits = limits or Limits()
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self.usage = Usage()
        self._budgets: list[Budget] = []
        self._logprobs: bool | None = None

    # -- budgets -------------------------------------------------------------------------
    @contextmanager
    def budget(self, limits: Limits | None = None) -> Iterator[Budget]:
        """Within the block, calls are counted against ``limits`` (default: the client's)
        and refused with :class:`BudgetExceededError` once they are spent. Cache hits are
        free. Budgets nest: every open one must allow a call."""
        opened = Budget(limits or self.limits, self.usage.copy())
        self._budgets.append(opened)
        try:
            yield opened
        finally:
            self._budgets.remove(opened)

    def _admit(self, max_tokens: int) -> tuple[int, float]:
        """Check the deadline and every open budget; the completion tokens and timeout this
        call may use. Raises :class:`LLMTimeoutError` once the deadline is spent."""
        timeout = self.timeout
        if self.deadline is not None:
            timeout = min(timeout, self.deadline.remaining())
            if timeout <= 0:
                self.usage.errors += 1
                self.usage.timeouts += 1
                raise LLMTimeoutError(f"{self.model}: the [llm] timeout of "
                                      f"{self.deadline.seconds:g} s for this command is "
                                      "spent; nothing sent")
        for budget in self._budgets:
            budget.check(self.usage)
            left = budget.remaining_tokens(self.usage)
            if left is not None:
                max_tokens = max(1, min(max_tokens, left))
            seconds = budget.remaining_seconds()
            if seconds is not None:
                timeout = max(0.001, min(timeout, seconds))
        return max_tokens, timeout

    # -- calls ---------------------------------------------------------------------------
    def complete(self, messages: Sequence[dict], *, max_tokens: int = 256,
                 temperature: float = 0.0, response_format: dict | None = None,
                 top_logprobs: int = 0, use_cache: bool = True) -> Completion:
        """Send chat ``messages`` (``[{"role", "content"}]``) and return the answer.

        ``top_logprobs > 0`` asks for that many alternatives per token (ignored by
        providers that do not give them); ``response_format`` is passed to litellm as is
        (e.g. a ``json_schema``). Raises :class:`BudgetExceededError` (nothing sent),
        :class:`LLMTimeoutError` or :class:`LLMCallError`."""
        clean = [self._outbound(m) for m in messages]
        params = {"max_tokens": max_tokens, "temperature": temperature,
                  "response_format": response_format, "top_logprobs": top_logprobs}
        key = cache_key("chat", {"model": self.model, "messages": clean, **params})
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.cache_hits += 1
                return Completion(**hit, cached=True)
        max_tokens, timeout = self._admit(max_tokens)
        if self.deadline is not None:
            self.deadline.start()
        result = self._call(clean, max_tokens, temperature, response_format, top_logprobs,
                            timeout)
        if use_cache and self.cache is not None:
            self.cache.put(key, self.model, result.to_json())
        return result

    def _outbound(self, message: dict) -> dict:
        text, found = redact_outbound(str(message.get("content", "")))
        self.usage.redactions += found
        return {**message, "content": text}

    def _call(self, messages: list[dict], max_tokens: int, temperature: float,
              response_format: dict | None, top_logprobs: int, timeout: float) -> Completion:
        litellm = backend.prepare(self.model)
        # no retries: a retry would wait the timeout again (the deadline is the command's)
        kwargs = {"max_tokens": max_tokens, "temperature": temperature, "timeout": timeout,
                  "max_retries": 0, "num_retries": 0, **self.litellm_kwargs}
        if response_format is not None:
            kwargs["response_format"] = response_format
        if top_logprobs and self._supports_logprobs(litellm):
            kwargs.update(logprobs=True, top_logprobs=top_logprobs)
        started = time.monotonic()
        self.usage.calls += 1
        try:
            response = within(timeout, partial(litellm.completion, model=self.model,
                                               messages=messages, **kwargs))
        except (litellm.Timeout, CallExpiredError) as exc:
            self.usage.errors += 1
            self.usage.timeouts += 1
            scope = ("" if self.deadline is None else
                     f" ([llm] timeout = {self.deadline.seconds:g} s for all of the "
                     "command's model calls)")
            raise LLMTimeoutError(f"{self.model}: no answer within {timeout:.1f} s{scope}"
                                  ) from exc
        except Exception as exc:  # any provider failure: one line, the caller decides
            self.usage.errors += 1
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise LLMCallError(f"{self.model}: {first}") from exc
        finally:
            self.usage.seconds += time.monotonic() - started
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        result = Completion(text=choice.message.content or "",
                            top_logprobs=_top_logprobs(getattr(choice, "logprobs", None)),
                            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0))
        self.usage.prompt_tokens += result.prompt_tokens
        self.usage.completion_tokens += result.completion_tokens
        return result

    def _supports_logprobs(self, litellm) -> bool:
        if self._logprobs is None:
            if backend.is_custom(self.model):
                self._logprobs = True
            else:
                try:
                    params = litellm.get_supported_openai_params(model=self.model) or []
                except Exception:  # an unknown model: ask plainly
                    params = []
                self._logprobs = "logprobs" in params
        return self._logprobs

    # -- judgements ----------------------------------------------------------------------
    def judge(self, question: str, candidate: str, *, ask: str = prompts.RELEVANT) -> float:
        """The probability (0-1) that the answer to "``ask``" about ``candidate`` (fenced
        as evidence) for ``question`` is yes.

        From the log-probabilities of the first answer token where the provider gives
        them: ``P(yes) / (P(yes) + P(no))`` summed over spellings; otherwise from the
        one-token answer itself (1.0 yes, 0.0 no, 0.5 anything else). Raises like
        :meth:`complete`."""
        reply = self.complete(prompts.judge_messages(question, candidate, ask),
                              max_tokens=1, temperature=0.0, top_logprobs=TOP_LOGPROBS)
        return yes_probability(reply)

    def rank(self, question: str, options: Sequence[str], *,
             ask: str = prompts.PICK) -> list[float]:
        """A scored choice: for each of at most 26 ``options`` (fenced, labelled ``A``,
        ``B``, ...), the probability that the model picks it for ``question``, from the
        log-probabilities of the first answer token over the labels (summing to 1; labels
        outside the provider's 20 most likely tokens get 0). Without
        log-probabilities: 1.0 for the label answered, 0.0 for the others (uniform when
        the answer is no label). Raises like :meth:`complete`."""
        labels = prompts.LABELS[:len(options)]
        if not options or len(options) > len(prompts.LABELS):
            raise ValueError(f"rank() takes 1 to {len(prompts.LABELS)} options")
        reply = self.complete(prompts.choice_messages(question, list(options), ask, labels),
                              max_tokens=1, temperature=0.0, top_logprobs=20)
        mass = dict.fromkeys(labels, 0.0)
        for token, logprob in (reply.top_logprobs[0] if reply.top_logprobs else {}).items():
            if token.strip().upper() in mass:
                mass[token.strip().upper()] += math.exp(logprob)
        if not any(mass.values()):
            answer = reply.text.strip()[:1].upper()
            mass = {label: float(label == answer) for label in labels}
            if answer not in mass:
                mass = dict.fromkeys(labels, 1.0)
        total = sum(mass.values())
        return [mass[label] / total for label in labels]

    def choose(self, question: str, options: Sequence[str], *, ask: str) -> int:
        """The 0-based index of the option picked for ``question`` (options fenced as
        evidence and numbered from 1), with JSON-schema-constrained output
        ``{"choice": n}``. Raises :class:`LLMCallError` when the answer is not a valid
        choice, and like :meth:`complete`."""
        if not options:
            raise ValueError("choose() needs at least one option")
        schema = {"type": "object", "required": ["choice"], "additionalProperties": False,
                  "properties": {"choice": {"type": "integer", "minimum": 1,
                                            "maximum": len(options)}}}
        value = self.complete_json(
            prompts.choice_messages(question, list(options),
                                    f'{ask} Reply as JSON: {{"choice": <number>}}.'),
            schema, max_tokens=16)
        number = value.get("choice") if isinstance(value, dict) else None
        if not isinstance(number, int) or not 1 <= number <= len(options):
            raise LLMCallError(f"{self.model}: not a choice from 1 to {len(options)}: "
                               f"{json.dumps(value)[:80]}")
        return number - 1

    def complete_json(self, messages: Sequence[dict], schema: dict, *,
                      max_tokens: int = 256) -> object:
        """The answer parsed as JSON, requested with ``response_format`` set to
        ``schema`` (providers that support it constrain their output to it). Raises
        :class:`LLMCallError` when the answer is not JSON, and like :meth:`complete`."""
        reply = self.complete(messages, max_tokens=max_tokens, response_format={
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema, "strict": True}})
        text = reply.text.strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            raise LLMCallError(f"{self.model}: the answer is not JSON: {text[:80]!r}") from None


def yes_probability(reply: Completion) -> float:
    """P(yes) of a one-token yes/no ``reply`` (see :meth:`LLMClient.judge`)."""
    if reply.top_logprobs:
        yes = no = 0.0
        for token, logprob in reply.top_logprobs[0].items():
            word = token.strip().lower()
            if word in YES:
                yes += math.exp(logprob)
            elif word in NO:
                no += math.exp(logprob)
        if yes + no > 0:
            return yes / (yes + no)
    word = (reply.text.strip().lower().split() or [""])[0].strip(".,!\"'")
    return 1.0 if word in YES else 0.0 if word in NO else 0.5


def _top_logprobs(logprobs) -> list[dict[str, float]]:
    """litellm's (OpenAI-shaped) ``choice.logprobs`` as ``[{token: logprob}]`` per token."""
    content = _get(logprobs, "content") if logprobs is not None else None
    out = []
    for item in content or []:
        tops = {str(_get(t, "token")): float(_get(t, "logprob"))
                for t in (_get(item, "top_logprobs") or [])}
        tops.setdefault(str(_get(item, "token")), float(_get(item, "logprob")))
        out.append(tops)
    return out


def _get(obj, name: str):
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
