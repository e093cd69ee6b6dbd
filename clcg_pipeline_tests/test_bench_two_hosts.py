"""bench/two_hosts_checks.py: the checks two_hosts.py adds for issue 33's items 4-6 judge
the hosts' output as a user reads it (the refusal, the coordination line, the budget line)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from clcg_pipeline_tests.conftest import PROJECT_ROOT

REFUSAL = (
    "error: the call cache s3://b/clcg/cache/calls is shared (a remote URL), but this host coordinates "
    "through local file locks (default), so two hosts could pay for one call twice: give every host "
    "the shared PostgreSQL instance (DAGSTER_HOME holding dagster.postgres.yaml as dagster.yaml, or "
    "CLCG_COORD_URL=postgresql://...), or set CLCG_ALLOW_LOCAL_COORD=1 if only this host uses it"
)
BUDGET = (
    "budget reached: the study budget (study.yaml budget_usd $0.0300) stopped calls: $0.0170 spent by "
    "the study in all, 82 calls left unmade (and any partition past them); raise budget_usd in "
    "study.yaml and run `clcg run` again to resume (paid calls are kept)"
)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(PROJECT_ROOT / "bench"))  # as the script finds it
    import two_hosts_checks

    return two_hosts_checks


def _log(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(["warning: noise", *lines]) + "\n", encoding="utf-8")
    return path


def test_a_refusal_naming_the_fix_once_that_paid_nothing_passes(checks: ModuleType, tmp_path: Path) -> None:
    refused = checks.refusal(_log(tmp_path / "run1.log", REFUSAL), 2, 0)
    opted = {"exit": 0, "coordination": ["coordination: local file locks in /x (default; one host only)"]}
    assert all(checks.refusal_checks(refused, opted).values())
    silent = checks.refusal(_log(tmp_path / "run2.log", "coordination: local file locks in /x"), 0, 3)
    failed = [name for name, ok in checks.refusal_checks(silent, opted).items() if not ok]
    assert len(failed) == 3  # ran, said no fix, paid


def test_every_run_is_checked_for_one_coordination_line(checks: ModuleType, tmp_path: Path) -> None:
    once = _log(tmp_path / "a.log", "coordination: the PostgreSQL instance postgresql://u@h:1/db (from x)")
    never = _log(tmp_path / "b.log", "3 Dagster runs")
    assert {k: len(v) for k, v in checks.coordination_lines({"a": once, "b": never}).items()} == {
        "a": 1,
        "b": 0,
    }


def test_the_budget_must_hold_on_the_bill_and_be_said_once_in_full(
    checks: ModuleType, tmp_path: Path
) -> None:
    said = checks.budget_lines({"b": _log(tmp_path / "b.log", BUDGET), "a": _log(tmp_path / "a.log")})
    assert all(checks.budget_checks(0.03, 0.017, said, skipped=82).values())
    assert checks.budget_checks(None, 1.0, said, skipped=82) == {}
    over = checks.budget_checks(0.03, 0.031, said, skipped=82)
    assert [name for name, ok in over.items() if not ok] == ["both hosts' bill <= the study budget $0.03"]
    unsaid = checks.budget_checks(0.03, 0.017, {"a": [], "b": []}, skipped=82)
    assert not all(unsaid.values())
    twice = checks.budget_lines({"b": _log(tmp_path / "c.log", BUDGET, BUDGET)})
    assert not all(checks.budget_checks(0.03, 0.017, twice, skipped=82).values())


def test_a_precondition_failure_in_a_hosts_output_is_found(checks: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "host-a").mkdir()
    error = "botocore.exceptions.ClientError: An error occurred (PreconditionFailed) when calling GetObject"
    bad = _log(tmp_path / "host-a" / "run1.log", error)
    good = _log(tmp_path / "ok.log", "3 Dagster runs")
    assert checks.crashes([bad, good]) == {"host-a/run1": 1}


def test_a_killed_clients_requests_end_at_its_kill_for_the_limits_check(checks: ModuleType) -> None:
    """The server still answers a dead client's requests (and bills them); its shared slots are
    free at once, so the live clients' peak is judged with those requests ended at the kill."""
    spans = [(0.0, 5.0, "a", 200), (0.5, 5.0, "a", 200), (1.0, 2.0, "b", 200), (2.5, 4.0, "b", 200)]
    spans += [(2.6, 4.0, "b", 200), (2.7, 9.0, "b", 504)]  # b's slow answer: its client gives up at 3 s
    assert checks.peak_in_flight(checks.clipped_spans(spans, 3.0))[0] == 5
    assert checks.peak_in_flight(checks.clipped_spans(spans, 3.0, ("a", 2.2)))[0] == 3


def test_a_slow_request_ends_when_its_client_hung_up_not_at_arrival_plus_timeout(checks: ModuleType) -> None:
    """Run 7: a's slow request arrived at 16.615; its client, whose 2 s timeout started when it
    sent (before that arrival), hung up and gave its slot back; a's next request arrived at
    18.613, 2 ms before arrival + timeout. The estimate counted 5 in flight against a limit of 4."""
    spans = [(16.615, 20.426, "a", 504, 18.606), (17.988, 18.788, "a", 200, None)]
    spans += [(18.060, 18.860, "b", 200, None), (18.060, 18.860, "b", 429, None)]
    spans += [(18.613, 19.415, "a", 200, None)]
    assert checks.peak_in_flight(spans)[0] == 5  # at the server: it still works on the slow one
    assert checks.peak_in_flight(checks.clipped_spans(spans, 2.0))[0] == 4
    estimated = [span[:4] for span in spans]  # spans from before the hang-up was kept
    assert checks.peak_in_flight(checks.clipped_spans(estimated, 2.0))[0] == 5
    # A host opted in to local file locks has a limit of its own: not counted against a and b's.
    spans += [(18.0, 19.0, "c", 200, None)]
    live = checks.of_keys(checks.clipped_spans(spans, 2.0), {"a", "b"})
    assert checks.peak_in_flight(live)[0] == 4


def _paid(call_id: str, payments: int, lost: int = 0, lost_usd: float = 0.0) -> dict[str, object]:
    return {"call_id": call_id, "payments": payments, "lost": lost, "lost_usd": lost_usd, "runs": ["r"]}


def test_a_call_lost_at_the_kill_and_paid_again_is_not_paid_twice(checks: ModuleType) -> None:
    """A lost_at_kill row is the killed attempt's charge: with the rerun's payment, two charges
    the provider billed (its ``ids`` count the answer sent to the killed client), not a call the
    pipeline paid twice. Two real payments of one call still are."""
    billed, gone = Counter({"x": 2, "y": 1, "z": 2}), Counter({"x": 1})
    paid = checks.payments([_paid("x", 1, lost=1, lost_usd=0.01), _paid("y", 1)], billed, gone)
    assert (paid.twice, paid.lost, paid.unbilled_lost, paid.lost_unrecorded) == ([], 1, 0, 0)
    assert paid.lost_usd == 0.01  # the ledger never settled it: the bill's upper bound counts it
    twice = checks.payments([_paid("x", 1, lost=1), _paid("z", 2)], billed, gone)
    assert [row["call_id"] for row in twice.twice] == ["z"]


def test_a_lost_row_the_provider_never_billed_is_an_estimate_and_a_billed_one_missing_is_said(
    checks: ModuleType,
) -> None:
    """A request lost at the kill that got an error (or never arrived) is on no bill: counted
    apart, with its estimate. An answer billed to the killed client with no row is unrecorded."""
    billed, gone = Counter({"x": 1, "w": 2}), Counter({"w": 1})
    paid = checks.payments([_paid("x", 1, lost=1, lost_usd=0.02), _paid("w", 1)], billed, gone)
    assert (paid.lost, paid.unbilled_lost, paid.unbilled_lost_usd, paid.lost_unrecorded) == (0, 1, 0.02, 1)


def test_a_second_answer_of_a_call_lost_at_the_kill_is_not_answered_twice(checks: ModuleType) -> None:
    """The killed host got x's answer and died before caching it (a lost row): the rerun's
    answer is the second to a live client, which no coordination spares. y's is not."""
    live = Counter({"x": 2, "y": 2, "z": 1})
    assert checks.answered_twice(live, [_paid("x", 1, lost=1), _paid("y", 2)]) == 1


def test_the_closing_lines_estimate_of_the_calls_lost_at_a_kill_is_said_paid(checks: ModuleType) -> None:
    lines = {
        "a": [
            "0 new paid model calls costing $0.0000 (paid by this run)",
            "paid by earlier runs that printed no closing line (killed; 1 run): $0.0091 in 15 calls",
            "3 calls were in flight when run r was killed: the provider may have billed them "
            "(estimated $0.0022 from the rerun's answers; in the study total, said once)",
            "study total: $0.0285 paid for model calls in this data folder",
        ]
    }
    assert round(checks.said_usd(lines), 4) == 0.0113
