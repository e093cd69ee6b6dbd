"""One record of what was paid: the answer is cached before its spend is settled, and what a
dead process held is charged, not dropped (issue 33)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import WAIT, SpendLedger, coord_root
from clcg_pipeline.calls._persist import Persister
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

CALL_ID = "ef" * 32
ENTRY = {"output": "an answer", "cost_usd": 0.002}

# A process that reserves, is answered, writes the answer and dies (kill -9 has no handler
# either) before its spend is settled.
_DIES_BEFORE_SETTLING = """
import asyncio, os, sys
from pathlib import Path
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import SpendLedger
from clcg_pipeline.calls._persist import Persister
cache_dir, root, call_id = sys.argv[1:4]
ledger = SpendLedger(Path(root))
rid = ledger.reserve(0.01, 1.0)
ledger.settle_many = lambda lines: os._exit(9)
entry = {"output": "an answer", "cost_usd": 0.002}
asyncio.run(Persister(CallCache(cache_dir), ledger).write(call_id, entry, (rid, 0.002, "m", call_id)))
"""


class _RefusingLedger(SpendLedger):
    def settle_many(self, lines: Sequence[tuple[str | None, float, str, str]]) -> None:
        raise RuntimeError("the ledger is unreachable")


def test_an_answer_is_cached_even_when_its_settle_fails(tmp_path: Path) -> None:
    cache = CallCache(str(tmp_path / "cache"))
    persister = Persister(cache, _RefusingLedger(tmp_path / "coord"))
    with pytest.raises(RuntimeError, match="unreachable"):
        asyncio.run(persister.write(CALL_ID, ENTRY, (None, 0.002, "m", CALL_ID)))
    # Settled first (before), the answer was lost with the settle: paid, then paid again.
    assert cache.get(CALL_ID) is not None


def test_a_failed_cache_write_still_settles_the_spend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: CallCache, entries: dict[str, dict[str, object]]) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(CallCache, "put_many", full)
    ledger = SpendLedger(tmp_path / "coord")
    with pytest.raises(OSError, match="disk full"):
        asyncio.run(
            Persister(CallCache(str(tmp_path / "cache")), ledger).write(
                CALL_ID, ENTRY, (None, 0.002, "m", CALL_ID)
            )
        )
    assert ledger.totals() == (pytest.approx(0.002), 0.0)


def test_a_process_killed_before_settling_leaves_the_answer_cached_and_its_reservation_charged(
    tmp_path: Path,
) -> None:
    cache_dir, root = tmp_path / "cache", tmp_path / "coord"
    dead = subprocess.run(
        [sys.executable, "-c", _DIES_BEFORE_SETTLING, str(cache_dir), str(root), CALL_ID],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dead.returncode == 9, dead.stderr
    # The answer is on record: the spend view counts it, a rerun takes it as cached.
    assert CallCache(str(cache_dir)).get(CALL_ID) is not None
    # Its reservation is charged to the budget at its worst case, apart from the answers' costs.
    ledger = SpendLedger(root)
    assert ledger.totals() == (0.0, 0.0)
    assert ledger.charged_at_death() == pytest.approx(0.01)
    assert ledger.reserve(0.995, 1.0) is None  # 0.01 + 0.995 > 1.0: refused for good
    assert ledger.reserve(0.99, 1.0) not in (None, WAIT)


def test_a_late_settle_replaces_the_charge_at_death(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    line = {"op": "reserve", "id": "y", "usd": 0.5, "host": "another-host", "pid": 1, "t": time.time() - 7200}
    with open(ledger.path, "a") as handle:  # another host's reservation, older than its TTL
        handle.write(json.dumps(line) + "\n")
    assert ledger.charged_at_death() == 0.5
    ledger.settle("y", 0.125)  # its call outlived the TTL and was answered after all
    assert ledger.totals() == (0.125, 0.0) and ledger.charged_at_death() == 0.0


@pytest.mark.usefixtures("fake_key")
def test_a_rerun_takes_an_answer_whose_settle_failed_from_the_cache(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_for("openai", server.url, timeout_s=30.0)  # no retry on a busy machine
    request = make_request(tag="settle-failed")
    options = CallOptions(cache_dir=str(tmp_path), policy=FAST)
    with monkeypatch.context() as patch:
        patch.setattr(SpendLedger, "settle_many", _RefusingLedger.settle_many)
        with pytest.raises(RuntimeError, match="unreachable"):
            run_requests(spec, [request], options)
    sent = sum(server.state.requests.values())
    [rerun] = run_requests(spec, [request], options)
    assert rerun.outcome == "ok" and rerun.cached  # recorded as cached, not paid again
    assert sum(server.state.requests.values()) == sent  # the rerun sent nothing
    root = coord_root(str(tmp_path))
    assert root is not None and SpendLedger(root).totals()[0] == 0.0  # the rerun paid nothing
    assert os.path.exists(root / "spend.jsonl")
