"""``clcg run``'s closing lines: the provider's paid calls counted apart from the offline
models' calls, what earlier runs paid unsaid said once and apart, and the study total on every
run, a rerun with nothing to do included."""

from __future__ import annotations

from pathlib import Path

import pytest

from clcg_pipeline.cli._closing import closing_line, lost_line, study_lines, unsaid_line
from clcg_pipeline.orchestration import RunSummary
from clcg_pipeline.storage import IntentLog, LostCalls, start_ledger
from clcg_pipeline_tests.storage.test_spend_view import PARTITION, _rows, _write

OFFLINE = ["lexical-reader", "offline-judge-a", "offline-judge-b", "offline-writer"]


def _summary() -> RunSummary:
    """Two runs: 4 hosted answers and 2 hosted task calls ($0.06), and 30 offline judges' calls."""
    summary = RunSummary(runs=2, skipped=3)
    summary.count("responses", 4, 0.04, "fake-gpt")
    summary.count("tasks", 2, 0.02, "fake-gpt")
    summary.count("judges", 30, 0.0, "offline-judge-a")
    return summary


def test_the_closing_line_counts_the_providers_calls_and_says_the_offline_ones_apart() -> None:
    line = closing_line(_summary(), OFFLINE)
    assert line == (
        "2 Dagster runs, 3 partitions already up to date; 6 new paid model calls (4 responses, "
        "2 granularity tasks, 0 judges and writers) costing $0.0600 (paid by this run); "
        "30 offline model calls besides (run here: no provider request)"
    )
    # With no offline model configured every call is a paid one, and nothing is said apart.
    everything = closing_line(_summary(), [])
    assert "36 new paid model calls" in everything and "offline" not in everything
    # A study of offline models only (the demo) paid nothing: one phrase says so.
    only_offline = RunSummary(runs=4, skipped=0)
    only_offline.count("judges", 30, 0.0, "offline-judge-a")
    assert closing_line(only_offline, OFFLINE) == (
        "4 Dagster runs, 0 partitions already up to date; no paid model call; "
        "30 offline model calls (run here: no provider request)"
    )


def test_earlier_runs_unsaid_spend_is_its_own_line_and_the_study_total_is_labelled() -> None:
    by_model = {"fake-gpt": (5, 0.05), "offline-judge-a": (7, 0.0)}
    lines = study_lines(0.25, by_model, 1, OFFLINE)
    assert lines == [
        "paid by earlier runs that printed no closing line (killed, or not started by clcg run; "
        "1 run): $0.0500 in 5 paid model calls (in the study total, not in this run's figure; said once)",
        "study total: $0.2500 paid for model calls in this data folder, by every run and host",
    ]
    assert unsaid_line({"offline-judge-a": (7, 0.0)}, 1, OFFLINE) is None  # no provider was paid
    assert study_lines(None, {}, 0, OFFLINE) == []


def test_a_run_with_nothing_to_do_still_prints_the_study_total(capsys: pytest.CaptureFixture[str]) -> None:
    from clcg_pipeline.cli._run import _print_run_summary

    summary = RunSummary(skipped=5, study_paid_usd=1.5)
    _print_run_summary(summary, OFFLINE)
    out = capsys.readouterr().out
    assert "everything is up to date (5 partitions)" in out
    assert "study total: $1.5000 paid for model calls" in out


def test_what_the_run_told_a_fresh_instance_is_said_once_and_nothing_when_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``run_study`` reports a copied folder's current partitions to the instance; it said nothing."""
    from clcg_pipeline.cli._run import _print_run_summary

    _print_run_summary(RunSummary(skipped=5, reported_current=42), OFFLINE)
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("told the Dagster instance") == 1
    assert (
        "told the Dagster instance about 42 partitions and assets already current in this folder "
        "(a copied folder or a new DAGSTER_HOME): its UI and daemon now see them built" in out
    )
    assert "everything is up to date (5 partitions)" in out
    _print_run_summary(RunSummary(runs=1, reported_current=3), OFFLINE)
    assert "about 3 partitions and assets" in " ".join(capsys.readouterr().out.split())
    _print_run_summary(RunSummary(skipped=5), OFFLINE)
    assert "told the Dagster instance" not in capsys.readouterr().out


def test_the_no_op_fast_path_says_the_study_total_and_a_killed_runs_spend_once(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from clcg_pipeline.cli import main

    data = tmp_path / "data"
    start_ledger(str(data))
    _write(data, "calls", PARTITION, _rows("k", 3, run="run-killed", cost=0.02))  # no closing line said it
    argv = _no_op_run(monkeypatch, tmp_path, config_dir, data)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "everything is up to date (5 partitions)" in out
    assert (
        "paid by earlier runs that printed no closing line" in out and "$0.0600 in 3 paid model calls" in out
    )
    assert "study total: $0.0600" in out
    assert main(argv) == 0
    again = capsys.readouterr().out
    assert "paid by earlier runs" not in again and "study total: $0.0600" in again  # said once


def test_one_call_is_said_in_the_singular() -> None:
    one = RunSummary(runs=1, skipped=0)
    one.count("judges", 1, 0.0, "offline-judge-a")
    assert closing_line(one, OFFLINE).endswith(
        "no paid model call; 1 offline model call (run here: no provider request)"
    )
    one.count("responses", 1, 0.01, "fake-gpt")
    line = closing_line(one, OFFLINE)
    assert "; 1 new paid model call (1 responses" in line and "; 1 offline model call besides" in line
    said = unsaid_line({"fake-gpt": (1, 0.01)}, 1, OFFLINE)
    assert said is not None and "in 1 paid model call (" in said


def test_calls_in_flight_at_a_kill_say_how_their_cost_is_known() -> None:
    """Priced from the rerun's answers, at the worst case a budget reserved, or unknown."""
    assert lost_line(LostCalls(run="r-1", calls=1, usd=0.5, worst_case=1)) == (
        "1 call was in flight when run r-1 was killed: the provider may have billed it (estimated "
        "$0.5000 from the worst case reserved; in the study total, not in this run's figure; said once)"
    )
    unknown = lost_line(LostCalls(run=None, calls=3, usd=0.0, unknown=3))
    assert unknown.startswith(
        "3 calls were in flight when a run was killed: the provider may have billed them"
    )
    assert "(cost unknown, $0 counted; in the study total" in unknown
    both = lost_line(LostCalls(run="r-2", calls=3, usd=0.75, from_answer=1, worst_case=1, unknown=1))
    assert (
        "(estimated $0.7500 from the rerun's answers and the worst case reserved; 1 at unknown cost;" in both
    )
    # One line per killed run, after the earlier runs' figure and before the study total.
    lines = study_lines(1.0, {}, 0, OFFLINE, [LostCalls(run="r-1", calls=1, usd=0.5, worst_case=1)] * 2)
    assert [line.split(":")[0] for line in lines] == [
        "1 call was in flight when run r-1 was killed",
        "1 call was in flight when run r-1 was killed",
        "study total",
    ]


def test_the_no_op_fast_path_says_calls_in_flight_at_a_kill_once(
    config_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from clcg_pipeline.cli import main

    data = tmp_path / "data"
    start_ledger(str(data))
    intents = IntentLog(data / "cache" / "calls")
    intents.sent("f" * 64, "fake-gpt", "run-killed", "en|fake-gpt", 0.02)  # its run's budget reserved $0.02
    intents.close()  # the process is gone with the call in flight
    argv = _no_op_run(monkeypatch, tmp_path, config_dir, data)
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if "in flight" in line] == [
        "1 call was in flight when run run-killed was killed: the provider may have billed it (estimated "
        "$0.0200 from the worst case reserved; in the study total, not in this run's figure; said once)"
    ]
    assert "study total: $0.0200 paid for model calls in this data folder, by every run and host" in out
    assert main(argv) == 0
    again = capsys.readouterr().out
    assert "in flight" not in again and "study total: $0.0200" in again  # said once; still in the total


def _no_op_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config_dir: Path, data: Path) -> list[str]:
    """``clcg run``'s arguments for ``data``, its complete-run memo made to hold (no Dagster)."""
    import clcg_pipeline.cli._run as cli_run

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setattr(cli_run, "_complete_run_holds", lambda *_: 5)  # the memo holds: no Dagster
    monkeypatch.setattr(cli_run, "_print_study_results", lambda *_: None)
    return ["run", "--config", str(config_dir), "--data", str(data)]
