"""A partition's calls table written again asking fewer calls keeps the payments it left out.

A partition (``task_judge_calls``, ``task_calls``, ``calls``) asks fewer items after a config
change: its new table holds the calls made now, and the analysis reads that table as the
partition's calls. The calls it no longer makes were paid, with a call cache entry naming
their payer: the IO manager keeps their record beside the table (``LEFT_OUT_FILE``), which
only the spend reads, so ``call_spend`` and ``clcg query --named call_costs`` count them, once,
in their table, never as "not yet recorded in a partition" (issue 33).
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.storage import (
    UNRECORDED_STEP,
    build_catalog,
    call_spend,
    default_catalog_path,
    read_frame,
    run_named_query,
    spend,
)
from clcg_pipeline.storage._paid import LEFT_OUT_FILE
from clcg_pipeline_tests.storage.conftest import write_output
from clcg_pipeline_tests.storage.test_paid_redrawn_sample import _calls as _judge_calls

TABLE = "task_judge_calls"
KEY = dg.MultiPartitionKey({"language": "sw", "model": "judge-a"})
PARTITIONS = dg.MultiPartitionsDefinition(
    {"language": dg.StaticPartitionsDefinition(["sw"]), "model": dg.StaticPartitionsDefinition(["judge-a"])}
)
FOLDER = Path(TABLE, "language=sw", "model=judge-a")
IDS = ("a1" * 8, "b2" * 8, "c3" * 8, "d4" * 8)
A, B, C, D = IDS


def _calls(*rows: tuple[str, bool, str]) -> pd.DataFrame:
    """Judge calls (id, cached, outcome) with every column of the table's contract."""
    return _judge_calls(*rows).assign(template_hash="t1", request_hash="r1", finish_reason="stop")


def _write(base: Path, frame: pd.DataFrame, run_id: str) -> None:
    write_output(base, TABLE, frame, run_id, partition=KEY, partitions=PARTITIONS)


def _cache_entry(base: Path, call_id: str, run_id: str) -> None:
    """The call cache's entry of a paid answer, naming its payer (as ``calls.cache_entry`` writes)."""
    path = base / "cache" / "calls" / call_id[:2] / f"{call_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "call_id": call_id,
        "model_id": "judge-a",
        "outcome": "ok",
        "input_tokens": 100,
        "output_tokens": 10,
        "cost_usd": 0.01,
        "created": 1_780_000_000.0,
        "paid_run": run_id,
        "paid_host": "host-a",
        "paid_for": "sw|judge-a",
    }
    path.write_text(json.dumps(entry), encoding="utf-8")


def _first_write(base: Path) -> None:
    """Three calls paid by run-1 (each with its cache entry), one stopped by the budget."""
    _write(
        base,
        _calls((A, False, "ok"), (B, False, "ok"), (C, False, "ok"), (D, False, "skipped_budget")),
        "run-1",
    )
    for call_id in (A, B, C):
        _cache_entry(base, call_id, "run-1")


def _assert_the_bill(base: Path) -> None:
    """Three calls paid, $0.03, all in their table, none 'not yet recorded in a partition'."""
    rows = call_spend(base)
    assert not (rows["step"] == UNRECORDED_STEP).any()
    paid = rows[rows["paid"].astype(bool)]
    assert sorted(paid["call_id"]) == [A, B, C]
    assert set(paid["calls_table"]) == {TABLE} and set(paid["run"]) == {"run-1"}
    assert set(paid["partition"]) == {"sw|judge-a"}
    found = spend(base)
    assert (found.paid_calls, found.paid_usd) == (3, pytest.approx(0.03, abs=1e-12))
    assert spend(base, tables=(TABLE,), partition={"language": "sw", "model": "judge-a"}).paid_calls == 3


def test_fewer_calls_asked_keep_their_payments_out_of_the_table(tmp_path: Path) -> None:
    _first_write(tmp_path)
    # The config now asks only b (found in the cache): a and c are paid calls no longer made.
    _write(tmp_path, _calls((B, True, "ok")), "run-2")
    stored = read_frame(tmp_path / FOLDER / "data.parquet")
    assert stored["call_id"].tolist() == [B]  # readers see the current calls only
    assert stored["paid_run"].tolist() == ["run-1"]
    _assert_the_bill(tmp_path)
    assert list(tmp_path.glob(f"{TABLE}/**/*.parquet")) == [tmp_path / FOLDER / "data.parquet"]
    # clcg query --named call_costs reads the catalog's view: the same bill, nothing unrecorded.
    build_catalog(tmp_path)
    costs = run_named_query(default_catalog_path(tmp_path), "call_costs", {})
    assert UNRECORDED_STEP not in set(costs["step"])
    assert int(costs["paid_calls"].sum()) == 3 and float(costs["paid_usd"].sum()) == pytest.approx(0.03)
    assert build_catalog(tmp_path)[TABLE] == 1  # the catalog's table: the current call alone


def test_a_call_asked_again_takes_its_payment_back_once(tmp_path: Path) -> None:
    _first_write(tmp_path)
    _write(tmp_path, _calls((B, True, "ok")), "run-2")
    # The config asks a again: found in the cache, it is the table's paid call of run-1 again.
    _write(tmp_path, _calls((A, True, "ok"), (B, True, "ok")), "run-3")
    stored = read_frame(tmp_path / FOLDER / "data.parquet").set_index("call_id")
    assert not stored.loc[A, "cached"] and stored.loc[A, "paid_run"] == "run-1"
    _assert_the_bill(tmp_path)
    # Everything asked again: the record beside the table is gone, the bill the same.
    _write(tmp_path, _calls((A, True, "ok"), (B, True, "ok"), (C, True, "ok")), "run-4")
    assert not (tmp_path / FOLDER / LEFT_OUT_FILE).exists()
    _assert_the_bill(tmp_path)


def test_nothing_asked_now_keeps_every_payment(tmp_path: Path) -> None:
    _first_write(tmp_path)
    _write(tmp_path, _calls().iloc[0:0], "run-2")
    assert read_frame(tmp_path / FOLDER / "data.parquet").empty
    _assert_the_bill(tmp_path)
