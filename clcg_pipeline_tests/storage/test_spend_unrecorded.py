"""A call paid by a stream or run killed before any calls table recorded it is still spend.

The call cache entry is written, with its payer, when the answer arrives; a calls table
records the call only when its partition is written. A killed stream whose partitions never
run again is in no table, yet the provider billed it: ``storage.spend``, ``clcg plan``'s spend
so far and ``clcg query --named call_costs`` count it, once, and a table that records the call
says what was paid.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline.orchestration import plan_spent
from clcg_pipeline.storage import (
    UNRECORDED_STEP,
    build_catalog,
    call_spend,
    default_catalog_path,
    partition_dir,
    run_named_query,
    spend,
    write_frame,
)
from clcg_pipeline_tests.calls.conftest import FAKE_KEY, FAKE_KEY_ENV, FAST, make_request, spec_for
from clcg_pipeline_tests.conftest import fake_provider_bill
from clcg_pipeline_tests.storage.conftest import paid_calls

PARTITION = {"language": "en", "model": "fake-openai"}


def _killed_stream(data: Path, monkeypatch: pytest.MonkeyPatch, n: int = 3) -> list[float]:
    """``n`` calls answered by the fake provider for a stream sending ``en|fake-openai`` ahead,
    killed before the partition's run: in the cache, with their payer, and in no calls table.
    Returns the provider's bill."""
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    bill = fake_provider_bill(monkeypatch)
    with FakeServer() as server:
        options = CallOptions(
            cache_dir=str(data / "cache" / "calls"), policy=FAST, origin="stream-k/en|fake-openai"
        )
        spec = spec_for("openai", server.url, timeout_s=30.0)  # a timed-out answer is billed, not cached
        results = run_requests(spec, [make_request(tag=str(i)) for i in range(n)], options)
    assert len(bill) == n and all(not r.cached and r.cost_usd > 0 for r in results)
    return bill


def _write_calls(data: Path | str, frame: pd.DataFrame) -> None:
    write_frame(partition_dir(data, "calls", PARTITION) / "data.parquet", frame)


def _named_total(data: Path) -> float:
    build_catalog(data)
    costs = run_named_query(default_catalog_path(data), "call_costs", {})
    return float(costs["paid_usd"].sum())


def test_a_killed_streams_paid_calls_are_spend_equal_to_the_bill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    bill = _killed_stream(data, monkeypatch)
    # An earlier, recorded partition of another model: the view adds to it, not replaces it.
    _write_calls(data, paid_calls(["aa" * 8], 0.25).assign(model="other"))
    found = spend(data)
    assert round(found.paid_usd, 2) == round(sum(bill) + 0.25, 2)
    assert found.paid_usd == pytest.approx(sum(bill) + 0.25, abs=1e-9)
    assert found.paid_calls == len(bill) + 1
    assert found.by_step[UNRECORDED_STEP] == len(bill)
    assert found.by_host  # the payer's host is kept
    rows = call_spend(data)
    stream = rows[rows["step"] == UNRECORDED_STEP]
    assert set(stream["run"]) == {"stream-k"} and set(stream["model"]) == {"fake-openai"}
    assert set(stream["partition"]) == {"en|fake-openai"} and stream["paid"].all()
    # The same figure wherever spend is shown: the named query and the plan's spend so far.
    assert _named_total(data) == pytest.approx(round(sum(bill) + 0.25, 4), abs=1e-4)
    spent = plan_spent(data_dir=str(data))
    total = spent[spent["model"] == "TOTAL"]["paid_usd"].iloc[0]
    assert total == pytest.approx(sum(bill) + 0.25, abs=1e-9)
    assert spent[spent["step"] == UNRECORDED_STEP]["paid_calls"].sum() == len(bill)
    # A copied data folder reads its own cache and says the same.
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    assert spend(copy).paid_usd == pytest.approx(found.paid_usd, abs=1e-12)


def test_a_payment_a_table_records_counts_once_as_the_table_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    bill = _killed_stream(data, monkeypatch, n=2)
    rows = call_spend(data)
    first, second = sorted(rows["call_id"])
    # The partition ran again and recorded the first call (the table's figure is what counts).
    _write_calls(data, paid_calls([first], 0.5, run="stream-k"))
    found = spend(data)
    paid_second = float(rows.loc[rows["call_id"] == second, "paid_usd"].iloc[0])
    assert found.paid_calls == 2
    assert found.paid_usd == pytest.approx(0.5 + paid_second, abs=1e-12)
    assert found.by_table == {"calls": (1, 0.5), "call cache": (1, pytest.approx(paid_second))}
    # Recorded by another run, or found cached by another partition, the answer stays one payment.
    _write_calls(data, pd.concat([paid_calls([first, second], 0.5, run="run-b")]))
    assert spend(data).paid_calls == 2 and spend(data).paid_usd == pytest.approx(1.0)
    _write_calls(data, paid_calls([first, second], 0.5).assign(cached=True, paid_run=None))
    assert spend(data).paid_usd == pytest.approx(sum(bill), abs=1e-12)
    assert _named_total(data) == pytest.approx(round(sum(bill), 4), abs=1e-4)


def test_one_partitions_or_some_tables_spend_leaves_the_cache_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's own summary counts what its tables record; the study's spend counts the cache too."""
    data = tmp_path / "data"
    _killed_stream(data, monkeypatch, n=1)
    _write_calls(data, paid_calls(["bb" * 8], 0.25))
    assert spend(data, partition=PARTITION).paid_usd == pytest.approx(0.25)
    assert spend(data, tables=("calls",)).paid_usd == pytest.approx(0.25)
    assert spend(data).paid_calls == 2


def test_an_unreadable_entry_is_named_and_not_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    cache = CallCache(str(data / "cache" / "calls"))
    cache.put("cc" * 8, {"cost_usd": 0.125, "paid_run": "run-x", "paid_host": "h", "created": 1.0e9})
    broken = data / "cache" / "calls" / "dd" / f"{'dd' * 8}.json"
    broken.parent.mkdir()
    broken.write_text("{not json", encoding="utf-8")
    assert spend(data).paid_usd == pytest.approx(0.125)
    assert str(broken) in caplog.text


def test_on_s3_the_cache_segments_are_read(bucket: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = f"s3://{bucket}/clcg"
    cache = CallCache(f"{data}/cache/calls")
    entry = {"model_id": "fake-openai", "paid_host": "h", "created": 1.0e9, "paid_for": "en|fake-openai"}
    cache.put_many({"ee" * 8: {**entry, "cost_usd": 0.25, "paid_run": "run-x"}})
    cache.put_many({"ff" * 8: {**entry, "cost_usd": 0.5, "paid_run": "run-y"}})
    _write_calls(data, paid_calls(["ee" * 8], 0.25, run="run-x"))
    found = spend(data)
    assert found.paid_calls == 2 and found.paid_usd == pytest.approx(0.75)
    assert found.by_table["call cache"] == (1, pytest.approx(0.5))
