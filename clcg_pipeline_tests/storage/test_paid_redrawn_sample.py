"""An unpartitioned calls table recomputed on a redrawn sample keeps every payment it recorded.

``judge_calls`` (and the keypoint writer's, the item generator's, the task bank writers')
is one table for the whole study: the asset is recomputed whole when its sample is redrawn
(a model added), and its output holds the new sample's calls only. The calls of the pairs the
new sample left out were paid: the IO manager keeps them in the table, as they were, so the
spend does not call them "not yet recorded in a partition" (issue 33). A language x model
partition's table is still the partition's calls, as written (the analysis reads some).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clcg_pipeline.storage import read_frame
from clcg_pipeline.storage._paid import call_spend
from clcg_pipeline_tests.storage.conftest import write_output


def _calls(*rows: tuple[str, bool, str]) -> pd.DataFrame:
    """Judge calls (id, cached, outcome) of one judge."""
    return pd.DataFrame(
        {
            "call_id": [r[0] for r in rows],
            "model": ["judge-a"] * len(rows),
            "cached": [r[1] for r in rows],
            "cost_usd": [0.01] * len(rows),
            "input_tokens": [100] * len(rows),
            "output_tokens": [10] * len(rows),
            "latency_s": [0.5] * len(rows),
            "attempts": [1] * len(rows),
            "outcome": [r[2] for r in rows],
            "error": [None] * len(rows),
            "judge": ["judge-a"] * len(rows),
        }
    ).assign(
        provider="offline", doc_id="d1", language="sw", context_scope="paragraph", rep=0, prompt_version="v1"
    )


def _write(base: Path, asset: str, frame: pd.DataFrame, run_id: str, partition: str | None = None) -> None:
    write_output(base, asset, frame, run_id, partition=partition)


def test_a_redrawn_sample_keeps_the_payments_of_the_calls_it_left_out(tmp_path: Path) -> None:
    # The first sample: a and b paid, c stopped by the budget (never made, not paid).
    _write(
        tmp_path,
        "judge_calls",
        _calls(("a", False, "ok"), ("b", False, "ok"), ("c", False, "skipped_budget")),
        "run-1",
    )
    # The redrawn sample keeps b (found in the cache now) and adds d; a and c are left out.
    _write(tmp_path, "judge_calls", _calls(("b", True, "ok"), ("d", False, "ok")), "run-2")
    stored = read_frame(tmp_path / "judge_calls" / "data.parquet")
    paid = stored[~stored["cached"].astype(bool)].set_index("call_id")
    assert sorted(paid.index) == ["a", "b", "d"]  # c was never paid: not kept, not "unfinished"
    assert paid.loc["a", "paid_run"] == "run-1" and paid.loc["b", "paid_run"] == "run-1"
    assert paid.loc["d", "paid_run"] == "run-2"
    rows = call_spend(tmp_path, tables=("judge_calls",))
    assert rows["paid"].sum() == 3 and rows["paid_usd"].sum() == 0.03
    # Written a third time on the same sample: the same record, nothing counted twice.
    _write(tmp_path, "judge_calls", _calls(("b", True, "ok"), ("d", True, "ok")), "run-3")
    again = read_frame(tmp_path / "judge_calls" / "data.parquet")
    assert sorted(again.loc[~again["cached"].astype(bool), "call_id"]) == ["a", "b", "d"]
    assert len(again) == 3


def test_judges_switched_off_keep_what_they_paid(tmp_path: Path) -> None:
    _write(tmp_path, "judge_calls", _calls(("a", False, "ok")), "run-1")
    _write(tmp_path, "judge_calls", _calls().iloc[0:0], "run-2")  # judging disabled: no calls now
    assert read_frame(tmp_path / "judge_calls" / "data.parquet")["call_id"].tolist() == ["a"]


def test_a_language_x_model_partition_holds_its_calls_as_written(tmp_path: Path) -> None:
    _write(tmp_path, "probe_calls", _calls(("a", False, "ok")), "run-1", partition="en")
    _write(tmp_path, "probe_calls", _calls(("b", False, "ok")), "run-2", partition="en")
    (path,) = (tmp_path / "probe_calls").rglob("data.parquet")
    stored = read_frame(path)
    assert stored["call_id"].tolist() == ["b"]
