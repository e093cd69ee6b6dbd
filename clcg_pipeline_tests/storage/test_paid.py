"""A calls table written again keeps the record of the calls its partition paid for."""

from __future__ import annotations

import pandas as pd
import pytest

from clcg_pipeline.storage._paid import keep_paid_record, usd_sum

T1 = pd.Timestamp("2026-11-30 10:00", tz="UTC")
T2 = pd.Timestamp("2026-12-01 10:00", tz="UTC")


def _calls(*rows: tuple[str, bool, float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "call_id": [r[0] for r in rows],
            "cached": [r[1] for r in rows],
            "cost_usd": [r[2] for r in rows],
            "input_tokens": [100] * len(rows),
            "output_tokens": [10] * len(rows),
            "latency_s": [0.5] * len(rows),
            "attempts": [2] * len(rows),
            "outcome": ["ok"] * len(rows),
        }
    )


def test_new_calls_are_stamped_with_the_run_and_time() -> None:
    written = keep_paid_record(_calls(("a", False, 0.01), ("b", True, 0.02)), None, "run-1", T1)
    assert written["paid_run"].tolist() == ["run-1", None]
    assert written.loc[0, "paid_at"] == T1 and pd.isna(written.loc[1, "paid_at"])


def test_a_rerun_that_finds_everything_cached_keeps_what_was_paid() -> None:
    first = keep_paid_record(_calls(("a", False, 0.01), ("b", True, 0.02)), None, "run-1", T1)
    # The rerun found both in the cache, with the cost and a latency of zero for the cached one.
    rerun = _calls(("a", True, 0.01), ("b", True, 0.02)).assign(latency_s=0.0, attempts=1)
    again = keep_paid_record(rerun, first, "run-2", T2)
    assert again["cached"].tolist() == [False, True]
    assert again.loc[0, "paid_run"] == "run-1" and again.loc[0, "paid_at"] == T1
    assert again.loc[0, "latency_s"] == 0.5 and again.loc[0, "attempts"] == 2
    # Written a third time: still the same record, never stamped by the later run.
    third = keep_paid_record(rerun, again, "run-3", T2)
    assert third.equals(again)


def test_a_call_asked_twice_is_kept_paid_once() -> None:
    first = keep_paid_record(_calls(("a", False, 0.01), ("a", True, 0.01)), None, "run-1", T1)
    again = keep_paid_record(_calls(("a", True, 0.01), ("a", True, 0.01)), first, "run-2", T2)
    assert (~again["cached"]).sum() == 1


def test_a_call_paid_again_now_is_this_runs() -> None:
    first = keep_paid_record(_calls(("a", False, 0.01)), None, "run-1", T1)
    again = keep_paid_record(_calls(("a", False, 0.03)), first, "run-2", T2)
    assert again["paid_run"].tolist() == ["run-2"] and again["cost_usd"].tolist() == [0.03]


def test_a_table_from_before_the_stamps_keeps_its_paid_calls() -> None:
    older = _calls(("a", False, 0.01))  # no paid_run, no paid_at
    again = keep_paid_record(_calls(("a", True, 0.01)), older, "run-2", T2)
    assert again["cached"].tolist() == [False] and pd.isna(again.loc[0, "paid_run"])


def _found_cached(*rows: tuple[str, str | None]) -> pd.DataFrame:
    """Calls found in the cache, each with the payer its cache entry names (``calls.call_row``)."""
    frame = _calls(*((call_id, True, 0.01) for call_id, _ in rows))
    return frame.assign(
        paid_run=[payer for _, payer in rows],
        paid_host=["host-a" if payer else None for _, payer in rows],
        paid_at=[T1 if payer else None for _, payer in rows],
    )


def test_a_payment_no_table_recorded_is_recorded_once_by_its_payer() -> None:
    """A run killed after paying for ``a`` wrote no table: the rerun records it, by that run and host."""
    rerun = _found_cached(("a", "killed-run"), ("a", "killed-run"), ("b", None))
    written = keep_paid_record(rerun, None, "run-2", T2)
    assert written["cached"].tolist() == [False, True, True]  # a list that asked twice: one payment
    assert written.loc[0, ["paid_run", "paid_host"]].tolist() == ["killed-run", "host-a"]
    assert written.loc[0, "paid_at"] == T1  # when the answer arrived, not when the table was written
    assert written.loc[1:, ["paid_run", "paid_host"]].isna().all().all()  # cached rows name no payer
    # Written again: the stored record stands, the call is not paid a second time.
    again = keep_paid_record(rerun, written, "run-3", T2)
    assert again.equals(written)


def test_a_cache_hit_of_a_recorded_payment_keeps_that_record() -> None:
    first = keep_paid_record(_calls(("a", False, 0.01)), None, "run-1", T1)
    assert first.loc[0, "paid_host"] is not None  # this write's new call: paid from this host
    # The entry names run-1 too: the table's record is kept, not a second payment added.
    again = keep_paid_record(_found_cached(("a", "run-1")), first, "run-2", T2)
    assert (~again["cached"]).sum() == 1 and again.loc[0, "paid_at"] == T1
    assert again.loc[0, "paid_host"] == first.loc[0, "paid_host"]


@pytest.mark.parametrize("outcome", ["skipped_budget", "error", "batch_pending"])
def test_a_stored_call_never_answered_is_no_payment_to_keep(outcome: str) -> None:
    """Skipped for the budget (or failed) by one run, the call was then paid by another host for
    another partition: this partition finds it cached, and must not record a $0 payment of its own."""
    tried = _calls(("a", False, 0.0), ("b", False, 0.01)).assign(outcome=[outcome, "ok"])
    first = keep_paid_record(tried, None, "run-1", T1)
    again = keep_paid_record(_calls(("a", True, 0.01), ("b", True, 0.01)), first, "run-2", T2)
    assert again["cached"].tolist() == [True, False]
    assert pd.isna(again.loc[0, "paid_run"]) and again.loc[1, "paid_run"] == "run-1"
    # Its cache entry names this partition's payer (a stream, say): that payment is recorded.
    found = keep_paid_record(_found_cached(("a", "stream-1")), first, "run-2", T2)
    assert found["cached"].tolist() == [False] and found.loc[0, "paid_run"] == "stream-1"


def test_a_spend_figure_is_the_same_whatever_order_the_rows_come_in() -> None:
    """DuckDB keeps no row order: a float sum in two orders differed in the last bit, and at a
    half-cent-of-a-cent boundary the budget line and the spend view then rounded apart."""
    costs = [0.1, 0.2, 0.3, 0.000175, 1e-17] * 40
    orders = [pd.Series(costs), pd.Series(sorted(costs)), pd.Series(list(reversed(costs)))]
    assert len({float(order.sum()) for order in orders}) > 1  # what pandas gives
    assert len({usd_sum(order) for order in orders}) == 1
