"""The LLM layer (docs/llm.md). Importing this package imports no model library: litellm
is imported by :mod:`wiki.llm.backend` on the first call.

Public API:

* :class:`wiki.llm.client.LLMClient` — ``complete(messages, ...)``, ``judge(question,
  candidate) -> P(yes)``, ``rank(question, options) -> [P(option)]``,
  ``choose(question, options, ask=...) -> index``, ``complete_json(messages, schema)``,
  ``budget(limits)`` (a context manager), ``usage`` (:class:`wiki.llm.usage.Usage`);
* :func:`wiki.llm.settings.open_client` / :func:`~wiki.llm.settings.require_client` /
  :func:`~wiki.llm.settings.model_name` — the configured model of a wiki;
* :mod:`wiki.llm.prompts` — the system prompt and :func:`~wiki.llm.prompts.fence` for
  quoting retrieved text as evidence;
* :func:`wiki.llm.client.redact_outbound` — the one place text is redacted before it
  leaves the process;
* :func:`wiki.llm.walk.walk` / :func:`~wiki.llm.walk.rerank` — the index-walk leg and the
  rerank; :class:`wiki.llm.leg.LLMStage` ties them into :func:`wiki.answering.search.search`;
* :mod:`wiki.llm.errors` — ``LLMError`` and its kinds;
* :func:`wiki.llm.backend.register_provider` — add a litellm ``CustomLLM`` by name.
"""
