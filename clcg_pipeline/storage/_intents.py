"""The record of calls sent whose answer may never be cached: one intent log per process.

A provider bills a request when it arrives, answered or not to a client still listening. A
process killed (kill -9) while calls are in flight, or after an answer arrived but before it
was cached, leaves calls the provider billed and no calls table nor cache entry holds. So
before each HTTP request the call runner appends one line to its process's log
(``<cache>/_intents/<host>-<pid>-<id>.log``, one plain ``os.write`` on an ``O_APPEND``
descriptor: what was written survives the process's death), and one line when the call's
answer is cached or its attempt ended without one. The process holds an exclusive ``flock`` on
its log while it lives, so a reader tells a dead process's log (the lock is free) from one
still sending.

A dead log's calls whose last send is neither answered nor ended are the calls lost at the
kill (:func:`lost_at_kill`): one row each, outcome :data:`LOST_OUTCOME`, paid by the run the
line names. A call whose answer the dead process did cache (its entry names the log:
``sent_by``) is a payment already on record, never counted again. The cost of a lost call is
an estimate: the usage of the same call's answer, should it since be cached (a rerun that sent
it again), else the worst case the runner reserved for it (only a run with a budget computes
one), else unknown ($0, said in the row's ``error``).

A local cache keeps its intent logs in its folder. An object store has no appends nor locks,
so an object-store cache's (``s3://``) are kept on the host that sends, in the folder where
its processes coordinate through file locks (``calls/_coord_files.py``'s ``coord_root``):
``$CLCG_COORD_DIR/_intents``, else ``~/.cache/clcg/coord/<hash of the cache URL>/_intents``
(:func:`intents_folder`). The spend built on that host counts its lost calls; another host
sharing the data folder does not see them (its record lacks the calls this host lost).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

log = logging.getLogger(__name__)

INTENTS_DIR = "_intents"  # in the call cache's folder (not two hex digits: no cache reader lists it)
# calls/_coord_files.py's COORD_ENV (storage cannot import calls): a host's coordination folder.
COORD_DIR_ENV = "CLCG_COORD_DIR"
LOST_OUTCOME = "lost_at_kill"
LOST_TABLE = "killed run"  # the spend view's calls_table of a lost call
LOST_STEP = "in flight when its run was killed"
SENT_BY = "sent_by"  # the cache entry's field naming the intent log of the process that cached it
ESTIMATED_FROM_ANSWER = "cost estimated: usage of the same call's answer, cached later"
ESTIMATED_WORST_CASE = "cost estimated: the worst case reserved for it (no answer cached since)"
COST_UNKNOWN = "cost unknown: no answer cached since and no budget estimate ($0 counted)"


def _remote(cache_root: str) -> bool:
    return "://" in cache_root and not cache_root.startswith("file://")


def intents_folder(cache_root: str | os.PathLike[str]) -> Path:
    """Where the intent logs of the cache ``cache_root`` are kept on this host: in a local
    cache's folder; for an object-store cache, in this host's coordination folder for it (as
    ``calls._coord_files.coord_root`` picks it: ``$CLCG_COORD_DIR``, else a folder of the
    user's cache keyed by the cache URL)."""
    root = os.fspath(cache_root)
    if not _remote(root):
        return Path(root.removeprefix("file://")) / INTENTS_DIR
    override = os.environ.get(COORD_DIR_ENV)
    if override:
        return Path(override) / INTENTS_DIR
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "clcg" / "coord" / hashlib.sha256(root.rstrip("/").encode()).hexdigest()[:16] / INTENTS_DIR


class IntentLog:
    """This process's intent log for the cache ``cache_root`` (in :func:`intents_folder`),
    opened at the first send."""

    def __init__(self, cache_root: str | os.PathLike[str]) -> None:
        self.folder = intents_folder(cache_root)
        self.token = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._fd: int | None = None
        self._open: set[str] = set()  # sent, neither answered nor ended: what a kill now would lose
        self._path = self.folder / f"{self.token}.log"
        self._failed = False  # the log could not be written: calls go on without it

    def _opened(self) -> int:
        if self._fd is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            hidden = self.folder / f".{self.token}.new"
            fd = os.open(hidden, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            # Held while this process lives: a reader taking it knows the process is gone. Taken
            # before the log is in view under its name: a reader never finds it unlocked.
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(hidden, self._path)
            self._fd = fd
        return self._fd

    def _append(self, record: dict[str, Any]) -> None:
        if self._failed:
            return
        try:
            # One unbuffered write per line: nothing waits in a buffer that a kill -9 would lose.
            os.write(self._opened(), json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
        except OSError as exc:  # a full disk, say: the calls go on, said once, unnoted
            self._failed = True
            log.warning(
                "intent log %s not written (%s): calls sent from now on are not noted, so a kill -9 "
                "may leave calls the provider billed out of the spend record",
                self._path,
                exc,
            )

    def sent(self, call_id: str, model_id: str, paid_run: str, paid_for: str | None, estimate: float) -> None:
        """Before the request leaves: the call, whom it is paid by and for, its worst case (0: none)."""
        record = {"s": call_id, "m": model_id, "r": paid_run, "p": paid_for, "t": time.time()}
        if estimate:
            record["u"] = estimate
        self._append(record)
        self._open.add(call_id)

    def answered(self, call_ids: Iterable[str]) -> None:
        """The answers of ``call_ids`` are in the cache (they are payments on record)."""
        ids = [call_id for call_id in call_ids if call_id in self._open]
        if ids:
            self._append({"a": ids})
            self._open.difference_update(ids)

    def ended(self, call_id: str) -> None:
        """The attempt ended with no answer to cache (an error, a timeout): nothing is lost."""
        if call_id in self._open:
            self._append({"e": [call_id]})
            self._open.discard(call_id)

    def close(self) -> None:
        """Close the log (its lock goes with it); a log whose calls all ended is removed."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if not self._open:  # nothing a reader would count: the log need not stay
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path)
        os.close(fd)


def _dead(path: Path) -> bool:
    """Whether the process writing ``path`` is gone (its lock is free)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock taken, if any
    return True


def _open_sends(path: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """The sends of a log with no answer or end after them, by call id (the last send of each),
    and the log's lines."""
    open_sends: dict[str, dict[str, Any]] = {}
    number = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, 1):
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                # A line cut by the kill: only a send could be cut (its call never reached the wire).
                log.warning("intent log %s line %d is not a record: not counted", path, number)
                continue
            if not isinstance(record, dict):
                continue
            if isinstance(record.get("s"), str):
                open_sends[record["s"]] = record
            for call_id in [*record.get("a", ()), *record.get("e", ())]:
                open_sends.pop(call_id, None)
    return open_sends, number


def _cached(cache_root: Path, call_id: str) -> dict[str, Any] | None:
    """The call cache's entry of ``call_id`` (``<id[:2]>/<id>.json``), if any."""
    try:
        entry = json.loads((cache_root / call_id[:2] / f"{call_id}.json").read_bytes())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return entry if isinstance(entry, dict) else None


def _lost_row(send: dict[str, Any], token: str, entry: dict[str, Any] | None) -> dict[str, Any]:
    """One lost call as a spend row (``storage/_paid.py``'s unrecorded rows' columns)."""
    if entry is not None:
        tokens_in, tokens_out = entry.get("input_tokens"), entry.get("output_tokens")
        cost, note = entry.get("cost_usd"), ESTIMATED_FROM_ANSWER
    else:
        tokens_in = tokens_out = None
        cost = send.get("u")
        note = ESTIMATED_WORST_CASE if cost else COST_UNKNOWN
    paid_for = send.get("p")
    return {
        "call_id": send["s"],
        "model": send.get("m"),
        "language": paid_for.split("|", 1)[0] if isinstance(paid_for, str) and "|" in paid_for else None,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost or 0.0,
        "outcome": LOST_OUTCOME,
        "error": note,
        "paid_run": send.get("r"),
        "paid_at": pd.Timestamp(send["t"], unit="s", tz="UTC")
        if isinstance(send.get("t"), int | float)
        else pd.NaT,
        "paid_host": token.rsplit("-", 2)[0],
        "partition": paid_for,
    }


CachedEntry = Callable[[str], dict[str, Any] | None]  # a call id's cache entry, if any


def lost_at_kill(
    cache_root: str | os.PathLike[str], cached: CachedEntry | None = None
) -> list[dict[str, Any]]:
    """The calls the dead processes of ``cache_root`` (on this host: :func:`intents_folder`)
    sent and never cached an answer for, one row per send (:func:`_lost_row`); a process still
    alive is not read. ``cached`` looks a call's entry up (an object-store cache's: its
    segments); a local cache's entry files are read by default."""
    folder = intents_folder(cache_root)
    if not folder.is_dir():
        return []
    if cached is None:
        root = Path(os.fspath(cache_root).removeprefix("file://"))
        cached = lambda call_id: _cached(root, call_id)  # noqa: E731
    rows = []
    for path in sorted(folder.glob("*.log")):
        if not _dead(path):
            continue
        token = path.stem
        sends, lines = _open_sends(path)
        lost = []
        for call_id, send in sends.items():
            entry = cached(call_id)
            if entry is not None and entry.get(SENT_BY) == token:
                continue  # cached by the dead process itself, before its answered line: on record
            lost.append(send)
            rows.append(_lost_row(send, token, entry))
        if len(lost) < lines:  # a log read before holds its lost sends alone
            _compact(path, lost)
    return rows


def _compact(path: Path, lost: list[dict[str, Any]]) -> None:
    """Leave in a dead log only its lost sends (none: no log), so the next read is short. Its
    process being gone, nobody writes it; two readers compacting write the same lines."""
    try:
        if not lost:
            path.unlink(missing_ok=True)
            return
        tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex[:8]}.tmp")
        tmp.write_bytes(
            b"".join(json.dumps(send, separators=(",", ":")).encode("utf-8") + b"\n" for send in lost)
        )
        os.replace(tmp, path)
    except OSError as exc:  # a read-only copy of the folder: read in full next time
        log.debug("intent log %s not compacted: %s", path, exc)


def sent_by(entry: dict[str, Any], log_: IntentLog | None) -> dict[str, Any]:
    """A cache entry naming the intent log of the process caching it (see :func:`lost_at_kill`)."""
    return entry if log_ is None else {**entry, SENT_BY: log_.token}
