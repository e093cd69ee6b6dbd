"""The configured source's long documents (``study.granularity.source``)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from clcg_pipeline.config import ASSEMBLED_SOURCE, GranularitySettings
from clcg_pipeline.granularity._documents._assemble import assemble_documents
from clcg_pipeline.granularity._documents._contract import LongDocuments
from clcg_pipeline.granularity._documents._long_corpus import load_long_documents


def build_long_documents(
    settings: GranularitySettings,
    *,
    paragraphs: pd.DataFrame,
    audit: pd.DataFrame,
    languages: Sequence[str],
    reference: str,
    threshold: float,
    tokenizer: str = "cl100k_base",
) -> LongDocuments:
    """The configured source's documents (``assembled`` reads ``paragraphs`` and ``audit``)."""
    if settings.source == ASSEMBLED_SOURCE:
        return assemble_documents(
            paragraphs, audit, settings, languages=languages, reference=reference, tokenizer=tokenizer
        )
    return load_long_documents(
        settings.source,
        settings,
        languages=languages,
        reference=reference,
        threshold=threshold,
        tokenizer=tokenizer,
    )
