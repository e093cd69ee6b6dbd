"""``make dev``'s launcher: ``dagster dev`` (the UI, the daemon, the code server and its run
workers) in a session of its own, stopped on Ctrl-C (Dagster's shutdown log, then one line of
the launcher's, exit status 130, no traceback), and stopped too when the launcher itself is
killed (``kill -9``).

    .venv/bin/python clcg_pipeline/orchestration/dev.py .venv/bin/dagster dev -w workspace.yaml

Run by path, not ``-m``: the package's ``__init__`` would load Dagster (seconds, 200 MB) into
a process that only waits; this file needs the standard library alone.

Started straight from the terminal, every process of ``dagster dev`` shared the terminal's
process group and got its Ctrl-C: the run worker's log helpers (``watch_orphans.py``) printed a
traceback each. Here the launcher alone gets the terminal's Ctrl-C and leaves the stop to a
guard, this file again (``--guard PGID``) in a session of its own, its stdin a pipe only the
launcher holds. End of file means the launcher is done: it asked for the stop (Ctrl-C), the
command exited, or it was killed without a word. The guard then sends Ctrl-C to every process
of the group but those helpers (the run in flight still stops, marked failed), the code servers
last, SIGTERM to each process that has begun to exit, and SIGKILL to what is left after
``STOP_S`` (``stop_group``). ``Guard`` gives the daemon of the tests and the benchmarks' servers
the same guard.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

# ``dagster dev`` stops its webserver, daemon and code servers, the run in flight its step: a
# few seconds (up to 25 s measured on a busy 2-core machine). Beyond this bound the group is
# killed (a run left STARTED).
STOP_S = 45.0
# The signals that stop the launcher (and so the command): Ctrl-C, kill, a closed terminal.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Beyond the guard's own bound: how long the launcher waits for the guard at most.
_GUARD_SLACK_S = 10.0
_POLL_S = 0.1
# Started by a run worker to mirror its step logs; a Ctrl-C makes each print a traceback, and
# the worker ends them itself when its run stops (Dagster's ``compute_logs.py``).
_LOG_HELPERS = {b"watch_orphans.py", b"tail"}
# ``dagster api execute_run`` (a run worker, and its forked workers), ``resume_run``, ``execute_step``.
_RUN_COMMANDS = {b"execute_run", b"resume_run", b"execute_step"}
USAGE = "usage: python clcg_pipeline/orchestration/dev.py COMMAND [ARGS...]  (e.g. .venv/bin/dagster dev)"


def group_alive(pgid: int) -> bool:
    """True while any process (a zombie included) is in process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's processes took the id since: nothing of ours is left
    return True


def _group(pgid: int) -> list[int]:
    """The processes of group ``pgid``, from /proc (Linux; elsewhere only its leader)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return [pgid]
    members = []
    for entry in proc.iterdir():
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            continue  # not a process, or gone
        fields = stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and brackets
        if len(fields) > 2 and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []  # gone


def _is_log_helper(pid: int) -> bool:
    """A run's log helper: ``tail`` or ``watch_orphans.py``, which its run ends by itself."""
    return any(os.path.basename(arg) in _LOG_HELPERS for arg in _argv(pid)[:2])


def _is_run(pid: int) -> bool:
    """A run's process (``dagster api execute_run``, its forks, a step's process): given until
    the bound, as it marks its run failed before it exits."""
    return any(arg in _RUN_COMMANDS for arg in _argv(pid)[:6])


def _is_code_server(pid: int) -> bool:
    """``dagster code-server start`` or ``dagster api grpc``: the daemon and the webserver call it."""
    argv = _argv(pid)[:6]
    return b"code-server" in argv or b"grpc" in argv


def _status(pid: int) -> dict[str, str]:
    """The fields of /proc/PID/status (``State``, ``SigIgn``, ``SigCgt``...); empty if gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    return {key: value.strip() for key, _, value in (line.partition(":") for line in text.splitlines())}


def _has(status: dict[str, str], mask: str, signum: int) -> bool:
    """Whether ``signum`` is in the signal mask ``mask`` (``SigIgn``, ``SigCgt``) of ``status``."""
    return bool(int(status.get(mask) or "0", 16) >> (signum - 1) & 1)


def _live(status: dict[str, str]) -> bool:
    """Neither gone nor a zombie (it has exited; its parent has yet to reap it)."""
    return bool(status) and not status.get("State", "Z").startswith("Z")


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or not ours
            os.kill(pid, signum)


def _callers(pgid: int, members: list[int]) -> list[int]:
    """The live ``members`` of group ``pgid`` that may call a code server: the webserver, the
    daemon, any other service. Not the leader (it exits once its children have), the runs and
    their log helpers, the code servers, nor what ignores Ctrl-C (multiprocessing's resource
    tracker, which ends when the process that started it does)."""
    found = []
    for pid in members:
        if pid == pgid or _is_run(pid) or _is_log_helper(pid) or _is_code_server(pid):
            continue
        status = _status(pid)
        if _live(status) and not _has(status, "SigIgn", signal.SIGINT):
            found.append(pid)
    return found


class _Stop:
    """The stop of one group, in steps that each poll of ``stop_group`` takes:

    - Ctrl-C, once, to every process of the group but the run workers' log helpers (which
      printed a traceback each; their run ends them), the code servers only once their callers
      are gone: stopped under a daemon still evaluating its sensors, they made it log
      tracebacks, and ``dagster dev`` restarted one that had exited, which then, never
      interrupted, kept the stop waiting for the kill after ``STOP_S`` (45 s). A process that
      appears during the stop gets its Ctrl-C too.
    - SIGTERM to each process that has begun to exit: idle, ``dagster dev``'s processes logged
      their shutdown within seconds of Ctrl-C, then took as long again each to free their
      memory. A Python process no longer handles Ctrl-C once its last Python code has run (the
      interpreter's exit flushes its output, runs its ``atexit`` functions, then gives the
      signals back to the system): SIGTERM ends it there, with nothing left to lose.
    """

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self.started = time.monotonic()
        self.interrupted: set[int] = set()
        self.handling: dict[int, list[bytes]] = {}  # pid: its command, seen handling Ctrl-C
        self.ended: set[int] = set()
        self.step()

    def step(self) -> None:
        members = _group(self.pgid)
        self._end_exiting(members)  # first: the first step notes who handles Ctrl-C
        callers = _callers(self.pgid, members)
        for pid in members:
            if pid in self.interrupted or _is_log_helper(pid) or (callers and _is_code_server(pid)):
                continue
            self.interrupted.add(pid)
            _signal([pid], signal.SIGINT)

    def _end_exiting(self, members: list[int]) -> None:
        for pid in members:
            if not (_is_run(pid) or _is_log_helper(pid)):
                self._end_if_exiting(pid)

    def _end_if_exiting(self, pid: int) -> None:
        """SIGTERM to ``pid`` if it handled Ctrl-C before and no longer does, the same command
        (a process that has just replaced its program, ``exec``, handles nothing yet)."""
        status = _status(pid)
        if not _live(status) or pid in self.ended:
            return
        argv = _argv(pid)
        if _has(status, "SigCgt", signal.SIGINT):
            self.handling[pid] = argv
        elif self.handling.get(pid) == argv:
            self.ended.add(pid)
            _signal([pid], signal.SIGTERM)


def stop_group(pgid: int, stop_s: float = STOP_S) -> bool:
    """Ctrl-C to the group, its code servers after their callers, SIGTERM to each process that
    has begun to exit (``_Stop``), and SIGKILL to whatever of the group is left after
    ``stop_s``. True if it stopped without the SIGKILL."""
    stop = _Stop(pgid)
    while group_alive(pgid):
        if time.monotonic() - stop.started >= stop_s:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            return False
        stop.step()
        time.sleep(_POLL_S)
    return True


def guard(pgid: int) -> int:
    """Wait for end of file on stdin (the launcher is done), then stop group ``pgid``."""
    # In a session of its own no terminal signal reaches it; these too, to be sure.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):
        pass  # the launcher never writes: this waits for end of file
    return 0 if stop_group(pgid) else 1


class _Interrupted(Exception):
    """A stop signal (its number the only argument) reached the launcher."""


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise _Interrupted(signum)


class Guard:
    """A guard process (this file, ``--guard PGID``, in a session of its own) that stops process
    group ``pgid`` (``stop_group``) once ``release`` is called or this process dies, ``kill -9``
    included: its stdin is a pipe whose write end only this process holds (not inheritable), so
    the guard reads end of file either way. Standard library only: ``make dev``'s launcher, the
    daemon of the tests (``LocalDaemon``) and the benchmarks' servers use it alike."""

    def __init__(self, pgid: int) -> None:
        read_end, self._write_end = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--guard", str(pgid)],
                stdin=read_end,
                start_new_session=True,  # no signal of the terminal's reaches it
            )
        except BaseException:
            os.close(self._write_end)
            raise
        finally:
            os.close(read_end)
        self._released = False

    def release(self) -> None:
        """The guard's cue: stop the group now (at once, if it is already empty)."""
        if not self._released:
            self._released = True
            os.close(self._write_end)

    def wait(self, timeout_s: float = STOP_S + _GUARD_SLACK_S) -> None:
        """``release``, then wait for the guard to be done (the group stopped) at most ``timeout_s``."""
        self.release()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout_s)


def _start(command: list[str]) -> tuple[subprocess.Popen[bytes], Guard]:
    """``command`` in a session of its own, and its guard."""
    process = subprocess.Popen(command, start_new_session=True)
    try:
        return process, Guard(process.pid)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        raise


def _wait_for_stop(process: subprocess.Popen[bytes], watcher: Guard) -> None:
    """Reap the command as it exits (a zombie would stay in its group, which the guard waits to
    see empty) until the guard is done."""
    deadline = time.monotonic() + STOP_S + _GUARD_SLACK_S
    while watcher.process.poll() is None and time.monotonic() < deadline:
        process.poll()
        time.sleep(_POLL_S)
    process.poll()


def _name(command: list[str]) -> str:
    """``dagster dev`` for ``.venv/bin/dagster dev -w workspace.yaml``."""
    words = [os.path.basename(command[0])]
    if len(command) > 1 and not command[1].startswith("-"):
        words.append(command[1])
    return " ".join(words)


def main(argv: list[str] | None = None) -> int:
    command = sys.argv[1:] if argv is None else argv
    if len(command) == 2 and command[0] == "--guard":
        return guard(int(command[1]))
    if not command:
        print(USAGE, file=sys.stderr)
        return 2
    previous = {signum: signal.getsignal(signum) for signum in _STOP_SIGNALS}
    try:
        return _run(command)
    except OSError as error:  # not found, not executable: say so, no traceback
        print(f"cannot start {command[0]}: {error.strerror or error}", file=sys.stderr)
        return 127
    finally:
        for signum, handler in previous.items():  # (main may run inside another program)
            if handler is not None:
                signal.signal(signum, handler)


def _run(command: list[str]) -> int:
    """Run ``command`` until it exits or a stop signal comes; its exit status, or 128 + the
    signal's number (130 for Ctrl-C, as a shell says it)."""
    process, watcher = _start(command)
    stopped_by: int | None = None
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _interrupt)
    try:
        status = process.wait()
    except _Interrupted as signalled:
        stopped_by = signalled.args[0]
        status = 128 + stopped_by
    # One Ctrl-C is enough; another one during the stop must not cut it short.
    for signum in _STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    watcher.release()  # stop the group (at once, if the command has exited)
    _wait_for_stop(process, watcher)
    if stopped_by is not None:
        why = "Ctrl-C" if stopped_by == signal.SIGINT else signal.Signals(stopped_by).name
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) takes no line
            print(f"{_name(command)}: stopped ({why})", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
