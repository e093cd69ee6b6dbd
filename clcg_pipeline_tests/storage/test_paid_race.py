"""Two writers of one partition, racing, both found a killed run's payment in the cache: the
table records it once, by the killed run (the race is injected as in test_concurrent_writes)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from upath import UPath

from clcg_pipeline.storage import read_frame
from clcg_pipeline_tests.storage.test_concurrent_writes import ASSET, calls, race_two_writers

PAID_AT = pd.Timestamp("2026-12-01 10:00", tz="UTC")


def _found_cached() -> pd.DataFrame:
    """Calls x and y, both answered from the cache; the killed run paid for x and recorded nothing."""
    return calls(paid="none").assign(
        paid_run=["killed-run", None], paid_host=["host-k", None], paid_at=[PAID_AT, None]
    )


def test_two_writers_racing_record_a_killed_runs_payment_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = str(tmp_path / "data")
    race_two_writers(monkeypatch, base, _found_cached(), _found_cached())
    table = read_frame(UPath(base) / ASSET / "language=en" / "data.parquet")
    paid = table[~table["cached"].astype(bool)]
    assert paid["call_id"].tolist() == ["x"]
    assert paid[["paid_run", "paid_host"]].values.tolist() == [["killed-run", "host-k"]]
    assert paid["paid_at"].tolist() == [PAID_AT]
    assert table.loc[table["call_id"] == "y", "paid_run"].isna().all()
