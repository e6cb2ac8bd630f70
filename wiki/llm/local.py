"""The offline provider: ``local/<name>`` served by llama-cpp-python in this process,
registered with litellm as a ``CustomLLM`` (:mod:`wiki.llm.backend`), so it takes the same
path through ``litellm.completion`` as any hosted model.

The model is loaded once per process and kept (a lock serialises calls). One-token calls
that ask for log-probabilities (the client's yes/no judgements) take a fast path: the
prompt is evaluated reusing the longest prefix already in the KV cache (the system prompt
and the question, shared by every candidate of one question), and the log-softmax of the
last logits gives the top alternatives; llama-cpp's own ``logprobs`` would need
``logits_all`` (a vocabulary-sized row per context token, ~2.5 GB here). Other calls use
``create_chat_completion``, with ``response_format`` JSON schemas turned into llama.cpp's
grammar. The timeout is a deadline checked between generated tokens (the answer is
streamed, so a call past it stops at once).

Imported only when a ``local/`` model is used (it imports litellm and llama_cpp).
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np

from wiki.llm import modelfile
from wiki.llm.backend import litellm
from wiki.llm.errors import ModelFileError

_litellm = litellm()
CONTEXT = 4096


class LocalProvider(_litellm.CustomLLM):
    """``local/qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct Q4_K_M on the CPU."""

    _shared: LocalProvider | None = None
    _shared_lock = threading.Lock()

    def __init__(self, path: str, threads: int | None = None):
        super().__init__()
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError:
            raise ModelFileError("the local provider needs llama-cpp-python: run "
                                 "`make setup-llm` or `pip install '.[local]'`") from None
        started = time.monotonic()
        threads = threads or max(1, (os.cpu_count() or 2) - 1)
        self.llm = Llama(model_path=path, n_ctx=CONTEXT, n_threads=threads,
                         n_threads_batch=threads, logits_all=False, verbose=False)
        self.load_seconds = time.monotonic() - started
        eos, bos = self.llm.token_eos(), self.llm.token_bos()
        self.formatter = Jinja2ChatFormatter(
            template=self.llm.metadata["tokenizer.chat_template"],
            eos_token=self.llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=self.llm._model.token_get_text(bos) if bos != -1 else "")
        self.lock = threading.Lock()

    @classmethod
    def create(cls) -> LocalProvider:
        """The process-wide provider (the model loads on the first call of a process).
        ``WIKI_LLM_THREADS`` sets the CPU threads (default: one less than the cores: llama.cpp
        threads spin while they wait, so oversubscribed cores slow it down tenfold)."""
        with cls._shared_lock:
            if cls._shared is None:
                threads = int(os.environ.get("WIKI_LLM_THREADS", "0")) or None
                cls._shared = cls(str(modelfile.model_path()), threads)
            return cls._shared

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   acompletion=None, litellm_params=None, logger_fn=None, headers=None,
                   timeout=None, client=None):
        """litellm's entry point: answer ``messages`` into ``model_response``."""
        deadline = time.monotonic() + float(timeout or 600)
        max_tokens = int(optional_params.get("max_tokens") or 256)
        top = int(optional_params.get("top_logprobs") or 0)
        with self.lock:
            if max_tokens == 1 and optional_params.get("logprobs") and top:
                text, logprobs, used = self._first_token(messages, top)
                completion_tokens = 1
            else:
                text, used, completion_tokens = self._chat(messages, optional_params,
                                                           max_tokens, deadline)
                logprobs = None
        if time.monotonic() > deadline:
            raise _litellm.Timeout(f"local model: no answer within {timeout} s", model=model,
                                   llm_provider="local")
        model_response.choices[0].message.content = text
        if logprobs is not None:
            model_response.choices[0].logprobs = logprobs
        model_response.model = f"local/{model}"
        model_response.usage = _litellm.Usage(prompt_tokens=used,
                                              completion_tokens=completion_tokens,
                                              total_tokens=used + completion_tokens)
        return model_response

    def _first_token(self, messages: list[dict], top: int):
        llm = self.llm
        result = self.formatter(messages=messages)
        tokens = llm.tokenize(result.prompt.encode("utf-8"),
                              add_bos=not result.added_special, special=True)
        if len(tokens) >= CONTEXT:
            raise _litellm.ContextWindowExceededError(
                f"prompt of {len(tokens)} tokens exceeds {CONTEXT}", model="local",
                llm_provider="local")
        shared = 0
        for old, new in zip(llm.input_ids[:llm.n_tokens], tokens[:-1], strict=False):
            if old != new:
                break
            shared += 1
        llm.n_tokens = shared  # eval() drops the KV cache past this point
        llm.eval(tokens[shared:])
        logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1),
                                       shape=(llm.n_vocab(),)).astype(np.float64)
        logprobs = logits - logits.max()
        logprobs -= np.log(np.exp(logprobs).sum())
        best = np.argsort(-logprobs)[:top]
        alternatives = [{"token": llm.detokenize([int(t)]).decode("utf-8", "replace"),
                         "logprob": float(logprobs[t]), "bytes": None} for t in best]
        first = alternatives[0]
        content = [{**first, "top_logprobs": alternatives}]
        return first["token"], _litellm.types.utils.ChoiceLogprobs(content=content), \
            len(tokens)

    def _chat(self, messages: list[dict], params: dict, max_tokens: int, deadline: float):
        extra = {}
        fmt = params.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            extra["response_format"] = {"type": "json_object",
                                        "schema": fmt.get("json_schema", {}).get("schema")}
        elif isinstance(fmt, dict) and fmt.get("type") == "json_object":
            extra["response_format"] = {"type": "json_object"}
        # Streamed, so the deadline is checked in Python between tokens and closing the
        # stream stops generation at once: a logits processor runs inside a ctypes
        # callback that swallows exceptions, and the chat handlers drop stopping criteria.
        stream = self.llm.create_chat_completion(
            messages=messages, max_tokens=max_tokens,
            temperature=float(params.get("temperature") or 0.0), seed=0, stream=True,
            **extra)
        parts: list[str] = []
        try:
            for chunk in stream:
                if time.monotonic() > deadline:
                    raise _litellm.Timeout("local model: deadline passed while generating",
                                           model="local", llm_provider="local")
                parts.append(chunk["choices"][0]["delta"].get("content") or "")
        finally:
            stream.close()
        generated = sum(1 for part in parts if part)
        return "".join(parts), max(self.llm.n_tokens - generated, 0), generated
