"""The models' responses runs go ``parallel`` at a time, each in a forked worker process.

Threads would not do: Dagster handles Ctrl-C only in a main thread, and the runner's
coordination (``calls/_coord.py``: call claims, the model's concurrency slots, the study's
spend ledger) is built for processes. Each worker runs one model's range of languages
(``LanguageRange``), one Dagster run on the same instance, as the daemon's backfill would;
a hosted model's stream of calls (``model_calls_job``, ``_model_calls``) runs first, in a
worker of its own, every model's at once, and the model's runs wait for it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import dagster as dg

from clcg_pipeline.orchestration._partition_run import LanguageRange, StudyRunError, execute_job, failure_of
from clcg_pipeline.orchestration._summary import RunSummary
from clcg_pipeline.partitions import MODEL_CALLS_JOB

# The niceness of a worker's responses run while streams run beside it (see _execute).
_STREAMING_NICE = 10
# Streams at once, each a worker process: enough models' calls overlapping to keep providers
# busy, while a study of a hundred new models does not fork a hundred processes.
_STREAMS_AT_ONCE = 16
# (success, root-cause line, was an interrupt) of one run.
Outcome = tuple[bool, str, bool]

# Set by the parent just before it forks the worker processes, which inherit them.
_WORKER: dict[str, Any] = {}
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
# How often a worker looks whether its parent is still there (see _watch_parent).
_PARENT_POLL_S = 0.5
# How soon Ctrl-C stops a run busy in Python at the latest (see ctrl_c_for_this_process_only).
_WAKE_MAIN_S = 0.05
# How long a run may go on after Ctrl-C before it is sent again (see ctrl_c_for_this_process_only).
_RESEND_S = 1.0


@contextlib.contextmanager
def ctrl_c_for_this_process_only(interrupted: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """While open, processes started from this thread miss the terminal's Ctrl-C; this one gets it.

    Dagster's log capture starts helper processes (``tail``, ``watch_orphans.py``) in the
    terminal's process group; interrupted, each prints a traceback under ``clcg run``'s one line.
    A blocked signal stays blocked across fork and exec, so this thread blocks SIGINT and a
    helper thread that leaves it unblocked receives it: Python still runs the handler
    (Dagster's, which stops the run) in the main thread.

    The signal may as well land in a library's own thread (OpenBLAS, Arrow, DuckDB) started
    before the mask. Python 3.11 then runs the handler only once the main thread takes the GIL
    back from another thread; busy in Python, it never had to, and an analysis run went on for
    40 s after Ctrl-C. The helper wakes every ``_WAKE_MAIN_S`` to make it do so.

    Once ``interrupted()`` (the study's record of its signals) says Ctrl-C came, the helper sends
    it again every ``_RESEND_S`` until the run ends: Dagster's handler raises wherever the main
    thread is, and code that catches what it raised there (a task of an event loop) lets the run
    go on to its end.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    done = threading.Event()
    receiver = threading.Thread(
        target=_wake_main_until, args=(done, interrupted), name="clcg-ctrl-c", daemon=True
    )
    receiver.start()  # before the mask: a thread starts with its creator's
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a Ctrl-C still pending comes now
        done.set()
        receiver.join()


def _wake_main_until(done: threading.Event, interrupted: Callable[[], bool]) -> None:
    """Take the GIL every ``_WAKE_MAIN_S`` until ``done``: the main thread, taking it back, sees
    a signal another thread received (bpo-40010) and runs its handler. After a Ctrl-C, send it
    again every ``_RESEND_S`` (see ``ctrl_c_for_this_process_only``)."""
    noted: float | None = None
    while not done.wait(_WAKE_MAIN_S):
        if noted is None:
            noted = time.monotonic() if interrupted() else None
        elif time.monotonic() - noted >= _RESEND_S:
            os.kill(os.getpid(), signal.SIGINT)
            noted = time.monotonic()


def _worker_start(ref: Any, pids: Any) -> None:
    """A worker process of the responses pool: its own instance, and Ctrl-C from its parent only
    (in a process group of its own: ``clcg run`` forwards the terminal's Ctrl-C exactly once,
    as twice could break into Dagster's clean-up). Between runs it is noted: no new run starts.
    """
    _WORKER["interrupted"] = False

    def note(_signum: int, _frame: object) -> None:
        _WORKER["interrupted"] = True

    signal.signal(signal.SIGINT, note)
    # Forked while the parent kept Ctrl-C from its children (ctrl_c_for_this_process_only), a
    # worker would never get the interrupt its parent forwards.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    # The parent's wakeup pipe (``_deferred_interrupts``) came along with the fork: it is the
    # parent's record of its own signals, not a worker's.
    signal.set_wakeup_fd(-1)
    os.setpgrp()
    _die_with_parent(_WORKER["parent"])
    for connection in _WORKER["parent_ends"]:
        connection.close()
    # A fresh instance: nothing of the parent's connections is shared across the fork.
    _WORKER["instance"] = dg.DagsterInstance.from_ref(ref)
    pids.put(os.getpid())


def _die_with_parent(parent: int) -> None:
    """End this worker when ``clcg run`` (pid ``parent``) dies without cleaning up (kill -9):
    out of the run's process group, it would wait forever on the pool's queue (issue 18).

    SIGKILL, not SIGTERM: Dagster points SIGTERM at the SIGINT handler, which here only takes
    note. Killing is safe: ``calls/_coord.py``'s claims, slots and ledger survive a dead process.
    """
    _set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)  # the run died before the signal was asked for: nobody would send it
    # Also off Linux, or if prctl failed: a poll of the parent costs nothing.
    threading.Thread(target=_watch_parent, args=(parent,), name="clcg-watch-parent", daemon=True).start()


def _set_parent_death_signal(signum: int) -> None:
    """Linux's PR_SET_PDEATHSIG through ctypes (the standard library has no binding for prctl).
    It fires when the forking thread ends: here ``clcg run``'s main thread, the pool's first
    submitter, which ends only with the process."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: _watch_parent alone


def _watch_parent(parent: int) -> None:
    """In a thread of the worker: exit as soon as the parent is gone (the worker is re-parented)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def _parent_ends(pool: futures.ProcessPoolExecutor, pids: Any) -> list[Any]:
    """The pipe ends only the parent uses, which every worker closes once forked: else a worker
    holding them would never see end-of-file (or EPIPE) when the parent dies. The attribute
    names are the standard library's; ``test_worker_orphans.py`` fails if they change.
    """
    ends = [
        (getattr(pool, "_call_queue", None), "_writer"),
        (getattr(pool, "_result_queue", None), "_reader"),
        (pids, "_reader"),
    ]
    return [getattr(queue, name) for queue, name in ends if hasattr(queue, name)]


def _execute(
    job: str, partition: str | None, run_config: dict[str, Any], tags: dict[str, str], run_id: str, nice: bool
) -> Outcome:
    """In a worker: run one job partition, or the range its tags name; (success, root-cause
    line, interrupted). ``nice``: streams are calling in other workers."""
    if _WORKER.get("interrupted"):
        return False, "interrupted", True
    if nice and not _WORKER.get("niced"):
        # This run's CPU work (loading, scoring) yields to the streams, so a small machine
        # keeps their calls flowing. (Only once every stream is handed out: a worker niced
        # here runs no stream after.)
        os.nice(_STREAMING_NICE)
        _WORKER["niced"] = True
    result = execute_job(_WORKER["instance"], _WORKER["defs"], job, partition, run_config, tags, run_id)
    if result.success:
        return True, "", False
    message, _ours, was_interrupt = failure_of(result)
    return False, message, was_interrupt


def _in_step(instance: dg.DagsterInstance, run_id: str) -> bool:
    """True until the run's ``responses`` step has ended (or before the run exists)."""
    ended = (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE)
    records = instance.get_records_for_run(run_id, of_type=set(ended)).records
    return not any(record.event_log_entry.step_key == "responses" for record in records)


@dataclass
class WorkerHooks:
    """What the study run tells the pool and hears back from it, per run (a model's language range)."""

    run_config: dict[str, Any]
    tags: Callable[[LanguageRange], dict[str, str]]  # a run's tags
    account: Callable[[str, str], tuple[float, bool]]  # (language, model) finished: count its calls
    on_forget: Callable[[], None]  # a run ended: the responses' stored records changed
    # (line, model): say the line at the model's progress step (one per model, whatever its runs)
    progress: Callable[[str, str], None]
    interrupted: Callable[[], bool]
    streams: Sequence[StreamRun]  # run first; a model's ranges wait for its stream
    on_stream: Callable[[str, str, bool, str], None]  # (model, run id, ok, why not)


@dataclass(frozen=True)
class StreamRun:
    """A hosted model's ``model_calls_job`` run: the model's calls, every stale language's."""

    model_id: str
    run_config: dict[str, Any]
    tags: dict[str, str]


class WorkerPool:
    """The models' responses runs, ``parallel`` at a time in forked workers (``run``).

    The ``streams`` start first, each in a worker of its own (``_STREAMS_AT_ONCE`` at most); a
    model's runs start once its stream has ended (they find its calls answered) and run at a
    lower CPU priority while streams are calling. A failure lets the runs in progress finish
    (their calls are paid for) and starts no other; Ctrl-C is forwarded to the workers.

    The first ``parallel`` runs start one after another, each once the previous one has
    finished its ``responses`` step: started together they would prepare, call and score in
    lockstep, nobody calling while every worker is busy with the CPU.
    """

    def __init__(
        self,
        instance: dg.DagsterInstance,
        defs: dg.Definitions,
        ranges: Sequence[LanguageRange],
        parallel: int,
        hooks: WorkerHooks,
        summary: RunSummary,
    ) -> None:
        self.instance = instance
        self.defs = defs
        self.parallel = parallel
        self.hooks = hooks
        self.summary = summary
        self.queue = list(ranges)
        self.running: dict[futures.Future[Outcome], LanguageRange] = {}
        self.calling: dict[futures.Future[Outcome], str] = {}  # run id, until the calls end
        self.streaming: dict[futures.Future[Outcome], tuple[str, str]] = {}  # (model, run id)
        self.streams = list(hooks.streams)  # not started yet
        self.started = 0
        self.workers: list[int] = []
        self.signalled: set[int] = set()
        self.failure: StudyRunError | None = None
        self.stopped = False

    def run(self) -> None:
        context = multiprocessing.get_context("fork")  # the definitions are built once, here
        self.pids = context.SimpleQueue()
        _WORKER["defs"] = self.defs
        self.pool = futures.ProcessPoolExecutor(
            max(min(self.parallel, len(self.queue)), 1) + min(len(self.streams), _STREAMS_AT_ONCE),
            mp_context=context,
            initializer=_worker_start,
            initargs=(self.instance.get_ref(), self.pids),
        )
        # Forked at the first submit, the workers inherit these (see _worker_start).
        _WORKER["parent"] = os.getpid()
        _WORKER["parent_ends"] = _parent_ends(self.pool, self.pids)
        try:
            while self.queue or self.running or self.streaming or self.streams:
                self._tick()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
            for name in ("defs", "parent", "parent_ends"):
                _WORKER.pop(name, None)
        if self.stopped or self.hooks.interrupted():
            raise KeyboardInterrupt
        if self.failure is not None:
            raise self.failure

    def _tick(self) -> None:
        """One turn of the loop: start what may start, pass on Ctrl-C, collect what finished."""
        interrupted = self.hooks.interrupted
        if self.started < self.parallel:  # only the first runs are staggered
            self.calling = {
                f: r for f, r in self.calling.items() if f in self.running and _in_step(self.instance, r)
            }
        self._start_streams()
        self._start_partitions()
        while not self.pids.empty():
            self.workers.append(self.pids.get())
        if interrupted():
            self._forward_interrupt()
        if self.failure is not None or interrupted():
            self.queue.clear()
            self.streams.clear()
        waiting = [*self.running, *self.streaming]
        if not waiting:
            time.sleep(0.05)  # (the queue's first runs are being staggered)
            return
        finished, _ = futures.wait(waiting, timeout=0.2, return_when=futures.FIRST_COMPLETED)
        for future in finished:
            if future in self.streaming:
                self._stream_ended(future)
            else:
                self._finish(future)

    def _start_streams(self) -> None:
        """Streams first, before any responses run that waits for them (``_STREAMS_AT_ONCE``)."""
        while self.streams and len(self.streaming) < _STREAMS_AT_ONCE and not self.hooks.interrupted():
            stream = self.streams.pop(0)
            self.hooks.progress(f"{stream.model_id}: calls streaming", stream.model_id)
            future, run_id = self._submit(
                MODEL_CALLS_JOB, stream.model_id, stream.run_config, stream.tags, False
            )
            self.streaming[future] = (stream.model_id, run_id)

    def _stream_ended(self, future: futures.Future[Outcome]) -> None:
        model_id, run_id = self.streaming.pop(future)
        ok, message, was_interrupt = self._outcome(future)
        if was_interrupt or self.hooks.interrupted():
            self.stopped = True
        else:
            # A failed stream fails nothing: its model's runs make their own calls (and meet
            # the same error, if it was the provider's: they say it).
            self.hooks.on_stream(model_id, run_id, ok, message)

    def _start_partitions(self) -> None:
        streaming = {model_id for model_id, _ in self.streaming.values()} | {s.model_id for s in self.streams}
        while (
            self.queue
            and len(self.running) < self.parallel
            and self.failure is None
            and not self.hooks.interrupted()
        ):
            if self.started < self.parallel and self.calling:
                break  # still staggering the first runs
            waiting = [i for i, run_range in enumerate(self.queue) if run_range.model_id not in streaming]
            if not waiting:
                break  # every run left waits for its model's stream
            run_range = self.queue.pop(waiting[0])
            self.hooks.progress(run_range.label, run_range.model_id)
            tags, nice = self.hooks.tags(run_range), bool(self.streaming) and not self.streams
            future, run_id = self._submit(
                "responses_job", run_range.partition, self.hooks.run_config, tags, nice
            )
            self.running[future] = run_range
            self.calling[future] = run_id
            self.started += 1

    def _submit(
        self, job: str, partition: str | None, run_config: dict[str, Any], tags: dict[str, str], nice: bool
    ) -> tuple[futures.Future[Outcome], str]:
        """Hand one run to a worker; (its future, its run id)."""
        run_id = str(uuid.uuid4())
        self.summary.run_ids.add(run_id)  # the calls it pays for are this command's
        return self.pool.submit(_execute, job, partition, run_config, tags, run_id, nice), run_id

    def _forward_interrupt(self) -> None:
        for pid in set(self.workers) - self.signalled:  # once each: see _worker_start
            self.signalled.add(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)

    def _outcome(self, future: futures.Future[Outcome]) -> Outcome:
        """(success, root-cause line, was an interrupt) of a run that ended."""
        self.summary.runs += 1
        try:
            return future.result()
        except futures.process.BrokenProcessPool:
            # Killed from outside (out of memory, kill -9): its run stays as Dagster last saw it.
            return False, "its worker process died (out of memory?)", False

    def _finish(self, future: futures.Future[Outcome]) -> None:
        run_range = self.running.pop(future)
        self.hooks.on_forget()
        ok, message, was_interrupt = self._outcome(future)
        if ok:
            for iso in run_range.isos:  # each partition counted as if it had run alone
                self.hooks.account(iso, run_range.model_id)
        elif was_interrupt or self.hooks.interrupted():
            self.stopped = True
        elif self.failure is None:
            self.failure = StudyRunError(f"responses_job [{run_range.name}] failed: {message}")
