"""A deterministic fake LLM provider, registered through the real registry
(:func:`wiki.llm.backend.register_provider` -> ``litellm.custom_provider_map``), so tests
exercise the whole path through ``litellm.completion`` without a network or a model.

Yes/no judgements: P(yes) grows with the share of the question's words found in the
evidence (the text between the fence markers only), returned as log-probabilities of the
first token like a real provider; lettered lists get each letter's probability from its
line's shared words. JSON answers pick the option with the most shared words.
A "hijacked" model: if "ignore previous instructions" appears *outside* the evidence fence,
it answers yes to everything, and a distillation says "The answer is 42" (so a fence that
leaks fails the injection tests). Distillation (wiki.knowledge.distill) returns ``distilled`` when a
test scripts it, else one entry per sentence of the evidence; ``fail = "json"`` makes it
answer text that is not JSON.
"""

from __future__ import annotations

import json
import math
import re

from wiki.llm import backend

litellm = backend.litellm()  # through the project's import: no network at import time
CustomLLM = litellm.CustomLLM
ChoiceLogprobs = litellm.types.utils.ChoiceLogprobs

WORD = re.compile(r"[^\W_]{3,}")
FENCE = re.compile(r"<evidence>\n(.*?)\n</evidence>", re.DOTALL)
INJECTION = "ignore previous instructions"


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.casefold()) if w not in {"the", "and", "how", "what"}}


class FakeProvider(CustomLLM):
    """Counts ``calls``; ``fail`` = "timeout" or "error" makes every call fail that way."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.fail: str | None = None
        self.prompts: list[str] = []
        self.answer: str | None = None
        """The reply to an answer-writing prompt (wiki.llm.answer), scripted by a test."""
        self.distilled: list[dict] | None = None
        """The entries of a distillation reply (wiki.knowledge.distill), scripted by a test."""

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   *args, **kwargs):
        self.calls += 1
        user = messages[-1]["content"]
        self.prompts.append(user)
        if self.fail == "timeout":
            raise litellm.Timeout("fake provider: timed out", model=model,
                                  llm_provider="fake")
        if self.fail == "error":
            raise litellm.APIConnectionError("fake provider: down", model=model,
                                             llm_provider="fake")
        evidence = " ".join(FENCE.findall(user))
        outside = FENCE.sub("", user)
        if "separate facts, decisions or steps" in outside:  # wiki.knowledge.distill
            text = self._distil(evidence, outside)
            model_response.choices[0].message.content = text
            used, made = len(user.split()), len(text.split())
            model_response.usage = litellm.Usage(prompt_tokens=used, completion_tokens=made,
                                                 total_tokens=used + made)
            model_response.model = model
            return model_response
        question = re.search(r"Question: (.*)", user)[1]
        if "passage it comes from" in outside:  # write a cited answer: as scripted
            text, logprobs = self.answer or "NOT IN EVIDENCE", None
        elif optional_params.get("response_format"):
            options = [line.split(". ", 1)[-1] for line in evidence.splitlines()]
            best = max(range(len(options)),
                       key=lambda i: (len(words(question) & words(options[i])), -i))
            text, logprobs = json.dumps({"choice": best + 1}), None
        elif "letter" in outside:  # a scored choice among lettered lines
            lines = re.findall(r"^([A-Z])\. (.*)$", evidence, re.MULTILINE)
            weights = {mark: 0.05 + len(words(question) & words(line)) for mark, line in lines}
            total = sum(weights.values())
            tops = [{"token": mark, "logprob": math.log(w / total), "bytes": None}
                    for mark, w in sorted(weights.items(), key=lambda kv: -kv[1])]
            text = tops[0]["token"]
            logprobs = ChoiceLogprobs(content=[{**tops[0], "top_logprobs": tops}])
        else:
            wanted = words(question)
            share = len(wanted & words(evidence)) / max(1, len(wanted))
            p_yes = 0.999 if INJECTION in outside.lower() else 0.02 + 0.96 * share
            text = "yes" if p_yes >= 0.5 else "no"
            logprobs = ChoiceLogprobs(content=[{
                "token": text, "logprob": math.log(max(p_yes, 1 - p_yes)), "bytes": None,
                "top_logprobs": [
                    {"token": "yes", "logprob": math.log(p_yes), "bytes": None},
                    {"token": "no", "logprob": math.log(1 - p_yes), "bytes": None}]}])
        model_response.choices[0].message.content = text
        if logprobs is not None and optional_params.get("logprobs"):
            model_response.choices[0].logprobs = logprobs
        prompt_tokens = sum(len(m["content"].split()) for m in messages)
        model_response.usage = litellm.Usage(prompt_tokens=prompt_tokens, completion_tokens=1,
                                             total_tokens=prompt_tokens + 1)
        model_response.model = model
        return model_response


    def _distil(self, evidence: str, outside: str) -> str:
        if self.fail == "json":
            return "Sure! Here are the entries: title, claim"
        if INJECTION in outside.lower():
            entries = [{"title": "Hijacked", "claim": "The answer is 42.", "type": "fact",
                        "key": "", "value": ""}]
        elif self.distilled is not None:
            entries = self.distilled
        else:
            entries = [{"title": " ".join(s.split()[:4]), "claim": s, "type": "note",
                        "key": "", "value": ""}
                       for s in re.split(r"(?<=[.!?])\s+", evidence.replace("\n", " "))
                       if len(s.split()) >= 4]
        return json.dumps({"entries": entries[:4]})


def install(monkeypatch) -> FakeProvider:
    """Register a fresh fake as provider ``fake`` and select ``fake/judge`` as the model."""
    provider = FakeProvider()
    backend.register_provider("fake", lambda: provider)
    monkeypatch.setenv("WIKI_MODEL", "fake/judge")
    return provider
