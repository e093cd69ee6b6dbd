"""On PostgreSQL: a process killed between caching an answer and settling its spend is settled
at the answer's real cost, once, even by two hosts at once (issue 33). The file ledger's
cases are in ``test_settle_from_cache.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clcg_pipeline.calls._coord import COORD_ENV, COORD_URL_ENV, coord_backend
from clcg_pipeline.calls._coord_postgres import PgSpendLedger, settings_from_url
from clcg_pipeline_tests.calls.test_settle_from_cache import (
    Billed,
    billed_server,
    cached_entries,
    rerun_and_bill,
    run_killed_after_caching,
)
from clcg_pipeline_tests.pg_server import PgServer, running_postgres, skip_without_postgres

# One "host" settling what the cache holds (as opening the ledger does), once the go file
# appears (so two start together); it prints what it settled.
SWEEPER = """
import sys, time
from pathlib import Path
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import coord_backend, settle_from_cache
from clcg_pipeline.calls._coord_postgres import PgSpendLedger
cache, go = sys.argv[1:3]
backend = coord_backend(cache)
ledger = PgSpendLedger(backend.pg, backend.scope)
print("ready", flush=True)
while not Path(go).exists():
    time.sleep(0.005)
print(settle_from_cache(ledger, CallCache(cache)), flush=True)
"""


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    binaries = skip_without_postgres()
    with running_postgres("clcg_settle", binaries) as server:
        yield server


@pytest.fixture
def billed(fake_key: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Billed]:
    del fake_key
    with billed_server(monkeypatch) as found:
        yield found


@pytest.fixture
def pg_env(pg: PgServer, fake_key: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The coordinator on ``pg`` (no file coordination, no Dagster home), in this process
    and in the returned environment (with the fake provider's key) for the processes a test starts."""
    del fake_key
    monkeypatch.delenv(COORD_ENV, raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv(COORD_URL_ENV, pg.url)
    return dict(os.environ)


def _sweep_on_two_hosts(cache: str, env: dict[str, str], go: Path) -> list[float]:
    """What each of two processes settled, both sweeping the same charge at once."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SWEEPER, cache, str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    settled = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        settled.append(float(out.strip().splitlines()[-1]))
    return settled


def test_a_killed_calls_charge_is_settled_once_at_its_real_cost_on_postgresql(
    pg: PgServer, pg_env: dict[str, str], billed: Billed, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    run_killed_after_caching(billed.server.url, cache, "killed", env=pg_env)
    ledger = PgSpendLedger(settings_from_url(pg.url, "test"), coord_backend(cache).scope)
    [entry] = cached_entries(cache).values()
    assert ledger.totals() == (0.0, 0.0)
    assert ledger.charged_at_death() > float(entry["cost_usd"])  # type: ignore[arg-type]  # its worst case
    # Two hosts settle the charge at once: one of them does, at the answer's cost.
    settled = _sweep_on_two_hosts(cache, pg_env, tmp_path / "go")
    assert sorted(settled) == [0.0, pytest.approx(entry["cost_usd"], abs=1e-12)]
    assert ledger.charged_at_death() == 0.0
    # The rerun takes the answer from the cache and pays for the new call: ledger == bill.
    bill = rerun_and_bill(billed, cache)
    assert ledger.totals() == (pytest.approx(bill, abs=1e-12), 0.0)
    assert ledger.charged_at_death() == 0.0


def test_the_rerun_itself_settles_a_killed_calls_charge_on_postgresql(
    pg: PgServer, pg_env: dict[str, str], billed: Billed, tmp_path: Path
) -> None:
    cache = str(tmp_path / "cache")
    run_killed_after_caching(billed.server.url, cache, "killed", env=pg_env)
    bill = rerun_and_bill(billed, cache)  # opens a coordinator: it settles the charge
    ledger = PgSpendLedger(settings_from_url(pg.url, "test"), coord_backend(cache).scope)
    assert ledger.totals() == (pytest.approx(bill, abs=1e-12), 0.0)
    assert ledger.charged_at_death() == 0.0
