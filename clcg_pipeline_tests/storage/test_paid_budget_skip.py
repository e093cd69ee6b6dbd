"""A call a budget skipped is no payment, whoever pays for it later (issue 33, two hosts).

The two-host bench's run 7: host a's rerun, stopped by the study budget, wrote partition pt
with three calls ``skipped_budget`` (not cached, $0). Host c then paid them for partition en
and wrote pt again, finding them cached. The write kept "what pt paid" from the stored table,
and took the skipped rows for payments: the record said a's rerun paid them (outcome ok, not
cached, $0), a minute before c did; 91 paid calls against 88 billed ids.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions, ChatRequest, run_requests
from clcg_pipeline.calls._results import call_row
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline.config import ModelSpec
from clcg_pipeline.storage import call_spend, partition_dir, spend
from clcg_pipeline.storage._files import update_frame
from clcg_pipeline.storage._paid import keep_paid_record
from clcg_pipeline_tests.calls.conftest import FAKE_KEY, FAKE_KEY_ENV, FAST, make_request, spec_for
from clcg_pipeline_tests.conftest import fake_provider_bill


def _write_partition(
    data: Path,
    spec: ModelSpec,
    requests: list[ChatRequest],
    language: str,
    run: str,
    budget_usd: float | None = None,
) -> pd.DataFrame:
    """``run`` makes ``language``'s calls and writes its calls table as the IO manager does."""
    key = f"{language}|{spec.id}"
    cache_dir = str(data / "cache" / "calls")
    options = CallOptions(cache_dir=cache_dir, policy=FAST, origin=f"/{key}", budget_usd=budget_usd)
    results = run_requests(spec, requests, options)
    rows = [call_row(spec, r, res, language=language) for r, res in zip(requests, results, strict=True)]
    frame = pd.DataFrame(rows)
    path = partition_dir(data, "calls", {"language": language, "model": spec.id}) / "data.parquet"
    now = pd.Timestamp.now(tz="UTC")
    return update_frame(path, lambda stored: keep_paid_record(frame, stored, run, now))


def test_a_call_skipped_by_the_budget_then_paid_elsewhere_is_paid_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_KEY_ENV, FAKE_KEY)
    bill = fake_provider_bill(monkeypatch)
    data = tmp_path / "data"
    shared = [make_request(tag=f"shared {i}") for i in range(3)]  # asked by both partitions
    with FakeServer() as server:
        spec = spec_for("openai", server.url)
        # Host a's rerun: the budget is spent, pt's calls are skipped (not cached, $0).
        skipped = _write_partition(data, spec, shared, "pt", "run-a", budget_usd=1e-12)
        assert set(skipped["outcome"]) == {"skipped_budget"} and not bill
        # Host c pays them for en, then writes pt again: found in the cache there.
        _write_partition(data, spec, shared, "en", "run-c")
        again = _write_partition(data, spec, shared, "pt", "run-c")
    assert len(bill) == 3
    assert again["cached"].all() and again["paid_run"].isna().all()
    found = spend(data)
    assert found.paid_calls == len(bill) and found.paid_usd == pytest.approx(sum(bill), abs=1e-12)
    paid = call_spend(data).query("paid")
    assert set(paid["run"]) == {"run-c"} and set(paid["partition"]) == {f"en|{spec.id}"}
