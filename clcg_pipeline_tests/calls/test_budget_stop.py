"""The run's limit is known from the run's config before any op spends, and a budget that
stopped calls is said in one line: which budget, what was spent, the calls left, how to resume."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.calls import (
    RUN_BUDGET_STOP,
    STUDY_BUDGET_STOP,
    Budget,
    CallOptions,
    SpendLedger,
    budget_stop_line,
    configured_limit,
    op_budget,
    study_spent,
)
from clcg_pipeline.calls._coord import coord_backend


def test_the_run_limit_is_the_tightest_any_op_of_the_run_is_configured_with() -> None:
    config = {
        "ops": {
            "item_bank": {"config": {"regenerate": True}},
            "granularity_task_bank": {"config": {"budget_usd": 0.4}},
            "a_graph": {"ops": {"inner": {"config": {"budget_usd": 0.3}}}},
        }
    }
    assert configured_limit(config) == 0.3
    assert configured_limit({}) is None and configured_limit({"ops": {"x": {"config": {}}}}) is None
    # An op given no limit, running first, is bound by the limit another op of the run was given.
    first = op_budget("run-configured", config, None)
    assert first.limit == 0.3
    assert op_budget("run-configured", config, 0.1) is first and first.limit == 0.1
    assert op_budget("run-unlimited", {}, None).limit is None


def _calls(*errors: str | None) -> pd.DataFrame:
    outcomes = ["ok" if error is None else "skipped_budget" for error in errors]
    return pd.DataFrame({"outcome": outcomes, "error": list(errors)})


def test_nothing_is_said_when_no_call_was_stopped(tmp_path: Path) -> None:
    options = CallOptions(cache_dir=str(tmp_path), budget=Budget(1.0), study_budget_usd=1.0)
    assert budget_stop_line("the item generator", _calls(None, None), options) is None
    assert budget_stop_line("the item generator", _calls(), options) is None


def test_the_run_budget_line_says_what_this_run_spent(tmp_path: Path) -> None:
    budget = Budget(0.05)
    budget.spent = 0.0412
    options = CallOptions(cache_dir=str(tmp_path), budget=budget)
    line = budget_stop_line("the item generator", _calls(None, RUN_BUDGET_STOP, RUN_BUDGET_STOP), options)
    assert line == (
        "budget reached: the run budget (--budget $0.0500) stopped 2 of 3 calls of the item "
        "generator: $0.0412 spent by this run, 2 calls left unmade; run `clcg run` again (with a "
        "larger --budget, or none) to resume (paid calls are kept)"
    )


def _study_ledger_with_one_paid_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, SpendLedger]:
    """A call cache in ``tmp_path`` coordinated through local files, and its study ledger (open)
    holding one call paid $0.0275 under a $0.05 study budget."""
    monkeypatch.delenv("CLCG_COORD_URL", raising=False)
    monkeypatch.delenv("CLCG_COORD_DIR", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    cache = str(tmp_path / "cache")
    root = coord_backend(cache).root
    assert root is not None
    root.mkdir(parents=True, exist_ok=True)
    ledger = SpendLedger(root)
    ledger.settle(ledger.reserve(0.03, 0.05), 0.0275)
    return cache, ledger


def test_the_study_budget_line_says_what_the_study_spent_by_its_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, ledger = _study_ledger_with_one_paid_call(tmp_path, monkeypatch)
    ledger.close()
    assert study_spent(cache) == pytest.approx(0.0275)
    options = CallOptions(cache_dir=cache, budget=Budget(None), study_budget_usd=0.05)
    line = budget_stop_line("the level auditor", _calls(STUDY_BUDGET_STOP), options)
    assert line == (
        "budget reached: the study budget (study.yaml budget_usd $0.0500) stopped 1 of 1 calls of "
        "the level auditor: $0.0275 spent by the study in all, 1 calls left unmade; raise budget_usd "
        "in study.yaml and run `clcg run` again to resume (paid calls are kept)"
    )


def test_the_study_budget_line_adds_what_dead_processes_were_charged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget counts a dead process's reservations like spend: the line says them, once,
    so a study stopped partly by them does not show a figure below its limit."""
    cache, ledger = _study_ledger_with_one_paid_call(tmp_path, monkeypatch)
    old = time.time() - 7200  # another host's reservation, older than its TTL: charged at death
    line = {"op": "reserve", "id": "gone", "usd": 0.02, "host": "another-host", "pid": 1, "t": old}
    with open(ledger.path, "a") as handle:
        handle.write(json.dumps(line) + "\n")
    ledger.close()
    options = CallOptions(cache_dir=cache, budget=Budget(None), study_budget_usd=0.05)
    said = budget_stop_line("the level auditor", _calls(None, STUDY_BUDGET_STOP), options)
    assert said is not None
    assert ": $0.0275 spent by the study in all, plus $0.0200 reserved by processes that died " in said
    assert said.count("$0.0200") == 1 and said.endswith("(paid calls are kept)")
