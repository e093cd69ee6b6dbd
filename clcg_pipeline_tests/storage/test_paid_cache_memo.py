"""The closing line's study spend on an object store reads the calls tables and the call
cache's segments once until they change.

A no-op ``clcg run`` on ``s3://`` says the study's spend in its closing line; reading every
segment of the call cache and every calls table for it was most of its time (issue 32). What
one reading found is kept in memos keyed on listings (``storage/_cache_entries.py``,
``storage/_spend_memo.py``): nothing unchanged is read again, a segment or table another
client wrote is, and the rows are the same either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.storage import _paid, call_spend, partition_dir, write_frame
from clcg_pipeline_tests.storage.conftest import paid_calls

PARTITION = {"language": "en", "model": "fake-openai"}
ENTRY = {"model_id": "fake-openai", "paid_host": "h", "created": 1.0e9, "paid_for": "en|fake-openai"}


@pytest.fixture
def segment_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the call cache's segments read through s3fs from now on."""
    import s3fs

    read: list[str] = []
    original: Callable[..., Any] = s3fs.S3FileSystem._cat_file

    async def counted(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if "/_segments/" in path:
            read.append(path)
        return await original(self, path, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_cat_file", counted)
    return read


@pytest.fixture
def table_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One item per DuckDB connection the spend opens to read the calls tables from now on."""
    opened: list[str] = []
    original = _paid.connect_duckdb

    def counted(data_dir: Any) -> Any:
        opened.append(str(data_dir))
        return original(data_dir)

    monkeypatch.setattr(_paid, "connect_duckdb", counted)
    return opened


def _same_rows(rows: pd.DataFrame, expected: pd.DataFrame) -> None:
    """The same rows, in any order (DuckDB keeps none)."""
    order = ["calls_table", "call_id", "run"]
    pd.testing.assert_frame_equal(
        rows.sort_values(order).reset_index(drop=True), expected.sort_values(order).reset_index(drop=True)
    )


def _remembered(data: str) -> pd.DataFrame:
    """The closing line's rows (remembered), checked against the rows read in full."""
    rows = call_spend(data, memo=True)
    _same_rows(rows, call_spend(data))
    return rows


def _paid_usd(rows: pd.DataFrame) -> tuple[int, float]:
    paid = rows[rows["paid"].astype(bool)]
    return len(paid), float(paid["paid_usd"].sum())


def test_an_unchanged_cache_is_not_read_again_and_a_new_segment_is(
    bucket: str, segment_reads: list[str], table_reads: list[str]
) -> None:
    data = f"s3://{bucket}/clcg"
    cache = CallCache(f"{data}/cache/calls")
    cache.put_many({"ee" * 8: {**ENTRY, "cost_usd": 0.25, "paid_run": "run-x"}})
    cache.put_many({"ff" * 8: {**ENTRY, "cost_usd": 0.5, "paid_run": "run-y"}})
    write_frame(
        partition_dir(data, "calls", PARTITION) / "data.parquet", paid_calls(["ee" * 8], 0.25, run="run-x")
    )

    first = call_spend(data, memo=True)
    assert _paid_usd(first) == (2, pytest.approx(0.75))
    assert len(segment_reads) == 2 and len(table_reads) == 1
    segment_reads.clear()
    table_reads.clear()
    _same_rows(call_spend(data, memo=True), first)  # from the memos
    assert segment_reads == [] and table_reads == []

    # Another client pays one more call: the cache is read again, its new segment with it.
    CallCache(f"{data}/cache/calls").put_many({"aa" * 8: {**ENTRY, "cost_usd": 2.0, "paid_run": "run-z"}})
    after = _remembered(data)
    assert _paid_usd(after) == (3, pytest.approx(2.75))
    assert len(segment_reads) >= 3
    cache = after[after["paid"].astype(bool) & (after["calls_table"] == "call cache")]
    assert sorted(cache["run"]) == ["run-y", "run-z"]


def test_a_table_written_by_another_client_is_read(bucket: str, table_reads: list[str]) -> None:
    data = f"s3://{bucket}/clcg"
    CallCache(f"{data}/cache/calls").put_many({"ee" * 8: {**ENTRY, "cost_usd": 0.25, "paid_run": "run-x"}})
    rows = _remembered(data)
    assert list(rows.loc[rows["paid"].astype(bool), "calls_table"]) == ["call cache"]
    # The table now records the call (at its own cost): counted once, as the table says.
    write_frame(
        partition_dir(data, "calls", PARTITION) / "data.parquet", paid_calls(["ee" * 8], 0.3, run="run-x")
    )
    rows = _remembered(data)
    paid = rows[rows["paid"].astype(bool)]
    assert list(paid["calls_table"]) == ["calls"] and _paid_usd(rows) == (1, pytest.approx(0.3))


def test_a_line_that_is_no_entry_is_named_at_every_reading(
    bucket: str, segment_reads: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    import s3fs

    data = f"s3://{bucket}/clcg"
    CallCache(f"{data}/cache/calls").put_many({"ee" * 8: {**ENTRY, "cost_usd": 0.25, "paid_run": "run-x"}})
    broken = f"{bucket}/clcg/cache/calls/_segments/00000000000000000001-broken.jsonl"
    s3fs.S3FileSystem().pipe_file(broken, b"{not json\n")
    assert _paid_usd(call_spend(data, memo=True)) == (1, pytest.approx(0.25))
    assert f"{broken} line 1" in caplog.text
    caplog.clear()
    segment_reads.clear()
    assert _paid_usd(call_spend(data, memo=True)) == (1, pytest.approx(0.25))
    assert segment_reads == [] and f"{broken} line 1" in caplog.text
