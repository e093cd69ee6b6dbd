"""A ``clcg run`` killed with kill -9 while its own stream sends calls ahead: what it paid is
recorded once, as paid, by the rerun's partitions, and every figure of spend equals the bill."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
from starlette.responses import JSONResponse

from clcg_pipeline.calls import fake_server
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.orchestration import run_study
from clcg_pipeline.storage import CALL_TABLE_STEPS, LOST_OUTCOME, call_spend, spend
from clcg_pipeline_tests.conftest import FAKE_PRICE_IN, FAKE_PRICE_OUT, add_fake_model

pytestmark = pytest.mark.slow

KEY_ENV = "CLCG_KILLED_AHEAD_FAKE_KEY"
LANGUAGES = ["en"]
ANSWERED = 4  # calls the killed run has been answered (and cached) before the kill


class _Provider:
    """The fake provider's bill (call id, USD per answer), and a gate: once ``ANSWERED`` requests
    were let in, later ones wait and then fail unbilled, so no answer is in flight at the kill
    (an answer cut off in flight is the provider's charge the client never saw)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.charges: list[tuple[str, float]] = []
        self.gated = True
        self.admitted = 0
        self.gated_ids: set[str] = set()  # the killed run's requests held at the gate
        original = fake_server.App.openai

        async def billed(app: object, request: object) -> object:
            self.admitted += 1
            if self.gated and self.admitted > ANSWERED:
                self.gated_ids.add(request.headers.get(fake_server.CALL_ID_HEADER, "-"))  # type: ignore[attr-defined]
                while self.gated:
                    await asyncio.sleep(0.05)
                return JSONResponse({"error": "gated"}, status_code=503)
            response = await original(app, request)
            if response.status_code == 200:  # type: ignore[attr-defined]
                body = json.loads(response.body)  # type: ignore[attr-defined]
                tokens_in, tokens_out = body["usage"]["prompt_tokens"], body["usage"]["completion_tokens"]
                usd = (tokens_in * FAKE_PRICE_IN + tokens_out * FAKE_PRICE_OUT) / 1e6
                self.charges.append((request.headers.get(fake_server.CALL_ID_HEADER, "-"), usd))  # type: ignore[attr-defined]
            return response

        monkeypatch.setattr(fake_server.App, "openai", billed)


def _cents(usd: float) -> int:
    return round(usd * 100)


def _answered(data: Path, sent: set[str]) -> set[str]:
    """The requests the server received whose answer the sender has cached."""
    return {path.stem for path in (data / "cache" / "calls").rglob("*.json")} & sent


def _paid_in_tables(data: Path) -> pd.DataFrame:
    """Every paid row of the five calls tables, read from their files (not through the view)."""
    frames = [
        pd.read_parquet(path) for table in CALL_TABLE_STEPS for path in (data / table).rglob("*.parquet")
    ]
    rows = pd.concat(frames, ignore_index=True)
    made = ~rows["outcome"].isin(["skipped_budget", "batch_pending"])
    return rows[~rows["cached"].astype(bool) & made]


def test_a_run_killed_after_its_stream_paid_keeps_the_record_of_payment(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, data = tmp_path / "home", tmp_path / "data"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv(KEY_ENV, "fake-killed-ahead-not-real")
    provider = _Provider(monkeypatch)
    command = [sys.executable, "-m", "clcg_pipeline.cli", "run", "--config", str(demo_config_dir)]
    command += ["--data", str(data), "--models", "fake-gpt", "--languages", ",".join(LANGUAGES)]
    with FakeServer(Faults(latency_s=0.3)) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=2, timeout_s=5.0)
        log = tmp_path / "killed.log"
        with log.open("w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ))
        try:
            deadline = time.monotonic() + 240
            while len(_answered(data, {cid for cid, _ in provider.charges})) < ANSWERED:
                assert process.poll() is None, log.read_text()[-3000:]
                assert time.monotonic() < deadline
                time.sleep(0.05)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)
        # Killed after paying, before any partition recorded a call.
        assert not (data / "calls").exists() and len(provider.charges) == ANSWERED
        killed_bill = sum(usd for _, usd in provider.charges)
        server.set_faults(Faults(latency_s=0.0))
        provider.gated = False
        config, models = str(demo_config_dir), ["fake-gpt"]
        rerun = run_study(config_dir=config, data_dir=str(data), models=models, languages=LANGUAGES)
        first = _paid_in_tables(data).query("model == 'fake-gpt'")
        # A later rerun of the partitions finds every call cached and keeps the record as it was.
        run_study(config_dir=config, data_dir=str(data), models=models, languages=LANGUAGES, force=True)
    billed = [cid for cid, _ in provider.charges]
    assert len(billed) == len(set(billed)), "a call was paid twice"
    paid = _paid_in_tables(data)
    hosted = paid[paid["model"] == "fake-gpt"]
    kept, order = ["call_id", "cost_usd", "paid_run", "paid_at"], ["call_id", "paid_run"]
    pd.testing.assert_frame_equal(
        hosted[kept].sort_values(order).reset_index(drop=True),
        first[kept].sort_values(order).reset_index(drop=True),
    )
    # Each answered request is one paid row (the killed run's included), none recorded twice.
    assert sorted(hosted["call_id"]) == sorted(billed)
    bill = sum(usd for _, usd in provider.charges)
    # The requests the killed run sent into the gate are on record as lost at the kill, once each,
    # at the rerun's usage (storage/_intents.py): a provider billing on arrival billed them; this
    # one's gate did not, so its bill is the spend less them.
    lost = call_spend(data).query(f"outcome == '{LOST_OUTCOME}'")
    assert provider.gated_ids <= set(lost["call_id"]) and lost["call_id"].is_unique
    lost_usd = float(lost["paid_usd"].sum())
    figures = {"spend view": spend(data).paid_usd - lost_usd, "calls tables": float(paid["cost_usd"].sum())}
    assert {name: _cents(usd) for name, usd in figures.items()} == dict.fromkeys(figures, _cents(bill))
    assert figures["spend view"] == pytest.approx(bill)
    # The killed stream's run is left STARTED on the instance (kill -9): the rerun on this host
    # sees its process is gone, says what it paid once, apart from its own figure, and marks it;
    # the calls it had in flight are said on their own line (the provider may have billed them).
    assert rerun.unsaid_by_model["fake-gpt"] == (ANSWERED, pytest.approx(killed_bill))
    (in_flight,) = rerun.lost_at_kill
    assert (in_flight.calls, in_flight.usd) == (len(lost), pytest.approx(lost_usd))
    assert in_flight.run == lost["run"].iloc[0] and in_flight.from_answer == len(lost)
    with dg.DagsterInstance.get() as instance:
        killed = instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert killed == []
