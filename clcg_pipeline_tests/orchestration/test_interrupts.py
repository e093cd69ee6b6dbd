"""Ctrl-C reaches the study even when the exception meant to stop it was lost on the way."""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import pytest
from dagster import DagsterExecutionInterruptedError

from clcg_pipeline.orchestration._study_run import _deferred_interrupts


class _Finalized:
    """An object whose finalizer receives the Ctrl-C: Python cannot raise out of a finalizer."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)


def _ctrl_c_inside_a_finalizer(handler: Callable[[int, Any], None]) -> None:
    """As inside a Dagster step, whose handler raises wherever the main thread is."""
    before = signal.signal(signal.SIGINT, handler)
    try:
        _Finalized()
        gc.collect()
    finally:
        signal.signal(signal.SIGINT, before)


def _raise(error: type[BaseException]) -> Callable[[int, Any], None]:
    def handler(_signum: int, _frame: Any) -> None:
        raise error()

    return handler


@pytest.fixture
def reported(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What reaches Python's unraisable-exception hook ("Exception ignored in ...")."""
    seen: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    return seen


def test_dagsters_interrupt_lost_in_a_finalizer_stops_the_study_quietly(reported: list[Any]) -> None:
    with _deferred_interrupts() as interrupted:
        assert not interrupted()
        _ctrl_c_inside_a_finalizer(_raise(DagsterExecutionInterruptedError))
        assert interrupted()
        assert interrupted()  # the record stays once read
    assert reported == []  # no "Exception ignored ... Traceback" under the one line
    assert signal.set_wakeup_fd(-1) == -1  # nothing left pointing at a closed socket


def test_any_lost_ctrl_c_is_recorded_and_other_errors_still_reported(reported: list[Any]) -> None:
    with _deferred_interrupts() as interrupted:
        _ctrl_c_inside_a_finalizer(_raise(RuntimeError))
        assert interrupted()  # from the signal's wakeup pipe
    assert [type(r.exc_value) for r in reported] == [RuntimeError]


def test_other_signals_are_not_an_interrupt() -> None:
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)
    try:
        with _deferred_interrupts() as interrupted:
            os.kill(os.getpid(), signal.SIGUSR1)
            assert not interrupted()
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_plain_ctrl_c_between_runs_is_noted() -> None:
    with _deferred_interrupts() as interrupted:
        os.kill(os.getpid(), signal.SIGINT)
        assert interrupted()
