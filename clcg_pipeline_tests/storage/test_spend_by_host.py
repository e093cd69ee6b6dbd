"""The spend view says which host paid, and counts a payment recorded by two tables once."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.storage import build_catalog, default_catalog_path, query, spend
from clcg_pipeline.storage._paid import UNKNOWN_HOST
from clcg_pipeline_tests.storage.test_spend_view import _rows, _write

EN, PT = {"language": "en", "model": "m"}, {"language": "pt", "model": "m"}


def test_the_spend_view_reports_spend_by_host(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _write(data, "calls", EN, _rows("a", 3, paid_host="host-a"))
    _write(data, "calls", PT, _rows("b", 2, run="run-b", cost=0.05, paid_host="host-b"))
    _write(data, "task_calls", EN, _rows("t", 1, cost=0.1))  # written before hosts were kept
    found = spend(data)
    assert found.by_host.keys() == {"host-a", "host-b", UNKNOWN_HOST}
    assert found.by_host["host-a"] == (3, pytest.approx(0.03))
    assert found.by_host["host-b"] == (2, pytest.approx(0.1))
    assert found.by_host[UNKNOWN_HOST] == (1, pytest.approx(0.1))
    build_catalog(data)
    by_host = query(
        default_catalog_path(data),
        "SELECT host, sum(paid_usd) AS usd FROM call_spend WHERE paid GROUP BY host ORDER BY host",
        data_dir=data,
    )
    assert by_host["host"].tolist()[:2] == ["host-a", "host-b"] and pd.isna(by_host["host"].iloc[2])
    assert by_host["usd"].tolist() == pytest.approx([0.03, 0.1, 0.1])


def test_one_payment_recorded_by_two_tables_is_paid_once(tmp_path: Path) -> None:
    """Two writers (two partitions) both recorded what one killed run paid: the bill is one call."""
    data = tmp_path / "data"
    killed = {"run": "killed-run", "paid_host": "host-a"}
    _write(data, "calls", EN, pd.concat([_rows("k", 1, **killed), _rows("e", 1)]))
    _write(data, "calls", PT, _rows("k", 1, **killed))
    found = spend(data)
    assert found.paid_calls == 2 and found.paid_usd == pytest.approx(0.02)
    assert found.by_host == {"host-a": (1, pytest.approx(0.01)), UNKNOWN_HOST: (1, pytest.approx(0.01))}
