"""What the storage tests of the document's section models share."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.storage import DocumentError, ParquetIOManager, complete_run_request

SOURCE = "run/study_results.json"
# The whole suite's document on a small deterministic panel (analysis/test_suite_golden.py keeps
# it equal to what the producers write today).
GOLDEN = Path(__file__).parents[1] / "analysis" / "golden_suite.json"


@functools.cache
def _golden_results() -> dict[str, Any]:
    # Parsed once per session (200 kB): callers get copies, so no test sees another's edits.
    return json.loads(GOLDEN.read_text(encoding="utf-8"))["results"]


def golden_results(*sections: str) -> dict[str, Any]:
    """A fresh copy of the golden document's ``results``: only ``sections`` where named, else all."""
    results = _golden_results()
    return copy.deepcopy({name: results[name] for name in sections} if sections else results)


def refused(call: Callable[..., Any], document: dict[str, Any]) -> str:
    """The message ``call`` (``validate_document``, a view's reader) refuses ``document`` with."""
    with pytest.raises(DocumentError) as raised:
        call(document, source=SOURCE)
    return str(raised.value)


def write_output(
    base: Path | str,
    asset: str,
    value: Any,
    run_id: str | None = None,
    *,
    partition: str | dg.MultiPartitionKey | None = None,
    partitions: dg.PartitionsDefinition | None = None,
) -> None:
    """``value`` handed to the IO manager on ``base`` as asset ``asset``'s output, as Dagster
    hands it in run ``run_id``: of ``partition`` of ``partitions`` (a static set of ``partition``
    alone where not given), or unpartitioned."""
    if partition is not None and partitions is None:
        partitions = dg.StaticPartitionsDefinition([partition])
    context = dg.build_output_context(
        asset_key=dg.AssetKey(asset), partition_key=partition, asset_partitions_def=partitions, run_id=run_id
    )
    ParquetIOManager(base_path=str(base)).handle_output(context, value)


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


def asked_run(**change: object) -> dict:
    """A complete run's request (``storage.complete_run_request``) with ``change`` applied."""
    asked = {
        "config_dir": "config",
        "versions": {"corpus": "c1", "study": "s1"},
        "models": None,
        "languages": ["en", "pt"],
        "mode": "online",
        "budget_usd": None,
    }
    return complete_run_request(**{**asked, **change})  # type: ignore[arg-type]


def paid_calls(call_ids: list[str], cost: float, run: str = "run-a") -> pd.DataFrame:
    """A calls table of ``call_ids``, each paid ``cost`` by ``run`` (host-a, one fixed time)."""
    return pd.DataFrame(
        {
            "call_id": call_ids,
            "model": "fake-openai",
            "provider": "openai",
            "language": "en",
            "input_tokens": 10,
            "output_tokens": 5,
            "cost_usd": cost,
            "outcome": "ok",
            "error": None,
            "cached": False,
            "paid_run": run,
            "paid_host": "host-a",
            "paid_at": pd.Timestamp("2026-12-01 10:00", tz="UTC"),
        }
    )
