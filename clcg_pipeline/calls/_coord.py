"""Coordination between processes that share one call cache (several runs, workers or hosts).

Three things hold across processes, not only inside one run: a **claim** on a call in flight
(no call is paid twice), the model's **concurrency** from models.yaml (with a fair share per
process) and the **study budget** (reserve before a call, settle its cost after). Two backends
give them with one interface (docs/DEPLOY.md, section 3):

* kernel file locks (``_coord_files``), the default: the processes of one host, or of hosts
  sharing a folder with working locks;
* a PostgreSQL database (``_coord_postgres``): processes on any number of hosts.

:func:`coord_backend` chooses, first match wins:

1. ``CLCG_COORD_URL=postgresql://user:password@host:port/db``: that database
   (``CLCG_COORD_URL=files`` forces the file locks);
2. ``CLCG_COORD_DIR`` set: file locks in that folder;
3. ``$DAGSTER_HOME/dagster.yaml`` keeps the instance in PostgreSQL (``storage: postgres``, as
   dagster.postgres.yaml does): the same database, its ``{env: ...}`` settings resolved;
4. file locks under ``<cache>/_coord`` (a folder of this host for an ``s3://`` cache).

Every :class:`Coordinator` logs the choice (never the password); ``clcg run`` says it once
(:meth:`CoordBackend.line`) and every run carries it as the ``clcg/coordination`` tag.

File locks cannot coordinate hosts that share an ``s3://`` cache, nor a host with the runs of
a PostgreSQL instance: :func:`check_coordination` refuses such a cache before any call (a
PostgreSQL-coordinated run marks its cache, ``_meta/coordination.json``), unless
``CLCG_ALLOW_LOCAL_COORD=1`` accepts the risk of paying for a call twice.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import yaml
from upath import UPath

from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord_files import (
    COORD_ENV,
    WAIT,
    CallClaims,
    Claim,
    SharedSlots,
    SpendLedger,
    coord_root,
    raise_fd_limit,
)
from clcg_pipeline.calls._coord_postgres import (
    PgCallClaims,
    PgSettings,
    PgSharedSlots,
    PgSpendLedger,
    settings_from_url,
)

__all__ = [
    "ALLOW_LOCAL_ENV",
    "COORDINATION_TAG",
    "COORD_ENV",
    "COORD_URL_ENV",
    "WAIT",
    "CallClaims",
    "Claim",
    "Claims",
    "CoordBackend",
    "CoordinationRefused",
    "Coordinator",
    "Ledger",
    "SharedSlots",
    "Slots",
    "SpendLedger",
    "check_coordination",
    "coord_backend",
    "coord_root",
    "coordination_tags",
    "open_ledger",
    "settle_from_cache",
]

log = logging.getLogger(__name__)

COORD_URL_ENV = "CLCG_COORD_URL"
FILES = "files"  # CLCG_COORD_URL=files: file locks even when dagster.yaml uses PostgreSQL
# Opting in to file locks on a shared cache (s3://, or one a PostgreSQL-coordinated run wrote).
ALLOW_LOCAL_ENV = "CLCG_ALLOW_LOCAL_COORD"
COORDINATION_TAG = "clcg/coordination"  # the run tag: "postgresql" or "files"
MARKER = "_meta/coordination.json"  # in the cache (beside its side records): by PostgreSQL runs
_MARKED: set[str] = set()  # caches this process has marked (one write each)
_MARK_LOCK = threading.Lock()


class CoordinationRefused(RuntimeError):
    """The cache is shared, but this process would coordinate through local file locks."""


class Claims(Protocol):
    def try_claim(self, call_id: str) -> Claim | None: ...
    def release(self, claim: Claim) -> None: ...


class Slots(Protocol):
    size: int
    waits: int

    async def acquire(self) -> int: ...
    def release(self, slot: int) -> None: ...
    def close(self) -> None: ...


class Ledger(Protocol):
    def totals(self) -> tuple[float, float]: ...
    def charged_at_death(self) -> float: ...
    def charged_calls(self) -> dict[str, str]: ...
    def settle_charged(self, lines: Sequence[tuple[str, float, str, str]]) -> float: ...
    def reserve(self, usd: float, limit: float, *, call_id: str = "") -> str | None: ...
    def settle(self, rid: str | None, usd: float, *, model: str = "", call_id: str = "") -> None: ...
    def settle_many(self, lines: Sequence[tuple[str | None, float, str, str]]) -> None: ...
    def release(self, rid: str) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class CoordBackend:
    """Where a cache's processes coordinate: a folder (``root``) or a database (``pg``)."""

    cache_dir: str
    root: Path | None
    pg: PgSettings | None
    reason: str  # which setting chose it, for the log line
    #: Why the cache is shared, when file locks were opted in on it anyway (ALLOW_LOCAL_ENV).
    opted_in: str | None = None

    @property
    def scope(self) -> str:
        """The cache as every host names it: claims and the budget are kept per cache."""
        if "://" in self.cache_dir and not self.cache_dir.startswith("file://"):
            return self.cache_dir.rstrip("/")
        return str(Path(self.cache_dir.removeprefix("file://")).resolve())

    def describe(self) -> str:
        if self.pg is not None:
            return f"PostgreSQL {self.pg.describe()} for cache {self.scope} ({self.reason})"
        return f"file locks in {self.root} ({self.reason})"

    @property
    def kind(self) -> str:
        """``postgresql`` or ``files``: the value of the ``clcg/coordination`` run tag."""
        return "postgresql" if self.pg is not None else FILES

    def line(self) -> str:
        """The one line a run says about how it coordinates."""
        if self.pg is not None:
            return f"coordination: the PostgreSQL instance {self.pg.describe()} (from {self.reason})"
        line = f"coordination: local file locks in {self.root} ({self.reason}; one host only)"
        if self.opted_in is not None:
            # The two-host bench found an opted-in host spending 1.9x the study budget: its
            # ledger is its own, so it never saw what the other hosts had spent.
            line += (
                f"; {ALLOW_LOCAL_ENV}=1 although {self.opted_in}: claims and the study budget "
                "count this host's calls only, not what other hosts paid"
            )
        return line


def _remote(cache_dir: str) -> bool:
    return "://" in cache_dir and not cache_dir.startswith("file://")


def _marker_of(cache_dir: str) -> dict[str, Any] | None:
    """The cache's coordination marker, if a PostgreSQL-coordinated run wrote one."""
    path = UPath(cache_dir) / MARKER
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CoordinationRefused(f"{path}: unreadable coordination marker ({exc})") from None
    return found if isinstance(found, dict) else None


def _mark(backend: CoordBackend) -> None:
    """Say in the cache that its runs coordinate through PostgreSQL (once per process and cache)."""
    assert backend.pg is not None
    with _MARK_LOCK:
        if backend.scope in _MARKED:
            return
        path = UPath(backend.cache_dir) / MARKER
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            marker = {"coordination": "postgresql", "database": backend.pg.describe()}
            path.write_text(json.dumps(marker), encoding="utf-8")
        _MARKED.add(backend.scope)


def _shared(backend: CoordBackend) -> str | None:
    """Why file locks cannot coordinate this cache's runs, or None when they can."""
    if _remote(backend.cache_dir):
        return f"the call cache {backend.cache_dir} is shared (a remote URL)"
    marker = _marker_of(backend.cache_dir)
    if marker is not None and marker.get("coordination") == "postgresql":
        database = marker.get("database", "a PostgreSQL instance")
        return f"the call cache {backend.cache_dir} was written by runs coordinated through {database}"
    return None


def check_coordination(cache_dir: str) -> CoordBackend:
    """The backend for a cache, refusing file locks on a shared cache unless opted in.

    A PostgreSQL backend marks the cache, so a later host with file locks is refused too.
    """
    backend = coord_backend(cache_dir)
    if backend.pg is not None:
        _mark(backend)
        return backend
    why = _shared(backend)
    if why is not None and os.environ.get(ALLOW_LOCAL_ENV, "") not in ("1", "true", "yes"):
        raise CoordinationRefused(
            f"{why}, but this host coordinates through local file locks ({backend.reason}), so "
            "two hosts could pay for one call twice: give every host the shared PostgreSQL "
            "instance (DAGSTER_HOME holding dagster.postgres.yaml as dagster.yaml, or "
            f"{COORD_URL_ENV}=postgresql://...), or set {ALLOW_LOCAL_ENV}=1 if only this host "
            "uses it (docs/DEPLOY.md)"
        )
    return backend if why is None else replace(backend, opted_in=why)


def _resolve(value: Any, path: Path, where: str) -> str:
    """A dagster.yaml value: a literal, or ``{env: NAME}`` read from the environment."""
    if isinstance(value, dict) and set(value) == {"env"}:
        name = str(value["env"])
        if name not in os.environ:
            raise ValueError(f"{path}: {where} reads ${name}, which is not set")
        return os.environ[name]
    if value is None:
        raise ValueError(f"{path}: {where} is missing")
    return str(value)


def dagster_postgres(path: Path) -> PgSettings | None:
    """The PostgreSQL settings of a Dagster instance file, or None when it keeps no PostgreSQL storage."""
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({exc})") from None
    storage = config.get("storage") if isinstance(config, dict) else None
    pg = storage.get("postgres") if isinstance(storage, dict) else None
    if not isinstance(pg, dict):
        return None
    source = f"{path} storage.postgres"
    if "postgres_url" in pg:
        return settings_from_url(_resolve(pg["postgres_url"], path, "storage.postgres.postgres_url"), source)
    db = pg.get("postgres_db")
    if not isinstance(db, dict):
        raise ValueError(f"{path}: storage.postgres has neither postgres_url nor postgres_db")
    where = "storage.postgres.postgres_db"
    port = _resolve(db.get("port", 5432), path, f"{where}.port")
    if not port.isdigit():
        raise ValueError(f"{path}: {where}.port is {port!r}, not a port number")
    return PgSettings(
        host=_resolve(db.get("hostname"), path, f"{where}.hostname"),
        port=int(port),
        dbname=_resolve(db.get("db_name"), path, f"{where}.db_name"),
        user=_resolve(db.get("username"), path, f"{where}.username"),
        password=_resolve(db.get("password", ""), path, f"{where}.password"),
        source=source,
    )


def coord_backend(cache_dir: str) -> CoordBackend:
    """The backend for a cache, by the rule in this module's docstring."""
    url = os.environ.get(COORD_URL_ENV, "").strip()
    if url and url != FILES:
        return CoordBackend(cache_dir, None, settings_from_url(url, COORD_URL_ENV), COORD_URL_ENV)
    if url == FILES:
        return CoordBackend(cache_dir, coord_root(cache_dir), None, f"{COORD_URL_ENV}={FILES}")
    if os.environ.get(COORD_ENV):
        return CoordBackend(cache_dir, coord_root(cache_dir), None, COORD_ENV)
    home = os.environ.get("DAGSTER_HOME")
    instance = Path(home) / "dagster.yaml" if home else None
    if instance is not None and instance.is_file():
        pg = dagster_postgres(instance)
        if pg is not None:
            return CoordBackend(cache_dir, None, pg, f"the Dagster instance's storage in {instance}")
    return CoordBackend(cache_dir, coord_root(cache_dir), None, "default")


def coordination_tags(cache_dir: str = "") -> dict[str, str]:
    """``{clcg/coordination: postgresql | files}``: how this host's runs coordinate (the
    environment and ``DAGSTER_HOME`` decide; the cache only moves the folder of the locks)."""
    return {COORDINATION_TAG: coord_backend(cache_dir).kind}


def open_ledger(cache_dir: str) -> Ledger | None:
    """The study's spend ledger for a cache, in the backend :func:`coord_backend` chooses,
    with the charges of answers already cached settled (:func:`settle_from_cache`), so every
    figure read from it counts them at their real cost."""
    backend = coord_backend(cache_dir)
    ledger: Ledger | None = None
    if backend.pg is not None:
        ledger = PgSpendLedger(backend.pg, backend.scope)
    elif backend.root is not None:
        ledger = SpendLedger(backend.root)
    if ledger is not None:
        settle_from_cache(ledger, CallCache(cache_dir))
    return ledger


def settle_from_cache(ledger: Ledger, cache: CallCache) -> float:
    """Settle, at their real cost, the charged reservations whose answers are in the cache.

    A process that died after caching an answer (``_persist``) but before settling its
    reservation was billed the answer's cost, not the reservation's worst case: the cache
    entry names the reservation it was paid under (``reservation``), and the ledger settles
    each such charge once (``Ledger.settle_charged``), whichever processes or hosts do this at
    once. A charge whose answer is not cached (the process died with the request in flight)
    stays charged: it may still be billed. What was settled, in USD.
    """
    charged = ledger.charged_calls()
    if not charged:
        return 0.0
    cache.refresh()  # an object store's entries, as written by every host until now
    lines = []
    for rid, call_id in charged.items():
        entry = cache.get(call_id)
        if entry is not None and entry.get("reservation") == rid:
            lines.append(
                (rid, float(entry.get("cost_usd") or 0.0), str(entry.get("model_id") or ""), call_id)
            )
    settled = ledger.settle_charged(lines) if lines else 0.0
    if settled:
        log.info("settled $%.6f charged to dead processes at the cost of their cached answers", settled)
    return settled


class Coordinator:
    """Claims, shared slots and the spend ledger of one cache, or a no-op when unavailable."""

    def __init__(self, cache_dir: str, *, model_key: str, concurrency: int) -> None:
        self.backend = check_coordination(cache_dir)  # refused here, before any call
        self.root = self.backend.root
        self.claims: Claims | None = None
        self.slots: Slots | None = None
        self.ledger: Ledger | None = None
        log.info("call coordination: %s", self.backend.describe())
        pg, scope = self.backend.pg, self.backend.scope
        if pg is not None:
            self.claims = PgCallClaims(pg, scope)
            self.slots = PgSharedSlots(pg, scope, model_key, concurrency)
            self.ledger = PgSpendLedger(pg, scope)
            self._settle_cached(cache_dir)
            return
        if self.root is None:
            return
        if _remote(cache_dir) and not os.environ.get(COORD_ENV):
            log.info(
                "cache %s is remote: runs are coordinated on this host only (in %s); set %s to a "
                "folder every host shares, or %s to a PostgreSQL database, to coordinate several hosts",
                cache_dir,
                self.root,
                COORD_ENV,
                COORD_URL_ENV,
            )
        raise_fd_limit(16384)
        self.root.mkdir(parents=True, exist_ok=True)
        self.claims = CallClaims(self.root)
        self.slots = SharedSlots(self.root, model_key, concurrency)
        self.ledger = SpendLedger(self.root)
        self._settle_cached(cache_dir)

    def _settle_cached(self, cache_dir: str) -> None:
        """Settle what dead processes' cached answers cost (:func:`settle_from_cache`): a run
        that pays starts from the study's real spend."""
        if self.ledger is not None:
            settle_from_cache(self.ledger, CallCache(cache_dir))

    def close(self) -> None:
        if self.slots is not None:
            self.slots.close()
        if self.ledger is not None:
            self.ledger.close()
