"""What the storage tests of the document's section models share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.storage import DocumentError

SOURCE = "run/study_results.json"


def refused(call: Callable[..., Any], document: dict[str, Any]) -> str:
    """The message ``call`` (``validate_document``, a view's reader) refuses ``document`` with."""
    with pytest.raises(DocumentError) as raised:
        call(document, source=SOURCE)
    return str(raised.value)


def score_rows(language: str, values: list[float], *, levels: list[str], statuses: list[str]) -> pd.DataFrame:
    """Scores of model ``m`` in ``language``: item ``i<k>`` of article ``d<k>`` scored ``values[k]``
    (Token-F1 and ROUGE-L), full body, LLM items, at ``levels[k]`` with ``statuses[k]``."""
    n = len(values)
    return pd.DataFrame(
        {
            "model": ["m"] * n,
            "language": [language] * n,
            "doc_id": [f"d{i}" for i in range(n)],
            "item_id": [f"i{i}" for i in range(n)],
            "rep": [1] * n,
            "context_scope": ["full_body"] * n,
            "level": levels,
            "item_source": ["llm"] * n,
            "token_f1": values,
            "exact_match": [0.0] * n,
            "accuracy": [None] * n,
            "rouge_l": values,
            "semsim": [None] * n,
            "status": statuses,
        }
    )
