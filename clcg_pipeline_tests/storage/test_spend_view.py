"""One spend view over the five calls tables: ``storage.spend``, the catalog's ``call_spend``
view and ``clcg query --named call_costs`` say the same paid total, by model and step."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls._judge import CALL_COLUMNS
from clcg_pipeline.storage import (
    build_catalog,
    default_catalog_path,
    partition_dir,
    query,
    run_named_query,
    spend,
    write_frame,
)

PAID_AT = pd.Timestamp("2026-12-01 10:00", tz="UTC")
PARTITION = {"language": "en", "model": "m"}


def _rows(
    prefix: str, n: int, *, model: str = "m", run: str = "run-a", cost: float = 0.01, **values: object
) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            "call_id": [f"{prefix}{i}" for i in range(n)],
            "model": model,
            "provider": "openai_compatible",
            "doc_id": "d",
            "language": "en",
            "context_scope": "full",
            "rep": 0,
            "prompt_version": "v1",
            "input_tokens": 100,
            "output_tokens": 10,
            "cost_usd": cost,
            "latency_s": 0.1,
            "attempts": 1,
            "outcome": "ok",
            "error": None,
            "cached": False,
            "paid_run": run,
            "paid_at": PAID_AT,
        }
    )
    return frame.assign(**values)


def _write(data: Path, table: str, partition: dict[str, str] | None, frame: pd.DataFrame) -> None:
    write_frame(partition_dir(data, table, partition) / "data.parquet", frame)


def _study(data: Path) -> float:
    """A data folder with every kind of calls table; returns what was paid in all."""
    _write(
        data,
        "calls",
        PARTITION,
        pd.concat(
            [
                _rows("r", 3),  # paid
                _rows("c", 2, cached=True, paid_run=None),  # found in the cache: free
                _rows("s", 2, cost=0.0, outcome="skipped_budget", error="StudyBudgetExceeded"),
            ]
        ),
    )
    _write(data, "task_calls", PARTITION, _rows("t", 4, cost=0.1))
    _write(data, "task_judge_calls", PARTITION, _rows("j", 2, model="judge", cost=0.02))
    _write(data, "judge_calls", None, _rows("e", 1, model="judge", cost=0.03))
    _write(data, "keypoint_calls", None, pd.DataFrame(columns=list(CALL_COLUMNS)))  # no keypoints
    return 3 * 0.01 + 4 * 0.1 + 2 * 0.02 + 0.03


def test_call_costs_counts_every_calls_table_by_model_and_step(tmp_path: Path) -> None:
    data = tmp_path / "data"
    paid = _study(data)
    found = spend(data)
    assert found.paid_usd == pytest.approx(paid) and found.paid_calls == 10
    assert found.by_step == {"responses": 3, "granularity tasks": 4, "judges": 3}
    assert found.skipped_budget == {"study": 2}

    build_catalog(data)
    catalog = default_catalog_path(data)
    costs = run_named_query(catalog, "call_costs", {}, data_dir=data)
    assert float(costs["paid_usd"].sum()) == pytest.approx(paid)
    assert set(costs["step"]) == {"responses", "granularity tasks", "judges"}
    by_step = costs.groupby(["model", "step"])["paid_calls"].sum().to_dict()
    assert by_step == {("m", "responses"): 3, ("m", "granularity tasks"): 4, ("judge", "judges"): 3}
    assert costs.loc[costs["outcome"] == "skipped_budget", "paid_calls"].sum() == 0
    # The view names the partition and the run of each call (the analysis tables have none).
    view = query(catalog, "SELECT calls_table, partition, run FROM call_spend WHERE paid", data_dir=data)
    partitions = view.groupby("calls_table")["partition"].first().to_dict()
    assert partitions["calls"] == "en|m" and partitions["task_judge_calls"] == "en|m"
    assert pd.isna(partitions["judge_calls"]) and set(view["run"]) == {"run-a"}
