"""A process killed between caching an answer and settling its spend: the rerun settles its
charge at the answer's real cost, so the ledger equals the provider's bill (issue 33).

On the file ledger here; on PostgreSQL in ``test_settle_from_cache_postgres.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import SpendLedger, coord_root, open_ledger, settle_from_cache
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline.storage import spend
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for
from clcg_pipeline_tests.conftest import fake_provider_bill

STUDY_BUDGET = 1.0
# Runs one call with a study budget and dies (os._exit: no handler runs, as with kill -9) the
# moment the answer is cached and its spend is about to be settled, on either ledger.
KILLED_AFTER_CACHING = """
import os, sys
from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._coord import SpendLedger
from clcg_pipeline.calls._coord_postgres import PgSpendLedger
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for
from clcg_pipeline_tests.conftest import fake_provider_bill
url, cache, tag, budget = sys.argv[1:5]
for ledger in (SpendLedger, PgSpendLedger):
    ledger.settle_many = lambda self, lines: os._exit(9)
limit = None if budget == "none" else float(budget)
options = CallOptions(cache_dir=cache, policy=FAST, study_budget_usd=limit)
run_requests(spec_for("openai", url, timeout_s=30.0), [make_request(tag=tag)], options)
"""


@dataclass
class Billed:
    """The fake provider, and what it charged for each request it answered."""

    server: FakeServer
    bill: list[float]


@contextmanager
def billed_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Billed]:
    bill = fake_provider_bill(monkeypatch)  # before the server starts
    with FakeServer() as server:
        yield Billed(server, bill)


@pytest.fixture
def billed(fake_key: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Billed]:
    del fake_key
    with billed_server(monkeypatch) as found:
        yield found


def run_killed_after_caching(
    url: str, cache: str, tag: str, env: dict[str, str] | None = None, budget: str = str(STUDY_BUDGET)
) -> None:
    """The call of ``tag``, paid and cached by a process that then dies before settling it."""
    dead = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_CACHING, url, cache, tag, budget],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert dead.returncode == 9, dead.stderr[-2000:]


def cached_entries(cache: str) -> dict[str, dict[str, object]]:
    """Every answer in a local cache, by call id (the runner's, bound to the model)."""
    return {path.stem: json.loads(path.read_text()) for path in Path(cache).glob("??/*.json")}


def rerun_and_bill(billed: Billed, cache: str) -> float:
    """Rerun the killed call with a new one; the provider's bill for both (each paid once)."""
    server = billed.server
    killed, new = make_request(tag="killed"), make_request(tag="new")
    options = CallOptions(cache_dir=cache, policy=FAST, study_budget_usd=STUDY_BUDGET)
    first, second = run_requests(spec_for("openai", server.url, timeout_s=30.0), [killed, new], options)
    assert first.cached and not second.cached  # the killed run's answer is taken, not paid again
    assert dict(server.state.requests) == {first.call_id: 1, second.call_id: 1}  # each paid once
    entry = CallCache(cache).get(first.call_id)
    assert entry is not None and len(billed.bill) == 2
    assert sum(billed.bill) == pytest.approx(float(entry["cost_usd"]) + second.cost_usd, abs=1e-12)
    return sum(billed.bill)


def test_a_rerun_settles_a_killed_calls_charge_at_its_real_cost(billed: Billed, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    run_killed_after_caching(billed.server.url, cache, "killed")
    root = coord_root(cache)
    assert root is not None
    # Before the rerun: the answer is cached, naming its reservation, which names the call.
    [(call_id, entry)] = cached_entries(cache).items()
    with open(root / "spend.jsonl") as handle:
        [reserved] = [line for line in map(json.loads, handle) if line["op"] == "reserve"]
    assert (reserved["id"], reserved["call_id"]) == (entry["reservation"], call_id)
    assert reserved["usd"] > entry["cost_usd"]  # the worst case, above what was billed
    bill = rerun_and_bill(billed, cache)
    ledger = SpendLedger(root)
    # Before: $0 answered for the killed call and its worst case charged for good.
    assert ledger.totals() == (pytest.approx(bill, abs=1e-12), 0.0)
    assert ledger.charged_at_death() == 0.0
    # Reading the figures again (another rerun, another host) settles nothing twice.
    assert settle_from_cache(ledger, CallCache(cache)) == 0.0
    assert ledger.totals()[0] == pytest.approx(bill, abs=1e-12)


def test_reading_the_ledger_settles_a_killed_calls_charge_when_the_rerun_pays_nothing(
    billed: Billed, tmp_path: Path
) -> None:
    """A rerun that finds everything cached opens no coordinator: whoever reads the figures
    (the budget lines, ``study_spent``) settles the charge through ``open_ledger``."""
    cache = str(tmp_path / "cache")
    run_killed_after_caching(billed.server.url, cache, "alone")
    [entry] = cached_entries(cache).values()
    assert billed.bill == [pytest.approx(entry["cost_usd"], abs=1e-12)]
    ledger = open_ledger(cache)
    assert ledger is not None
    assert ledger.totals() == (pytest.approx(sum(billed.bill), abs=1e-12), 0.0)
    assert ledger.charged_at_death() == 0.0


def _dead_reservation(ledger: SpendLedger, rid: str, call_id: str, usd: float) -> None:
    """A reservation of a process that is gone (another host's, past its TTL)."""
    line = {"op": "reserve", "id": rid, "usd": usd, "host": "gone", "pid": 1, "t": time.time() - 7200}
    with open(ledger.path, "a") as handle:
        handle.write(json.dumps({**line, "call_id": call_id}) + "\n")


def test_a_charge_is_settled_once_whoever_settles_it(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    _dead_reservation(ledger, "r1", "c1", 0.5)
    assert ledger.charged_calls() == {"r1": "c1"}
    assert ledger.settle_charged([("r1", 0.125, "m", "c1"), ("r1", 0.125, "m", "c1")]) == 0.125
    # A second sweep (another process) and the dead call's own late settle add nothing.
    assert SpendLedger(tmp_path).settle_charged([("r1", 0.125, "m", "c1")]) == 0.0
    ledger.settle("r1", 0.125, model="m", call_id="c1")
    fresh = SpendLedger(tmp_path)
    assert fresh.totals() == (0.125, 0.0) and fresh.charged_at_death() == 0.0
    assert fresh.charged_calls() == {}


def test_a_charge_whose_answer_is_not_cached_or_is_another_payers_stays_charged(tmp_path: Path) -> None:
    """Died with the request in flight: it may still be billed, so its charge stays. An answer
    cached under another reservation (another process paid after the death) settles nothing."""
    cache = CallCache(str(tmp_path / "cache"))
    ledger = SpendLedger(tmp_path / "coord")
    in_flight, repaid = "ab" * 32, "cd" * 32
    _dead_reservation(ledger, "r-in-flight", in_flight, 0.5)
    _dead_reservation(ledger, "r-dead", repaid, 0.25)
    cache.put(repaid, {"cost_usd": 0.01, "reservation": "r-other", "model_id": "m"})
    assert settle_from_cache(ledger, cache) == 0.0
    assert ledger.charged_at_death() == 0.75


def test_a_call_made_without_a_study_budget_names_no_reservation(
    tmp_path: Path, server: FakeServer, fake_key: str
) -> None:
    """Only a study budget reserves in the ledger; the entry then names none."""
    del fake_key
    request = make_request(tag="no-budget")
    run_requests(
        spec_for("openai", server.url, timeout_s=30.0), [request], CallOptions(cache_dir=str(tmp_path))
    )
    [entry] = cached_entries(str(tmp_path)).values()
    assert "reservation" not in entry
    assert os.path.exists(tmp_path / "_coord" / "spend.jsonl")


def test_a_run_without_a_budget_killed_before_settling_is_in_the_spend_record(
    billed: Billed, tmp_path: Path
) -> None:
    """No budget, so no reservation: the study ledger does not hold the call (docs/DESIGN_NOTES.md),
    but the record of what was paid (the cache entry, with its payer, read by the spend view)
    does, at the bill."""
    data = tmp_path / "data"
    cache = str(data / "cache" / "calls")
    run_killed_after_caching(billed.server.url, cache, "no-budget", budget="none")
    found = spend(data)
    assert len(billed.bill) == 1 and found.paid_calls == 1
    assert found.paid_usd == pytest.approx(sum(billed.bill), abs=1e-12)
