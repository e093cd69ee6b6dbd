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
of the group but those helpers (``interrupt_group``: the run in flight still stops, marked
failed), and SIGKILL to what is left after ``STOP_S``.
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

# ``dagster dev`` stops its webserver, daemon and code servers, the run in flight its step:
# 15-25 s on a busy 2-core machine. Beyond this bound the group is killed (a run left STARTED).
STOP_S = 45.0
# The signals that stop the launcher (and so the command): Ctrl-C, kill, a closed terminal.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# Beyond the guard's own bound: how long the launcher waits for the guard at most.
_GUARD_SLACK_S = 10.0
_POLL_S = 0.1
# Started by a run worker to mirror its step logs; a Ctrl-C makes each print a traceback, and
# the worker ends them itself when its run stops (Dagster's ``compute_logs.py``).
_LOG_HELPERS = {b"watch_orphans.py", b"tail"}
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


def _is_log_helper(pid: int) -> bool:
    """A run's log helper: ``tail`` or ``watch_orphans.py``, which its run ends by itself."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(os.path.basename(arg) in _LOG_HELPERS for arg in argv[:2])


def interrupt_group(pgid: int) -> None:
    """Ctrl-C to every process of the group but the run workers' log helpers, as the terminal
    sent it before: the run in flight is stopped (not waited for by the code server)."""
    for pid in _group(pgid):
        if pid == pgid or not _is_log_helper(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or not ours
                os.kill(pid, signal.SIGINT)


def stop_group(pgid: int, stop_s: float = STOP_S) -> bool:
    """``interrupt_group``, then SIGKILL to whatever of the group is left after ``stop_s``.
    True if it stopped by itself."""
    interrupt_group(pgid)
    deadline = time.monotonic() + stop_s
    while group_alive(pgid):
        if time.monotonic() >= deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            return False
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


def _start(command: list[str]) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], int]:
    """``command`` in a session of its own, and its guard: (command, guard, the write end of the
    guard's pipe, which only this process holds)."""
    process = subprocess.Popen(command, start_new_session=True)
    read_end, write_end = os.pipe()  # not inheritable: neither child gets the write end
    try:
        watcher = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--guard", str(process.pid)],
            stdin=read_end,
            start_new_session=True,  # no signal of the terminal's reaches it
        )
    except BaseException:
        os.close(write_end)
        os.killpg(process.pid, signal.SIGKILL)
        raise
    finally:
        os.close(read_end)
    return process, watcher, write_end


def _wait_for_stop(process: subprocess.Popen[bytes], watcher: subprocess.Popen[bytes]) -> None:
    """Reap the command as it exits (a zombie would stay in its group, which the guard waits to
    see empty) until the guard is done."""
    deadline = time.monotonic() + STOP_S + _GUARD_SLACK_S
    while watcher.poll() is None and time.monotonic() < deadline:
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
    process, watcher, write_end = _start(command)
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
    os.close(write_end)  # the guard's cue: stop the group (at once, if the command has exited)
    _wait_for_stop(process, watcher)
    if stopped_by is not None:
        why = "Ctrl-C" if stopped_by == signal.SIGINT else signal.Signals(stopped_by).name
        with contextlib.suppress(OSError):  # a closed terminal (SIGHUP) takes no line
            print(f"{_name(command)}: stopped ({why})", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
