"""Regions and positions (thirds of the English document), and one document's aligned rows."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from clcg_pipeline.corpus import count_tokens
from clcg_pipeline.granularity._documents._alignment import align_pids
from clcg_pipeline.granularity._documents._contract import THIRDS


def third(index: int, n: int) -> str:
    """begin / middle / end of item ``index`` among ``n`` (equal thirds by count)."""
    if n <= 0:
        raise ValueError("third of an empty sequence")
    return THIRDS[min(2, (3 * index) // n)]


def assign_regions(token_counts: Sequence[int], rule: str = "tokens") -> list[str]:
    """Region of each paragraph: thirds by tokens (token midpoint) or by paragraph count."""
    n = len(token_counts)
    if rule == "paragraphs":
        return [third(i, n) for i in range(n)]
    if rule != "tokens":
        raise ValueError(f"region_split must be 'tokens' or 'paragraphs', got {rule!r}")
    total = sum(token_counts) or 1
    out: list[str] = []
    seen = 0
    for count in token_counts:
        mid = (seen + count / 2) / total
        out.append(THIRDS[min(2, int(mid * 3))])
        seen += count
    return out


def assign_positions(regions: Sequence[str]) -> list[str]:
    """Position of each paragraph within its region (thirds of the region's paragraphs)."""
    sizes = {r: regions.count(r) for r in THIRDS}
    seen = dict.fromkeys(THIRDS, 0)
    out: list[str] = []
    for region in regions:
        out.append(third(seen[region], sizes[region]))
        seen[region] += 1
    return out


def common_pids(paragraphs: pd.DataFrame, languages: Sequence[str], reference: str) -> dict[str, list[str]]:
    """doc_id -> the reference's pids (in order) that have non-blank text in every language.

    A paragraph some language lacks is left out of every language and a warning names it
    (``_alignment``: why the common pids are kept, not the language version dropped)."""
    return align_pids(paragraphs, languages, reference).pids


def layout(
    doc_id: str,
    members: list[tuple[str, str]],
    by_key: dict[tuple[str, str, str], str],
    languages: Sequence[str],
    reference: str,
    tokenizer: str,
    rule: str,
    pid_of: Callable[[str, str], str],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """long_paragraphs rows of one document (every language) and its token count per language."""
    ref_texts = [by_key[(src_doc, reference, src_pid)] for src_doc, src_pid in members]
    ref_tokens = count_tokens(ref_texts, tokenizer)
    regions = assign_regions(ref_tokens, rule)
    positions = assign_positions(regions)
    rows: list[dict[str, Any]] = []
    totals: dict[str, int] = {}
    for language in languages:
        texts = [by_key[(src_doc, language, src_pid)] for src_doc, src_pid in members]
        tokens = ref_tokens if language == reference else count_tokens(texts, tokenizer)
        totals[language] = int(sum(tokens))
        for ordinal, ((src_doc, src_pid), text, n, region, position) in enumerate(
            zip(members, texts, tokens, regions, positions, strict=True), start=1
        ):
            rows.append(
                {
                    "doc_id": doc_id,
                    "language": language,
                    "pid": pid_of(src_doc, src_pid),
                    "ordinal": ordinal,
                    "region": region,
                    "position": position,
                    "text": text,
                    "source_doc_id": src_doc,
                    "source_pid": src_pid,
                    "n_tokens": int(n),
                }
            )
    return rows, totals
