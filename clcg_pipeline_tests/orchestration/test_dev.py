"""``make dev``'s launcher (``orchestration/dev.py``): Ctrl-C prints one line and exits 130 with
no traceback, the run in flight is still interrupted, and nothing is left behind, after Ctrl-C
or after ``kill -9`` of the launcher (issue 32, item 6).

A stand-in for ``dagster dev`` keeps these fast (the real one takes a minute to start on a small
machine): a leader, a "run worker" below it and, below that, the worker's log helpers as
Dagster starts them (``watch_orphans.py``, which prints a traceback when it gets a Ctrl-C, and
``tail -F``), all in one process group as ``dagster dev``'s are.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from clcg_pipeline.orchestration import dev
from clcg_pipeline_tests.orchestration.test_worker_orphans import Proc, _alive, _descendants

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="needs /proc and a Linux pseudo-terminal")

_READY_WITHIN_S = 30.0
_GONE_WITHIN_S = 10.0

# Dagster's watch_orphans.py in short: a loop of sleeps, with Python's default Ctrl-C handling.
_WATCH_ORPHANS = "import time\nwhile True:\n    time.sleep(1)\n"

_FAKE_DAGSTER = """
import os, signal, subprocess, sys, time
from pathlib import Path

here = Path(sys.argv[0]).parent
if sys.argv[1] == "worker":
    log = here / "step.log"
    log.touch()
    helpers = [
        subprocess.Popen([sys.executable, str(here / "watch_orphans.py")]),
        subprocess.Popen(["tail", "-F", str(log)], stdout=subprocess.DEVNULL),
    ]
    (here / "ready").write_text(" ".join(str(p.pid) for p in helpers))
    try:
        while True:
            time.sleep(0.1)
    except KeyboardInterrupt:
        (here / "interrupted").write_text("run stopped")
        time.sleep(0.5)  # a run takes a while to wind down: a helper's Ctrl-C would show by now
        for helper in helpers:  # as Dagster's compute log capture ends them
            helper.terminate()
            helper.wait()
        sys.exit(1)
if sys.argv[1] == "exit":
    sys.exit(int(sys.argv[2]))
worker = subprocess.Popen([sys.executable, sys.argv[0], "worker"])
try:
    worker.wait()
except KeyboardInterrupt:
    worker.wait(timeout=20)
"""


@pytest.fixture
def fake_dagster(tmp_path: Path) -> list[str]:
    """The command of the stand-in above (run by the interpreter: a temporary folder may be
    mounted noexec), its script beside its helper in ``tmp_path``."""
    (tmp_path / "watch_orphans.py").write_text(_WATCH_ORPHANS, encoding="utf-8")
    script = tmp_path / "dagster"
    script.write_text(_FAKE_DAGSTER, encoding="utf-8")
    return [sys.executable, str(script)]


def _own_terminal() -> None:
    """In the child (a session leader): make the pseudo-terminal its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@contextmanager
def _launcher_in_a_terminal(*command: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The launcher running ``command`` as the foreground job of a pseudo-terminal: (the
    launcher, the terminal's leader end)."""
    leader, follower = pty.openpty()
    launcher = [sys.executable, dev.__file__, *command]  # as the Makefile runs it
    process = subprocess.Popen(
        launcher,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
        preexec_fn=_own_terminal,
    )
    os.close(follower)
    try:
        yield process, leader
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(leader)


def _read_all(leader: int) -> str:
    """What the terminal shows until every process has closed it."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # Linux says EIO once the last process has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def _wait_ready(tmp_path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _READY_WITHIN_S
    while not (tmp_path / "ready").exists():
        assert process.poll() is None, f"the launcher exited with {process.returncode}"
        assert time.monotonic() < deadline, "the stand-in's run worker never started"
        time.sleep(0.1)
    time.sleep(0.3)  # the helpers' interpreters are up (a Ctrl-C before would print nothing)


def _left(below: list[Proc]) -> list[Proc]:
    deadline = time.monotonic() + _GONE_WITHIN_S
    while (left := [p for p in below if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_ctrl_c_prints_one_line_exits_130_and_leaves_nothing(fake_dagster: list[str], tmp_path: Path) -> None:
    """Before: the terminal's Ctrl-C reached every process of ``dagster dev``, and the run
    worker's log helpers printed a traceback each."""
    command = [*fake_dagster, "dev", "-w", "workspace.yaml"]
    with _launcher_in_a_terminal(*command) as (process, leader):
        _wait_ready(tmp_path, process)
        below = _descendants(process.pid)
        assert len(below) >= 5, below  # the guard, the leader, the worker, its two helpers
        started = time.monotonic()
        os.killpg(os.tcgetpgrp(leader), signal.SIGINT)  # what the terminal does on Ctrl-C
        shown = _read_all(leader)
        status = process.wait(timeout=_GONE_WITHIN_S)
        took = time.monotonic() - started
        assert (status, shown.splitlines()) == (130, [f"{dev._name(command)}: stopped (Ctrl-C)"]), shown
        assert (tmp_path / "interrupted").exists(), "the run in flight was not interrupted"
        assert not _left(below)
        assert took < _GONE_WITHIN_S, took  # no SIGKILL after STOP_S: it stopped by itself


def test_sigterm_stops_it_as_ctrl_c_does(fake_dagster: list[str], tmp_path: Path) -> None:
    with _launcher_in_a_terminal(*fake_dagster, "dev") as (process, leader):
        _wait_ready(tmp_path, process)
        process.terminate()
        shown = _read_all(leader)
        assert process.wait(timeout=_GONE_WITHIN_S) == 128 + signal.SIGTERM
        assert shown.splitlines() == [f"{dev._name(fake_dagster)}: stopped (SIGTERM)"], shown
        assert (tmp_path / "interrupted").exists()


def test_kill_9_of_the_launcher_stops_and_leaves_nothing(fake_dagster: list[str], tmp_path: Path) -> None:
    with _launcher_in_a_terminal(*fake_dagster, "dev") as (process, leader):
        _wait_ready(tmp_path, process)
        below = _descendants(process.pid)
        assert len(below) >= 5, below
        process.kill()
        process.wait()
        assert not _left(below)
        assert (tmp_path / "interrupted").exists(), "the run was killed, not stopped"
        assert "Traceback" not in _read_all(leader)


def test_a_command_that_exits_by_itself_gives_its_status(fake_dagster: list[str], tmp_path: Path) -> None:
    handler = signal.getsignal(signal.SIGINT)
    assert dev.main([*fake_dagster, "exit", "3"]) == 3
    assert dev.main([]) == 2  # the usage, not a traceback
    assert dev.main([str(tmp_path / "missing")]) == 127
    assert signal.getsignal(signal.SIGINT) is handler  # given back


def test_the_line_names_the_command() -> None:
    assert dev._name([".venv/bin/dagster", "dev", "-w", "workspace.yaml"]) == "dagster dev"
    assert dev._name(["/usr/bin/dagster-webserver", "-p", "3000"]) == "dagster-webserver"


def test_what_ignores_ctrl_c_is_killed_after_the_bound() -> None:
    stubborn = (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nprint(flush=True)\ntime.sleep(60)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", stubborn], start_new_session=True, stdout=subprocess.PIPE
    )
    assert process.stdout is not None and process.stdout.readline()  # its handler is set
    started = time.monotonic()
    assert dev.stop_group(process.pid, stop_s=1.0) is False
    assert process.wait(timeout=5) == -signal.SIGKILL
    assert time.monotonic() - started < _GONE_WITHIN_S


# A Python process at exit: its last Python code has run and the interpreter has given the
# signals back to the system (no Ctrl-C handler left), then frees its memory (seconds on a busy
# machine; ``dagster dev``'s processes, one after another, made an idle stop take 6-15 s).
_EXITING = """
import signal, time
print(flush=True)
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    time.sleep(30)
"""

# A daemon evaluating a sensor through its code server when Ctrl-C comes, both below a leader;
# with ``restart``, the leader starts the code server again once it has exited, as ``dagster
# dev`` does when it sees it gone before its own shutdown is done.
_SERVICES = """
import subprocess, sys, time
from pathlib import Path

here, role, *rest = Path(sys.argv[1]), *sys.argv[2:]
if role == "leader":
    kids = [subprocess.Popen([sys.executable, __file__, str(here), r]) for r in ("daemon", "code-server")]
    try:
        for kid in kids:
            kid.wait()
    except KeyboardInterrupt:
        for kid in kids:
            kid.wait()
    if rest:
        subprocess.Popen([sys.executable, __file__, str(here), "code-server", "again"])
        (here / "restarted").touch()
    sys.exit(0)
(here / role).touch()
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:
    if role == "daemon":
        time.sleep(1.0)  # the sensor's evaluation in flight
        (here / "daemon done").touch()
    else:
        done = (here / "daemon done").exists()
        (here / " ".join(["code server stopped", *rest])).write_text("after" if done else "before")
"""


def _start_services(tmp_path: Path, *options: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "services.py"
    script.write_text(_SERVICES, encoding="utf-8")
    command = [sys.executable, str(script), str(tmp_path), "leader", *options]
    process = subprocess.Popen(command, start_new_session=True)
    deadline = time.monotonic() + _READY_WITHIN_S
    while not ((tmp_path / "daemon").exists() and (tmp_path / "code-server").exists()):
        assert time.monotonic() < deadline, "the stand-in's services never started"
        time.sleep(0.05)
    time.sleep(0.3)  # their handlers are set
    return process


def _guarded_stop(process: subprocess.Popen[bytes]) -> tuple[float, int]:
    """Stop ``process``'s group as the launcher does (its guard, released): (seconds taken,
    the guard's exit status, 0 if the group stopped without SIGKILL)."""
    guard = dev.Guard(process.pid)
    started = time.monotonic()
    guard.release()
    process.wait(timeout=dev.STOP_S)  # reaped as it exits, as the launcher does
    return time.monotonic() - started, guard.process.wait(timeout=dev.STOP_S)


def test_a_process_that_has_begun_to_exit_is_ended_at_once() -> None:
    """Before: waited for until it exited by itself (here 30 s, SIGKILL after ``STOP_S``)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _EXITING], start_new_session=True, stdout=subprocess.PIPE
    )
    try:
        assert process.stdout is not None and process.stdout.readline()  # its handler is set
        took, guard_status = _guarded_stop(process)
        assert (process.returncode, guard_status) == (-signal.SIGTERM, 0)
        assert took < 5.0, took
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_code_servers_are_stopped_after_their_callers(tmp_path: Path) -> None:
    """Before: Ctrl-C stopped the code server under a daemon still evaluating a sensor, which
    logged tracebacks for it."""
    process = _start_services(tmp_path)
    try:
        _, guard_status = _guarded_stop(process)
        assert guard_status == 0
        assert (tmp_path / "code server stopped").read_text() == "after"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_a_code_server_started_again_during_the_stop_is_stopped_too(tmp_path: Path) -> None:
    """Before: never interrupted, it kept the stop waiting for the kill after ``STOP_S`` (idle,
    ``make dev`` took 45 s to stop, one time in three here)."""
    process = _start_services(tmp_path, "restart")
    stopped: list[bool] = []
    stop = threading.Thread(target=lambda: stopped.append(dev.stop_group(process.pid, stop_s=10.0)))
    try:
        stop.start()
        process.wait(timeout=_GONE_WITHIN_S)  # reaped as it exits, as the launcher does
        stop.join(timeout=15.0)
        assert (tmp_path / "restarted").exists()
        assert stopped == [True]  # (Ctrl-C may reach it before its interpreter handles it)
    finally:
        stop.join(timeout=15.0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.poll() is None:
            process.wait()
