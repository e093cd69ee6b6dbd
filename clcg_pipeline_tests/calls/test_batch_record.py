"""Batch mode keeps one record of what was paid (issue 33): a collected answer is cached before
its spend is settled, and a batch whose submitter died is settled once by the run that collects
it (its reservations' charge at death replaced, not added to)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, SpendLedger, bind, run_batch
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import coord_root
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import make_request, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")

# A run that submits its batch, with the study budget reserved in the ledger, and dies (kill -9
# has no handler either) while the batch is pending.
_DIES_WHILE_PENDING = """
import os, sys
from clcg_pipeline.calls import CallOptions, run_batch
from clcg_pipeline.calls._batch._base import _BatchRun
from clcg_pipeline_tests.calls.conftest import make_request, spec_for
url, cache_dir = sys.argv[1:3]
_BatchRun.wait = lambda *args: os._exit(9)
requests = [make_request(m, tag=f"died{i}") for i, m in enumerate(["", "", "[[fault:500x9]]"])]
run_batch(spec_for("openai", url), requests, CallOptions(cache_dir=cache_dir, study_budget_usd=100.0))
"""


@pytest.fixture(autouse=True)
def _file_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ledger in files under the cache (``<cache>/_coord``), whatever the environment says."""
    monkeypatch.delenv("CLCG_COORD_URL", raising=False)
    monkeypatch.delenv("CLCG_COORD_DIR", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))


def _ledger(cache_dir: Path) -> SpendLedger:
    root = coord_root(str(cache_dir))
    assert root is not None
    return SpendLedger(root)


def test_a_collected_answer_is_cached_before_its_spend_is_settled(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_for("anthropic", server.url)
    requests = [make_request(tag=f"order{i}") for i in range(3)]
    options = CallOptions(cache_dir=str(tmp_path), batch_poll_s=0.01)

    def dies(*args: object, **kwargs: object) -> None:
        raise RuntimeError("killed while settling")

    with monkeypatch.context() as patch:  # the process dies at its first settle
        patch.setattr(SpendLedger, "settle", dies)
        with pytest.raises(RuntimeError, match="killed while settling"):
            run_batch(spec, requests, options)
    first = bind(spec, requests)[0].call_id
    # Settled first (before), the answer was lost with the settle and collected, settled again.
    assert CallCache(str(tmp_path)).get(first) is not None
    rerun = run_batch(spec, requests, options)
    assert [r.outcome for r in rerun] == ["ok"] * 3 and rerun[0].cached and not rerun[1].cached
    assert server.state.batch_creates == 1  # collected from the pending record, not resubmitted
    # The rerun settles only what it collected: the cached answer is not counted again.
    assert _ledger(tmp_path).totals()[0] == pytest.approx(rerun[1].cost_usd + rerun[2].cost_usd)


def test_a_batch_whose_submitter_died_is_settled_once(server: FakeServer, tmp_path: Path) -> None:
    server.set_faults(Faults(batch_polls=10_000))
    dead = subprocess.run(
        [sys.executable, "-c", _DIES_WHILE_PENDING, server.url, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dead.returncode == 9, dead.stderr[-2000:]
    [batch_id] = server.state.batches
    ledger = _ledger(tmp_path)
    assert ledger.charged_at_death() > 0  # its reservations, charged at its death
    server.state.batches[batch_id]["polls_left"] = 0  # the provider finishes it meanwhile
    requests = [make_request(m, tag=f"died{i}") for i, m in enumerate(["", "", "[[fault:500x9]]"])]
    options = CallOptions(cache_dir=str(tmp_path), batch_poll_s=0.01, study_budget_usd=100.0)
    results = run_batch(spec_for("openai", server.url), requests, options)
    assert [r.outcome for r in results] == ["ok", "ok", "error"] and server.state.batch_creates == 1
    # Each answer's cost replaces its reservation's charge (before: both were counted), and the
    # failed request, which cost nothing, gives its reservation back.
    assert ledger.totals() == (pytest.approx(sum(r.cost_usd for r in results)), 0.0)
    assert ledger.charged_at_death() == 0.0
