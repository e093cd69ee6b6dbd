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

Every :class:`Coordinator` logs the choice (never the password).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

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
    "COORD_ENV",
    "COORD_URL_ENV",
    "WAIT",
    "CallClaims",
    "Claim",
    "Claims",
    "CoordBackend",
    "Coordinator",
    "Ledger",
    "SharedSlots",
    "Slots",
    "SpendLedger",
    "coord_backend",
    "coord_root",
    "open_ledger",
]

log = logging.getLogger(__name__)

COORD_URL_ENV = "CLCG_COORD_URL"
FILES = "files"  # CLCG_COORD_URL=files: file locks even when dagster.yaml uses PostgreSQL


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
    def reserve(self, usd: float, limit: float) -> str | None: ...
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


def open_ledger(cache_dir: str) -> Ledger | None:
    """The study's spend ledger for a cache, in the backend :func:`coord_backend` chooses."""
    backend = coord_backend(cache_dir)
    if backend.pg is not None:
        return PgSpendLedger(backend.pg, backend.scope)
    return SpendLedger(backend.root) if backend.root is not None else None


class Coordinator:
    """Claims, shared slots and the spend ledger of one cache, or a no-op when unavailable."""

    def __init__(self, cache_dir: str, *, model_key: str, concurrency: int) -> None:
        self.backend = coord_backend(cache_dir)
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
            return
        if self.root is None:
            return
        if "://" in cache_dir and not cache_dir.startswith("file://") and not os.environ.get(COORD_ENV):
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

    def close(self) -> None:
        if self.slots is not None:
            self.slots.close()
        if self.ledger is not None:
            self.ledger.close()
