"""``kill -9`` of ``clcg run`` leaves none of its worker processes behind (issue 18, item 7).

The responses workers sit in process groups of their own (so a Ctrl-C reaches only the run,
which forwards it once), so a kill of the run's process group does not reach them: they must
notice on their own that the run is gone, whatever they are doing at that moment.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from clcg_pipeline.orchestration import _workers as worker_pool

# The demo study reaches its responses partitions in ~20-40 s on a small machine.
_WORKERS_WITHIN_S = 90.0
# How long the workers have to end once the run is gone (a poll of the parent is ~0.5 s).
_GONE_WITHIN_S = 10.0

# A process as (pid, start time in clock ticks): a pid reused by another process is not it.
Proc = tuple[int, int]


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rfind(")") + 2 :].split()


def _proc(pid: int) -> Proc | None:
    fields = _stat(pid)
    return None if fields is None else (pid, int(fields[19]))


def _alive(proc: Proc) -> bool:
    """Running or sleeping, and still the same process; a zombie has ended."""
    fields = _stat(proc[0])
    return fields is not None and int(fields[19]) == proc[1] and fields[0] not in ("Z", "X")


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _descendants(pid: int) -> list[Proc]:
    """Every live process below ``pid``: its children, theirs, and so on."""
    found: list[Proc] = []
    todo = _children(pid)
    while todo:
        child = todo.pop()
        if (proc := _proc(child)) is not None and _alive(proc):
            found.append(proc)
            todo += _children(child)
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _workers(run_pid: int) -> list[Proc]:
    """The run's forked workers: its children with its own command line (forked, no exec)."""
    own = _cmdline(run_pid)
    return [p for pid in _children(run_pid) if _cmdline(pid) == own and (p := _proc(pid)) is not None]


def _a_partition_started(home: Path) -> bool:
    """True once a worker is inside a responses partition's Dagster run."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return bool(instance.get_runs(filters=dg.RunsFilter(job_name="responses_job"), limit=1))


@contextmanager
def _clcg_run(config: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], list[Proc]]]:
    """``clcg run --parallel 2`` in a session of its own, and a list for the processes seen below
    it: whatever of those is left afterwards is SIGKILLed."""
    home = tmp_path / "home"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    command = [sys.executable, "-m", "clcg_pipeline.cli", "run", "--config", str(config)]
    with (tmp_path / "run.log").open("wb") as log:
        process = subprocess.Popen(
            [*command, "--data", str(tmp_path / "data"), "--parallel", "2"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    seen: list[Proc] = []
    try:
        yield process, seen
    finally:
        # A failing run (the old code) must leave nothing behind either.
        for proc in [*seen, *_descendants(process.pid)]:
            if _alive(proc):
                os.kill(proc[0], signal.SIGKILL)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def _wait_for_workers(process: subprocess.Popen[bytes], home: Path, log: Path) -> list[Proc]:
    """The run's two workers, once one of them is inside a partition's run."""
    deadline = time.monotonic() + _WORKERS_WITHIN_S
    while True:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "no workers in time:\n" + log.read_text(errors="replace")[-3000:]
        workers = _workers(process.pid)
        if len(workers) >= 2 and _a_partition_started(home):
            return workers
        time.sleep(0.2)


# A parent that forks one worker the way the pool does and waits to be killed. The worker is
# where a real one may be when the run dies: in its own process group, its SIGTERM handled (as
# Dagster leaves it after a partition), blocked on a pipe whose write end it holds. It prints
# its pid once _die_with_parent has returned.
_PARENT = """
import multiprocessing, os, signal, sys, time
from clcg_pipeline.orchestration import _workers
# Each way alone: the death signal (Linux), or the poll of the parent (everywhere).
if sys.argv[1] == "poll":
    _workers._set_parent_death_signal = lambda signum: None
else:
    _workers._watch_parent = lambda parent: None

def worker(parent):
    os.setpgrp()
    signal.signal(signal.SIGTERM, lambda *_: None)
    _workers._die_with_parent(parent)
    print(os.getpid(), flush=True)
    read, _write = os.pipe()
    os.read(read, 1)

multiprocessing.get_context("fork").Process(target=worker, args=(os.getpid(),)).start()
time.sleep(600)
"""


@pytest.mark.parametrize("how", ["death-signal", "poll"])
def test_a_worker_ends_with_its_parent_whatever_it_waits_on(how: str) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, how], stdout=subprocess.PIPE, start_new_session=True
    )
    worker: Proc | None = None
    try:
        assert parent.stdout is not None
        # Bounded: a worker that failed never prints, and its parent keeps the pipe open.
        ready, _, _ = select.select([parent.stdout], [], [], 30)
        assert ready, "the worker did not start"
        line = parent.stdout.readline()
        assert line.strip().isdigit(), f"the worker did not start: {line!r}"
        worker = _proc(int(line))
        assert worker is not None and _alive(worker)
        os.killpg(parent.pid, signal.SIGKILL)  # kill -9 of the parent's group, which the worker left
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker), f"worker {worker[0]} outlived its parent ({how})"
    finally:
        if worker is not None and _alive(worker):
            os.kill(worker[0], signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait(timeout=10)
        if parent.stdout is not None:
            parent.stdout.close()


def test_the_pipe_ends_a_worker_closes_are_found() -> None:
    """The standard library's attribute names ``_parent_ends`` relies on still exist."""
    import multiprocessing
    from concurrent import futures

    context = multiprocessing.get_context("fork")
    pids = context.SimpleQueue()
    with futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        ends = worker_pool._parent_ends(pool, pids)
        assert len(ends) == 3
        assert all(isinstance(end.fileno(), int) and not end.closed for end in ends)
    pids.close()


@pytest.mark.slow
def test_a_killed_run_leaves_no_worker_behind(
    demo_config_dir: Path, tmp_path: Path, edit_yaml: Callable
) -> None:
    # Two models: each model's languages are one run, so two runs for the two workers.
    edit_yaml(
        demo_config_dir / "models.yaml",
        lambda doc: doc["models"].append({**doc["models"][0], "id": "lexical-reader-2"}),
    )
    with _clcg_run(demo_config_dir, tmp_path) as (process, seen):
        workers = _wait_for_workers(process, tmp_path / "home", tmp_path / "run.log")
        # Everything below the run (the workers and anything they started), as kill -9 finds it.
        below = _descendants(process.pid)
        seen += below
        assert set(workers) <= set(below)
        os.killpg(process.pid, signal.SIGKILL)  # kill -9 of the run's process group, as in the issue
        process.wait(timeout=10)
        deadline = time.monotonic() + _GONE_WITHIN_S
        while (left := [p for p in below if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left, f"alive {_GONE_WITHIN_S:.0f} s after the run was killed: {left} (workers: {workers})"
