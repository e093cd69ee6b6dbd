"""The calls a killed run had in flight (outcome ``lost_at_kill``, from its intent log) are said
once, on their own line naming the killed run, apart from the earlier runs' figure and from this
run's; the study total, labelled as such, holds their estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clcg_pipeline.cli._closing import study_lines
from clcg_pipeline.orchestration._summary import RunSummary, study_total
from clcg_pipeline.storage import IntentLog, LostCalls, start_ledger
from clcg_pipeline_tests.storage.test_spend_view import PARTITION, _rows, _write

ANSWERED_AGAIN, NEVER_ANSWERED = "d" * 64, "e" * 64
IN_FLIGHT = "in flight when run run-killed was killed"


def _killed_with_calls_in_flight(data: Path) -> None:
    """run-killed paid 2 calls on record, then died (kill -9) with 2 more sent: the rerun
    (run-here) was answered one of them again ($0.125), the other is not cached anywhere."""
    _write(data, "calls", PARTITION, _rows("k", 2, run="run-killed", cost=0.04))
    cache = data / "cache" / "calls"
    intents = IntentLog(cache)
    for call_id in (ANSWERED_AGAIN, NEVER_ANSWERED):
        intents.sent(call_id, "m", "run-killed", "en|m", 0.0)
    intents.close()  # its calls are still open: the log stays, unlocked (the process is gone)
    folder = cache / ANSWERED_AGAIN[:2]
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"call_id": ANSWERED_AGAIN, "model_id": "m", "cost_usd": 0.125, "input_tokens": 10}
    (folder / f"{ANSWERED_AGAIN}.json").write_text(json.dumps({**entry, "paid_run": "run-here"}))


def _closing(summary: RunSummary) -> list[str]:
    return study_lines(
        summary.study_paid_usd, summary.unsaid_by_model, summary.unsaid_runs, [], summary.lost_at_kill
    )


def test_calls_in_flight_at_a_kill_are_said_once_and_apart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    start_ledger(str(data))
    _killed_with_calls_in_flight(data)
    summary = RunSummary()
    summary.run_ids.add("run-here")
    study_total(summary, str(data))
    # The killed run's own line holds what it had in flight, priced from the rerun's answer ...
    assert summary.lost_at_kill == (
        LostCalls(run="run-killed", calls=2, usd=pytest.approx(0.125), from_answer=1, unknown=1),
    )
    # ... and the earlier runs' figure only what its record holds as answered and paid.
    assert summary.unsaid_by_model == {"m": (2, pytest.approx(0.08))} and summary.unsaid_runs == 1
    # The study total holds everything: the rerun's answer, the killed run's paid and lost calls.
    assert summary.study_paid_usd == pytest.approx(0.125 + 0.08 + 0.125)
    lines = _closing(summary)
    said = [line for line in lines if IN_FLIGHT in line]
    assert said == [
        "2 calls were in flight when run run-killed was killed: the provider may have billed them "
        "(estimated $0.1250 from the rerun's answers; 1 at unknown cost; in the study total, not in "
        "this run's figure; said once)"
    ]
    assert lines[-1].startswith("study total: $0.3300 paid for model calls in this data folder")
    # The next closing line does not say them again; the study total still holds them.
    later = RunSummary()
    later.run_ids.add("run-later")
    study_total(later, str(data))
    assert later.lost_at_kill == () and later.unsaid_by_model == {}
    assert [line for line in _closing(later) if "in flight" in line] == []
    assert later.study_paid_usd == pytest.approx(0.33)


def test_a_ledger_started_after_a_kill_holds_its_calls_in_flight_as_said_before(tmp_path: Path) -> None:
    """A folder with no ledger yet: what was paid before it is not news, lost calls included
    (as the earlier runs' payments are: ``storage._run_spend``'s start of the ledger)."""
    data = tmp_path / "data"
    _killed_with_calls_in_flight(data)
    start_ledger(str(data))
    summary = RunSummary()
    summary.run_ids.add("run-here")
    study_total(summary, str(data))
    assert summary.lost_at_kill == () and summary.study_paid_usd == pytest.approx(0.33)
