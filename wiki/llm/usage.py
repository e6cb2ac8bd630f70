"""Usage accounting and per-question budgets of the LLM client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field

from wiki.llm.errors import BudgetExceededError


@dataclass
class Usage:
    """What calls cost: ``calls`` made to the provider (cache hits are not calls),
    ``cache_hits``, ``prompt_tokens`` and ``completion_tokens`` as the provider counted
    them, ``seconds`` of wall time spent waiting for the provider, ``errors`` (failed or
    timed-out calls; ``timeouts`` of them stopped by a timeout or the spent ``[llm]``
    deadline) and ``redactions`` (secrets masked before sending)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    errors: int = 0
    timeouts: int = 0
    redactions: int = 0

    @property
    def tokens(self) -> int:
        """Prompt + completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def copy(self) -> Usage:
        """An independent copy."""
        return Usage(**asdict(self))

    def since(self, start: Usage) -> Usage:
        """The usage accrued after the snapshot ``start``."""
        now, then = asdict(self), asdict(start)
        return Usage(**{k: now[k] - then[k] for k in now})

    def to_dict(self) -> dict:
        """JSON-ready: the counters, ``tokens`` and seconds rounded to milliseconds."""
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["tokens"] = self.tokens
        return data


@dataclass(frozen=True)
class Limits:
    """Caps for one question (``None``: no cap): provider ``calls``, ``tokens``
    (prompt + completion) and wall ``seconds`` since the budget opened."""

    calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None


@dataclass
class Budget:
    """A :class:`Limits` applied to the usage accrued since ``start``; ``exhausted`` is set
    once a call has been refused."""

    limits: Limits
    start: Usage
    opened: float = field(default_factory=time.monotonic)
    exhausted: str | None = None

    def remaining_seconds(self) -> float | None:
        """Seconds left before the deadline (``None``: no deadline)."""
        if self.limits.seconds is None:
            return None
        return self.limits.seconds - (time.monotonic() - self.opened)

    def remaining_tokens(self, usage: Usage) -> int | None:
        """Tokens left (``None``: no cap)."""
        if self.limits.tokens is None:
            return None
        return self.limits.tokens - usage.since(self.start).tokens

    def check(self, usage: Usage) -> None:
        """Raise :class:`BudgetExceededError` when no further call may start."""
        spent = usage.since(self.start)
        reason = None
        if self.limits.calls is not None and spent.calls >= self.limits.calls:
            reason = f"{self.limits.calls} calls"
        elif self.limits.tokens is not None and spent.tokens >= self.limits.tokens:
            reason = f"{self.limits.tokens} tokens"
        elif (left := self.remaining_seconds()) is not None and left <= 0:
            reason = f"{self.limits.seconds:g} seconds"
        if reason:
            self.exhausted = reason
            raise BudgetExceededError(f"the LLM budget of {reason} per question is spent "
                                      "(raise [llm] max_calls/max_tokens/max_seconds in "
                                      "wiki.toml)")


@dataclass
class Deadline:
    """One wall-clock deadline shared by every model call of a command (``[llm] timeout``,
    docs/llm.md): ``seconds`` counted from the first call that goes to the provider
    (:meth:`start`; cache hits do not start it). A call may use at most what is left, and
    none starts once it is spent."""

    seconds: float
    started: float | None = None

    def start(self) -> None:
        """Start the clock (a no-op once started)."""
        if self.started is None:
            self.started = time.monotonic()

    def remaining(self) -> float:
        """Seconds left (the whole ``seconds`` before :meth:`start`; may be negative)."""
        if self.started is None:
            return self.seconds
        return self.seconds - (time.monotonic() - self.started)


_COMMAND: ContextVar[list[Deadline] | None] = ContextVar("wiki_llm_command", default=None)


@contextmanager
def command_scope() -> Iterator[None]:
    """One command (a CLI invocation, an MCP tool call, one :func:`wiki.answering.ask.ask`): within
    the block, every client :func:`wiki.llm.settings.open_client` opens shares one
    :class:`Deadline`. A scope inside another is the outer one."""
    if _COMMAND.get() is not None:
        yield
        return
    token = _COMMAND.set([])
    try:
        yield
    finally:
        _COMMAND.reset(token)


def command_deadline(seconds: float) -> Deadline:
    """The deadline of the current :func:`command_scope` (made with ``seconds`` by its
    first client), or a new one of ``seconds`` outside any scope."""
    holder = _COMMAND.get()
    if holder is None:
        return Deadline(seconds)
    if not holder:
        holder.append(Deadline(seconds))
    return holder[0]
