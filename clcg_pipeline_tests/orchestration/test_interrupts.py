"""Ctrl-C reaches the study even when the exception meant to stop it was lost on the way."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from dagster import DagsterExecutionInterruptedError

from clcg_pipeline.orchestration._study_run import _deferred_interrupts
from clcg_pipeline.orchestration._workers import ctrl_c_for_this_process_only


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


# In a process of its own (threads of the test session's would wake the main thread): a thread
# no Python code runs in (OpenBLAS's, which numpy starts on import, before any mask, as Arrow and
# DuckDB start theirs) takes the Ctrl-C while the main thread is busy in Python; it prints how
# long the handler took to run. tgkill(2), which the standard library does not wrap, aims it.
_BUSY_RUN = """
import ctypes, os, signal, sys, threading, time
import numpy
from clcg_pipeline.orchestration._workers import ctrl_c_for_this_process_only

python = {thread.native_id for thread in threading.enumerate()}
def takes_ctrl_c(tid):
    status = open(f"/proc/self/task/{tid}/status").read()
    blocked = int(next(l for l in status.splitlines() if l.startswith("SigBlk:")).split()[1], 16)
    return tid not in python and not blocked & (1 << (signal.SIGINT - 1))
library = [tid for tid in map(int, os.listdir("/proc/self/task")) if takes_ctrl_c(tid)]
if not library:
    sys.exit(3)
def stop(signum, frame):
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, stop)
try:
    with ctrl_c_for_this_process_only():
        time.sleep(0.5)  # the helper thread settled in its wait, as in a long run
        sent = time.monotonic()
        ctypes.CDLL(None).syscall(int(sys.argv[1]), os.getpid(), library[0], signal.SIGINT)
        while time.monotonic() - sent < 5.0:
            pass
except KeyboardInterrupt:
    print(time.monotonic() - sent)
"""
_TGKILL = {"x86_64": 234, "aarch64": 131}.get(os.uname().machine)


@pytest.mark.skipif(not sys.platform.startswith("linux") or _TGKILL is None, reason="Linux's tgkill")
def test_ctrl_c_taken_by_a_library_thread_stops_a_busy_main_thread_at_once() -> None:
    """Python 3.11 runs a signal's handler in the main thread only once it takes the GIL back
    from another thread: a Ctrl-C taken by a library's thread left a busy analysis run going
    for 40 s (issue 32)."""
    done = subprocess.run([sys.executable, "-c", _BUSY_RUN, str(_TGKILL)], capture_output=True, text=True)
    if done.returncode == 3:
        pytest.skip("no library thread here (numpy's BLAS runs single-threaded)")
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 1.0


def _busy(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def test_a_ctrl_c_the_run_lost_is_sent_again() -> None:
    """Dagster's handler raises wherever the main thread is: caught there (by a task of an event
    loop), the analysis run went on to its end, 40 s after Ctrl-C (issue 32)."""
    came: list[float] = []

    def handler(_signum: int, _frame: Any) -> None:
        came.append(time.monotonic())
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(KeyboardInterrupt), ctrl_c_for_this_process_only(lambda: bool(came)):
            try:
                os.kill(os.getpid(), signal.SIGINT)
                _busy(3.0)
            except KeyboardInterrupt:
                pass  # lost
            _busy(5.0)
        assert len(came) == 2 and came[1] - came[0] < 3.0
    finally:
        signal.signal(signal.SIGINT, before)
