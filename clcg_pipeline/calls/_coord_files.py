"""Coordination through kernel file locks, for the processes of one host (or a shared folder).

The default backend of ``calls._coord`` (PostgreSQL is the other, for several hosts).

Three things hold across processes, not only inside one run:

* a **claim** on a call in flight: the first process to miss the cache for a call id locks
  a byte of ``claims.lock`` named by the id; another process that misses the same call
  waits for the holder's cache entry instead of paying for it again;
* the model's **concurrency limit**: ``slots/<model key>/<n>.lock`` files, one per allowed
  request in flight, shared by every process calling that model;
* the **study budget**: ``spend.jsonl``, an append-only ledger of reservations and actual
  costs of new calls, read and appended under a lock, so a budget in study.yaml binds
  whoever launches the runs (``clcg run``, the UI, a backfill, the daemon).

All three are kernel file locks on files under ``<cache>/_coord`` (or ``$CLCG_COORD_DIR``),
so a dead holder's locks go with its process: a killed run leaves no claim or slot that others
must guess is stale. Its reservations are charged, not dropped: a request it had sent may still
be answered, and billed, after its death (:class:`SpendLedger`).

Written on ``fcntl`` directly, not filelock or portalocker: those lock whole files, one file
per lock, and a claim per call as a file costs a create and an unlink (~0.5 ms each on overlay
filesystems) where a byte-range lock costs two system calls. The locks work on local disks and
NFS; an object-store cache (``s3://``) has none, so its processes coordinate in a folder of this
host unless ``CLCG_COORD_DIR`` names a folder every host shares (or the hosts share a PostgreSQL
database: docs/DEPLOY.md, section 3).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import random
import resource
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

COORD_ENV = "CLCG_COORD_DIR"
# A reservation whose process cannot be checked (another host) counts against the budget for
# this long at most: long enough for any call with its retries, short enough to free a budget
# that a crashed worker on another host held.
RESERVATION_TTL_S = 3600.0
_HOST = socket.gethostname()


def coord_root(cache_dir: str) -> Path | None:
    """The coordination folder for a cache: ``$CLCG_COORD_DIR``, else ``<cache>/_coord`` when local.

    An object-store cache (``s3://``) has no file locks, so its coordination lives in a folder
    of this host keyed by the cache URL: the processes of one host (``clcg run``'s workers, the
    daemon's runs) then never pay a call twice. Several hosts need ``$CLCG_COORD_DIR`` on a
    folder they all share (docs/DEPLOY.md).
    """
    override = os.environ.get(COORD_ENV)
    if override:
        return Path(override)
    if "://" in cache_dir and not cache_dir.startswith("file://"):
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return base / "clcg" / "coord" / hashlib.sha256(cache_dir.encode()).hexdigest()[:16]
    return Path(cache_dir.removeprefix("file://")) / "_coord"


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def raise_fd_limit(wanted: int) -> None:
    """Claims hold one descriptor each while a call is in progress; make room for them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        new = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))


@dataclass
class Claim:
    call_id: str
    key: int  # the byte locked in claims.lock here; the advisory lock key in the PostgreSQL backend


# POSIX record locks belong to the process, not to a descriptor, and closing any descriptor of
# the file drops them all: so one descriptor per claims file for the whole process, and a set
# of the call ids this process holds (two tasks or threads of one process never share a claim).
_CLAIM_FILES: dict[Path, int] = {}
_HELD: set[tuple[Path, str]] = set()
_REGISTRY = threading.Lock()


class CallClaims:
    """Claims on calls in flight: a one-byte record lock per call id in one shared file.

    A byte at an offset drawn from the call id (60 bits of it) stands for the call, so a claim
    creates no file: taking and dropping one is two system calls, which matters at hundreds of
    calls a second. A claim dies with its process (the kernel drops the lock).
    """

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / "claims.lock"
        with _REGISTRY:
            if self.path not in _CLAIM_FILES:
                _CLAIM_FILES[self.path] = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._fd = _CLAIM_FILES[self.path]

    def try_claim(self, call_id: str) -> Claim | None:
        """The claim, or None while another process, or another task of this one, holds it."""
        key = (self.path, call_id)
        offset = int(call_id[:15], 16)
        with _REGISTRY:
            if key in _HELD:
                return None
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    return None
                raise
            _HELD.add(key)
        return Claim(call_id, offset)

    def release(self, claim: Claim) -> None:
        with _REGISTRY:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, claim.key, os.SEEK_SET)
            _HELD.discard((self.path, claim.call_id))


class SharedSlots:
    """At most ``size`` requests in flight for one model, across every process using ``root``.

    Each process also keeps to its fair share (``size`` / processes using the model, counted
    from their membership locks): flock has no queue, so a process whose own tasks retake each
    slot the moment it frees would otherwise starve another process polling for one.
    """

    def __init__(self, root: Path, key: str, size: int) -> None:
        folder = root / "slots" / key[:24]
        self._members = folder / "members"
        self._members.mkdir(parents=True, exist_ok=True)
        self.size = size
        self._fds = [os.open(folder / f"{i}.lock", os.O_RDWR | os.O_CREAT, 0o644) for i in range(size)]
        self._held: set[int] = set()
        # Locked before it is visible under its final name, so a locked file is a live member.
        tmp = self._members / f".{uuid.uuid4().hex}.tmp"
        self._member_fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(self._member_fd, fcntl.LOCK_EX)
        self._member = self._members / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.lock"
        os.replace(tmp, self._member)
        self._share = size
        self._share_at = 0.0
        self.waits = 0

    def _live_members(self) -> int:
        live = 1
        for path in self._members.glob("*.lock"):
            if path == self._member:
                continue
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue
            try:
                if _try_lock(fd):  # its process is gone: tidy up
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                else:
                    live += 1
            finally:
                os.close(fd)
        return live

    def share(self) -> int:
        now = time.monotonic()
        if now - self._share_at > 0.25:
            self._share = max(1, -(-self.size // self._live_members()))
            self._share_at = now
        return self._share

    async def acquire(self) -> int:
        delay = 0.002
        while True:
            if len(self._held) < self.share():
                start = random.randrange(self.size)
                for k in range(self.size):
                    i = (start + k) % self.size
                    # flock on a descriptor this process already locked would succeed again.
                    if i not in self._held and _try_lock(self._fds[i]):
                        self._held.add(i)
                        return i
            # Slots are busy elsewhere, or this process has its share: poll (flock cannot be
            # awaited), backing off.
            self.waits += 1
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    def release(self, slot: int) -> None:
        self._held.discard(slot)
        fcntl.flock(self._fds[slot], fcntl.LOCK_UN)

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        with contextlib.suppress(FileNotFoundError):
            self._member.unlink()
        os.close(self._member_fd)


WAIT = "wait"  # SpendLedger.reserve: not now, ask again when reservations in flight settle


@dataclass
class _LedgerState:
    offset: int = 0
    spent: float = 0.0
    # reservation id -> (usd, host, pid, time)
    reserved: dict[str, tuple[float, str, int, float]] = field(default_factory=dict)
    # reservation id -> usd: reservations of processes that died before settling them
    charged: dict[str, float] = field(default_factory=dict)
    # reservation id -> call id, for reservations that name their call (``reserve(call_id=)``)
    calls: dict[str, str] = field(default_factory=dict)
    # reservations settled from the cache after their process died (:meth:`SpendLedger.settle_charged`):
    # a settle of one of them that comes later anyway adds nothing (counted once)
    swept: set[str] = field(default_factory=set)


def _alive(host: str, pid: int, t: float, now: float) -> bool:
    if host == _HOST:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return now - t < RESERVATION_TTL_S


def _settle_line(rid: str | None, usd: float, model: str, call_id: str) -> dict[str, object]:
    line: dict[str, object] = {"op": "settle", "usd": usd, "model": model, "call_id": call_id}
    if rid:
        line["id"] = rid
    return line


class SpendLedger:
    """The study's spend: an append-only JSON-lines file, read incrementally under ``flock``.

    Lines are ``reserve`` (an estimate before a call is sent), ``settle`` (its actual cost,
    which also ends the reservation), ``release`` (a reservation not spent) and ``charge`` (a
    reservation whose process died before settling it). A killed process's requests in flight
    may still be answered, and billed, with no process left to record them: so the first reader
    to find such a reservation charges it, for good, as spend "in flight when its process died"
    (an upper bound of those bills). The budget counts it like spend; :meth:`totals` keeps it
    apart (:meth:`charged_at_death`), since it is not what the provider's answers said. A
    ``settle`` or ``release`` that comes later (a call on another host that outlived
    :data:`RESERVATION_TTL_S`) replaces the charge. A process that died after caching an
    answer but before settling it was billed that answer's cost: a reservation names its call,
    the cache entry names its reservation, and :meth:`settle_charged` replaces such a charge by
    the real cost (a ``settle`` marked ``swept``: once, whoever else settles it later).
    """

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / "spend.jsonl"
        self._state = _LedgerState()
        self._pid = os.getpid()
        self._handle: IO[bytes] | None = None

    def _file(self) -> IO[bytes]:
        # One handle for the run: a call's settle line costs a lock and one write, no open().
        if self._handle is None:
            self._handle = open(self.path, "a+b")  # noqa: SIM115 (closed by close())
        return self._handle

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    @contextlib.contextmanager
    def _locked(self, *, read: bool = True) -> Iterator[IO[bytes]]:
        handle = self._file()
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)  # held for microseconds: a read and an append
        try:
            if read:
                self._catch_up(handle)
            yield handle
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _catch_up(self, handle: IO[bytes]) -> None:
        state = self._state
        handle.seek(state.offset)
        data = handle.read()
        end = data.rfind(b"\n") + 1  # a line still being written (impossible under the lock) waits
        for raw in data[:end].splitlines():
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                log.warning("%s: unreadable ledger line skipped: %r", self.path, raw[:80])
                continue
            op = line.get("op")
            if op == "reserve":
                state.reserved[line["id"]] = (float(line["usd"]), line["host"], int(line["pid"]), line["t"])
                if line.get("call_id"):
                    state.calls[line["id"]] = line["call_id"]
            elif op in ("settle", "release"):
                rid = line.get("id", "")
                state.reserved.pop(rid, None)
                state.charged.pop(rid, None)
                state.calls.pop(rid, None)
                if op == "settle" and rid not in state.swept:  # a swept charge is settled once
                    state.spent += float(line["usd"])
                if line.get("swept"):
                    state.swept.add(rid)
            elif op == "charge" and line["id"] in state.reserved:
                state.reserved.pop(line["id"])
                state.charged[line["id"]] = float(line["usd"])
        state.offset += end

    def _charge_dead(self, handle: IO[bytes], now: float) -> None:
        """Charge the reservations of dead processes (under the lock), then read the charges back."""
        dead = [
            (rid, usd, host, pid)
            for rid, (usd, host, pid, t) in self._state.reserved.items()
            if not _alive(host, pid, t, now)
        ]
        if not dead:
            return
        for rid, usd, host, pid in dead:
            line = {"op": "charge", "id": rid, "usd": usd, "host": host, "pid": pid, "why": "died", "t": now}
            self._append(handle, line)
        self._catch_up(handle)

    def _append(self, handle: IO[bytes], line: dict[str, object]) -> None:
        data = (json.dumps(line, sort_keys=True) + "\n").encode()
        handle.seek(0, os.SEEK_END)
        handle.write(data)
        handle.flush()  # the offset stays: the next read parses this line like any other

    def totals(self) -> tuple[float, float]:
        """(spent as the answers' costs, reserved by live processes), as of now.

        The first figure is what the answers recorded; what dead processes held is
        :meth:`charged_at_death`, apart.
        """
        now = time.time()
        with self._locked() as handle:
            self._charge_dead(handle, now)
            return self._state.spent, self._outstanding()

    def charged_at_death(self) -> float:
        """What reservations of processes that died before settling them hold, for good."""
        with self._locked() as handle:
            self._charge_dead(handle, time.time())
            return sum(self._state.charged.values())

    def _outstanding(self) -> float:
        return sum(u for u, _, _, _ in self._state.reserved.values())

    def charged_calls(self) -> dict[str, str]:
        """Reservation id -> call id of the charged reservations that name their call: those
        whose answer a rerun may find in the cache (:func:`calls._coord.settle_from_cache`)."""
        with self._locked() as handle:
            self._charge_dead(handle, time.time())
            return {rid: self._state.calls[rid] for rid in self._state.charged if rid in self._state.calls}

    def settle_charged(self, lines: Sequence[tuple[str, float, str, str]]) -> float:
        """Settle charged reservations at their answers' real costs (reservation id, usd, model,
        call id), each only while it is still charged: under the lock, so two processes doing
        it at once (or one twice) count it once. What was settled, in USD."""
        now, settled = time.time(), 0.0
        with self._locked() as handle:
            self._charge_dead(handle, now)
            for rid, usd, model, call_id in {line[0]: line for line in lines}.values():
                if rid in self._state.charged:
                    self._append(handle, {**_settle_line(rid, usd, model, call_id), "swept": True, "t": now})
                    settled += usd
            self._catch_up(handle)
        return settled

    def reserve(self, usd: float, limit: float, *, call_id: str = "") -> str | None:
        """A reservation id; None when spent (charged at death included) + ``usd`` would exceed
        ``limit``. ``call_id`` names the call it is for: should its process die after caching
        the answer, the charge is settled from the cache (:meth:`settle_charged`).

        :data:`WAIT` when only live reservations stand in the way: calls in flight may cost less
        than reserved, so the caller should ask again once they settle.
        """
        now = time.time()
        with self._locked() as handle:
            self._charge_dead(handle, now)
            spent = self._state.spent + sum(self._state.charged.values())
            if spent + usd > limit:
                return None
            if spent + self._outstanding() + usd > limit:
                return WAIT
            rid = uuid.uuid4().hex
            line: dict[str, object] = {
                "op": "reserve",
                "id": rid,
                "usd": usd,
                "host": _HOST,
                "pid": self._pid,
            }
            if call_id:
                line["call_id"] = call_id
            self._append(handle, {**line, "t": now})
            return rid

    def settle(self, rid: str | None, usd: float, *, model: str = "", call_id: str = "") -> None:
        """Record a new call's actual cost (and end its reservation, if it had one)."""
        line = _settle_line(rid, usd, model, call_id)
        with self._locked(read=False) as handle:  # appending needs no view of the others
            self._append(handle, {**line, "t": time.time()})

    def settle_many(self, lines: Sequence[tuple[str | None, float, str, str]]) -> None:
        """:meth:`settle` for several calls (reservation id, usd, model, call id): one lock, one write."""
        if not lines:
            return
        now = time.time()
        data = b"".join(
            (json.dumps({**_settle_line(rid, usd, model, call_id), "t": now}, sort_keys=True) + "\n").encode()
            for rid, usd, model, call_id in lines
        )
        with self._locked(read=False) as handle:
            handle.seek(0, os.SEEK_END)
            handle.write(data)
            handle.flush()

    def release(self, rid: str) -> None:
        with self._locked() as handle:
            self._append(handle, {"op": "release", "id": rid, "t": time.time()})
