"""Coordination through a PostgreSQL database, for processes on several hosts (docs/DEPLOY.md, section 3).

The same three things as the file locks of ``_coord_files``, with the same interface:

* a **claim** is a session advisory lock (``pg_try_advisory_lock``) on a 64-bit key drawn from
  the cache and the call id;
* the model's **concurrency** is ``size`` advisory locks on (model key, slot i), and each
  process keeps its fair share: ``size`` / the sessions holding the model's shared membership
  lock, counted in ``pg_locks``;
* the **study budget** is three tables: reservations in flight (``clcg_coord_reservations``),
  every settled cost (``clcg_coord_spend``) and the running total per cache
  (``clcg_coord_spent``). A reservation names its holder, a token the holder's session keeps
  an advisory lock on, so only reservations of live sessions are in flight; those of a dead
  session are charged (marked ``died_at``, kept): its requests may still be answered and billed.

Session advisory locks die with their connection as flock dies with its process: a killed
process, or a host that drops off the network (the server's TCP keepalives, set per session
below, end its sessions within about a minute), leaves nothing that others must guess is stale.
psycopg2 (in requirements.lock with the ``postgres`` extra) is imported on first use only.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import random
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from clcg_pipeline.calls._coord_files import WAIT, Claim

log = logging.getLogger(__name__)
_HOST = socket.gethostname()

# Server-side settings of every coordination session: a vanished host's locks are freed within
# ~1 minute (keepalives), and a server-wide idle timeout must not end a session holding claims.
# Set with set_config, skipping any the server lacks (idle_session_timeout is PostgreSQL 14+).
_SESSION_SETTINGS = (
    ("tcp_keepalives_idle", "30"),
    ("tcp_keepalives_interval", "10"),
    ("tcp_keepalives_count", "3"),
    ("idle_session_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
)


@dataclass(frozen=True)
class PgSettings:
    """Where the coordination database is, and where that setting came from (for messages)."""

    host: str
    port: int
    dbname: str
    user: str
    password: str = field(default="", repr=False)
    source: str = ""

    def describe(self) -> str:
        """The database for logs and errors, without the password."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}"


def settings_from_url(url: str, source: str) -> PgSettings:
    """A ``postgresql://user:password@host:port/db`` URL (also ``postgresql+psycopg2://``)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.split("+")[0] not in ("postgresql", "postgres"):
        raise ValueError(f"{source}: expected a postgresql://user@host:port/db URL, got scheme {scheme!r}")
    from psycopg2.extensions import parse_dsn

    try:
        parts = parse_dsn("postgresql://" + rest)  # libpq's own parser: percent-escapes, params
    except Exception as exc:
        raise ValueError(f"{source}: not a valid PostgreSQL URL ({type(exc).__name__})") from None
    return PgSettings(
        host=parts.get("host", "localhost"),
        port=int(parts.get("port", 5432)),
        dbname=parts.get("dbname", parts.get("user", "postgres")),
        user=parts.get("user", os.environ.get("USER", "postgres")),
        password=parts.get("password", ""),
        source=source,
    )


def int31(*parts: str) -> int:
    """A non-negative 32-bit advisory lock key (pg_locks shows keys as unsigned oids)."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def claim_key(scope: str, call_id: str) -> int:
    """The 64-bit advisory lock key of a claim (one-key locks never meet the two-key ones)."""
    digest = hashlib.sha256(f"{scope}\0{call_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _connect(settings: PgSettings, role: str) -> Any:
    try:
        import psycopg2
    except ImportError:
        raise RuntimeError(
            f"call coordination through {settings.describe()} (from {settings.source}) needs "
            "psycopg2: pip install 'clcg-pipeline[postgres]'"
        ) from None

    try:
        conn = psycopg2.connect(
            host=settings.host,
            port=settings.port,
            dbname=settings.dbname,
            user=settings.user,
            password=settings.password,
            application_name=f"clcg-coord-{role}",
            connect_timeout=10,
            keepalives=1,
            keepalives_idle=30,
            keepalives_interval=10,
            keepalives_count=3,
        )
    except psycopg2.OperationalError as exc:
        raise RuntimeError(
            f"call coordination: cannot connect to {settings.describe()} (from {settings.source}): "
            f"{str(exc).strip()[:300]}"
        ) from None
    conn.autocommit = True  # advisory locks live in the session, never in a transaction left open
    with conn.cursor() as cur:
        cur.execute(
            "SELECT set_config(s.name, s.value, false) FROM (VALUES "
            + ", ".join(["(%s, %s)"] * len(_SESSION_SETTINGS))
            + ") AS s(name, value) WHERE s.name IN (SELECT name FROM pg_settings)",
            [v for pair in _SESSION_SETTINGS for v in pair],
        )
    return conn


class PgSession:
    """One connection, used by the event loop and the writer thread in turn (a lock between them)."""

    def __init__(self, settings: PgSettings, role: str) -> None:
        self.settings = settings
        self.role = role
        self._lock = threading.Lock()
        self._conn = _connect(settings, role)
        self.holder: int | None = None  # the ledger's token (PgSpendLedger)

    def rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg2

        with self._lock:
            try:
                with self._conn.cursor() as cur:
                    cur.execute(sql, params)
                    return cur.fetchall() if cur.description else []
            except (psycopg2.OperationalError, psycopg2.InterfaceError) as exc:
                # The locks of a lost session are gone: carrying on could pay a call twice.
                raise RuntimeError(
                    f"call coordination: lost the connection to {self.settings.describe()} "
                    f"({self.role}); its claims, slots and reservations are released: "
                    f"{str(exc).strip()[:200]}"
                ) from None
            except psycopg2.Error as exc:
                # Refused by the server (rights, a read-only replica): name the database and the
                # setting that chose it, not psycopg2's stack.
                raise RuntimeError(
                    f"call coordination: {self.settings.describe()} (from {self.settings.source}) "
                    f"refused a {self.role} statement: {str(exc).strip()[:300]}"
                ) from None

    def value(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.rows(sql, params)[0][0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def detach_after_fork(self) -> None:
        """In a forked child: never speak on the parent's socket, not even to say goodbye."""
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, self._conn.fileno())
            os.close(null)


# One session per role (claims, ledger) and database in each process. A forked child (the run
# launcher forks runs) gets its own; the parent's, inherited, are detached and kept referenced
# so that no finaliser ever closes them on the parent's behalf.
_SESSIONS: dict[tuple[str, str], PgSession] = {}
_INHERITED: list[PgSession] = []
_SESSIONS_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    for session in _SESSIONS.values():
        session.detach_after_fork()
        _INHERITED.append(session)
    _SESSIONS.clear()
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def shared_session(settings: PgSettings, role: str) -> PgSession:
    key = (repr((settings.host, settings.port, settings.dbname, settings.user)), role)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = _SESSIONS[key] = PgSession(settings, role)
            if role == "ledger":
                _prepare_ledger(session)
        return session


# Claims this process holds: the session's advisory locks are reentrant, so two tasks or threads
# of one process must be kept apart here (as the file locks' _HELD does).
_HELD: set[tuple[str, str]] = set()
_HELD_LOCK = threading.Lock()


class PgCallClaims:
    """Claims on calls in flight: a session advisory lock per call id."""

    def __init__(self, settings: PgSettings, scope: str) -> None:
        self._session = shared_session(settings, "claims")
        self._scope = scope

    def try_claim(self, call_id: str) -> Claim | None:
        """The claim, or None while another process, or another task of this one, holds it."""
        held = (self._scope, call_id)
        key = claim_key(self._scope, call_id)
        with _HELD_LOCK:
            if held in _HELD:
                return None
            if not self._session.value("SELECT pg_try_advisory_lock(%s)", (key,)):
                return None
            _HELD.add(held)
        return Claim(call_id, key)

    def release(self, claim: Claim) -> None:
        with _HELD_LOCK:
            self._session.value("SELECT pg_advisory_unlock(%s)", (claim.key,))
            _HELD.discard((self._scope, claim.call_id))


_LIVE_LOCKS = (
    "SELECT {cols} FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = %s::oid"
)


class PgSharedSlots:
    """At most ``size`` requests in flight for one model, across every session using the database.

    A session of its own, so its slot locks exclude every other instance's, in this process too
    (as the file locks' descriptors do). The fair share follows the file backend's rule.
    """

    def __init__(self, settings: PgSettings, scope: str, key: str, size: int) -> None:
        self._session = PgSession(settings, "slots")
        self.size = size
        self._slot_ns = int31("slot", scope, key)
        self._member_ns = int31("member", scope, key)
        self._session.value("SELECT pg_advisory_lock_shared(%s, 0)", (self._member_ns,))
        self._held: set[int] = set()
        self._share = size
        self._share_at = 0.0
        self.waits = 0

    def _live_members(self) -> int:
        sql = _LIVE_LOCKS.format(cols="count(*)") + " AND objid = 0 AND mode = 'ShareLock'"
        return max(1, int(self._session.value(sql, (self._member_ns,))))

    def share(self) -> int:
        now = time.monotonic()
        if now - self._share_at > 0.25:
            self._share = max(1, -(-self.size // self._live_members()))
            self._share_at = now
        return self._share

    def _try_slot(self, slot: int) -> bool:
        return bool(self._session.value("SELECT pg_try_advisory_lock(%s, %s)", (self._slot_ns, slot)))

    async def acquire(self) -> int:
        delay = 0.002
        while True:
            if len(self._held) < self.share():
                start = random.randrange(self.size)
                for k in range(self.size):
                    i = (start + k) % self.size
                    # Advisory locks are reentrant in a session: a slot held here must be skipped.
                    if i not in self._held and self._try_slot(i):
                        self._held.add(i)
                        return i
            # Busy elsewhere, or this process has its share: poll with backoff, as the files do
            # (a blocking pg_advisory_lock would hold the connection the other slots need).
            self.waits += 1
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    def release(self, slot: int) -> None:
        self._held.discard(slot)
        self._session.value("SELECT pg_advisory_unlock(%s, %s)", (self._slot_ns, slot))

    def close(self) -> None:
        self._session.close()  # ends the session: its slot and membership locks go with it


_HOLDER_NS = int31("clcg-coord", "ledger-holder")
_SCHEMA_NS = int31("clcg-coord", "schema")
_SCHEMA = """
SELECT pg_advisory_xact_lock(%(ns)s, 0);
CREATE TABLE IF NOT EXISTS clcg_coord_spend (
    id bigserial PRIMARY KEY, scope text NOT NULL, usd double precision NOT NULL,
    model text NOT NULL, call_id text NOT NULL, host text NOT NULL,
    at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS clcg_coord_spent (scope text PRIMARY KEY, usd double precision NOT NULL);
CREATE TABLE IF NOT EXISTS clcg_coord_reservations (
    rid text PRIMARY KEY, scope text NOT NULL, usd double precision NOT NULL,
    holder integer NOT NULL, host text NOT NULL, at timestamptz NOT NULL DEFAULT now(),
    died_at timestamptz, call_id text NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS clcg_coord_reservations_scope ON clcg_coord_reservations (scope);
DO $$ BEGIN  -- a table made before died_at or call_id: altered once (ALTER would lock it on every start)
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'clcg_coord_reservations' AND column_name = 'died_at') THEN
        ALTER TABLE clcg_coord_reservations ADD COLUMN died_at timestamptz;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = 'clcg_coord_reservations' AND column_name = 'call_id') THEN
        ALTER TABLE clcg_coord_reservations ADD COLUMN call_id text NOT NULL DEFAULT '';
    END IF;
END $$;
"""
# Reservations whose holder's session still holds its token lock are in flight; the others are
# charged for good (died_at set): what the dead session had sent may still be billed. Every
# CTE sees the table as it was before the UPDATE, so "charged" counts the rows it marks.
_LIVE_HOLDERS = _LIVE_LOCKS.format(cols="objid::bigint").replace("%s::oid", "%(holder_ns)s::oid")
_TOTALS = f"""
WITH live AS ({_LIVE_HOLDERS}),
gone AS (
    UPDATE clcg_coord_reservations SET died_at = now()
    WHERE scope = %(scope)s AND died_at IS NULL AND holder NOT IN (SELECT objid FROM live)),
totals AS (
    SELECT coalesce((SELECT usd FROM clcg_coord_spent WHERE scope = %(scope)s), 0) AS spent,
           coalesce((SELECT sum(usd) FROM clcg_coord_reservations
                     WHERE scope = %(scope)s AND died_at IS NULL
                       AND holder IN (SELECT objid FROM live)), 0) AS reserved,
           coalesce((SELECT sum(usd) FROM clcg_coord_reservations
                     WHERE scope = %(scope)s AND (died_at IS NOT NULL
                       OR holder NOT IN (SELECT objid FROM live))), 0) AS charged)
"""
# Under a transaction lock per cache: two hosts never both take the last dollar.
_RESERVE = (
    "SELECT pg_advisory_xact_lock(%(scope_ns)s, 0);\n"
    + _TOTALS
    + """, granted AS (
    INSERT INTO clcg_coord_reservations (rid, scope, usd, holder, host, call_id)
    SELECT %(rid)s, %(scope)s, %(usd)s, %(holder)s, %(host)s, %(call_id)s FROM totals
    WHERE spent + charged + reserved + %(usd)s <= %(limit)s
    RETURNING rid)
SELECT spent + charged, reserved, (SELECT count(*) FROM granted) FROM totals
"""
)
_SETTLE = """
WITH ended AS (DELETE FROM clcg_coord_reservations WHERE rid = ANY(%(rids)s::text[])),
costs AS (SELECT * FROM unnest(%(usd)s::float8[], %(model)s::text[], %(call_id)s::text[])
          AS c(usd, model, call_id)),
logged AS (INSERT INTO clcg_coord_spend (scope, usd, model, call_id, host)
           SELECT %(scope)s, usd, model, call_id, %(host)s FROM costs)
INSERT INTO clcg_coord_spent (scope, usd) SELECT %(scope)s, sum(usd) FROM costs
ON CONFLICT (scope) DO UPDATE SET usd = clcg_coord_spent.usd + EXCLUDED.usd
"""

# Charged reservations (as in _TOTALS: marked died_at, or their holder's session gone).
_CHARGED = f"""
WITH live AS ({_LIVE_HOLDERS})
SELECT rid, call_id FROM clcg_coord_reservations
WHERE scope = %(scope)s AND call_id <> '' AND (died_at IS NOT NULL OR holder NOT IN (SELECT objid FROM live))
"""
# A charged reservation settled at its answer's real cost: the DELETE takes each row once (a
# second host's statement waits on the row, then finds it gone), and only what it took is
# counted, so two hosts settling one charge at once count it once.
_SETTLE_CHARGED = f"""
WITH live AS ({_LIVE_HOLDERS}),
costs AS (SELECT * FROM unnest(%(rids)s::text[], %(usd)s::float8[], %(model)s::text[], %(call_id)s::text[])
          AS c(rid, usd, model, call_id)),
taken AS (
    DELETE FROM clcg_coord_reservations r USING costs c
    WHERE r.rid = c.rid AND r.scope = %(scope)s
      AND (r.died_at IS NOT NULL OR r.holder NOT IN (SELECT objid FROM live))
    RETURNING c.usd, c.model, c.call_id),
logged AS (INSERT INTO clcg_coord_spend (scope, usd, model, call_id, host)
           SELECT %(scope)s, usd, model, call_id, %(host)s FROM taken),
added AS (INSERT INTO clcg_coord_spent (scope, usd) SELECT %(scope)s, sum(usd) FROM taken HAVING count(*) > 0
          ON CONFLICT (scope) DO UPDATE SET usd = clcg_coord_spent.usd + EXCLUDED.usd)
SELECT coalesce(sum(usd), 0) FROM taken
"""


def _prepare_ledger(session: PgSession) -> None:
    """Create the tables (once, under a lock), then take a holder token no live session has."""
    session.rows(_SCHEMA, {"ns": _SCHEMA_NS})
    while True:
        token = secrets.randbelow(0x7FFFFFFF) + 1
        if session.value("SELECT pg_try_advisory_lock(%s, %s)", (_HOLDER_NS, token)):
            break
    # Rows under this token are a dead session's (it held the token once): charged, as in _TOTALS.
    session.rows(
        "UPDATE clcg_coord_reservations SET died_at = now() WHERE holder = %s AND died_at IS NULL", (token,)
    )
    session.holder = token


class PgSpendLedger:
    """The study's spend in PostgreSQL: same reserve/settle/release/totals as the file ledger.

    ``scope`` names the cache it belongs to (every host names the same cache the same way).
    """

    def __init__(self, settings: PgSettings, scope: str) -> None:
        self._session = shared_session(settings, "ledger")
        self._scope = scope
        self._scope_ns = int31("ledger", scope)

    def _params(self, **extra: object) -> dict[str, object]:
        return {"scope": self._scope, "holder_ns": _HOLDER_NS, "host": _HOST, **extra}

    def totals(self) -> tuple[float, float]:
        """(spent as the answers' costs, reserved by live sessions), as of now; what dead
        sessions held is :meth:`charged_at_death`, apart."""
        sql = _TOTALS + "SELECT spent, reserved FROM totals"
        spent, reserved = self._session.rows(sql, self._params())[0]
        return float(spent), float(reserved)

    def charged_at_death(self) -> float:
        """What reservations of sessions that died before settling them hold, for good."""
        return float(self._session.value(_TOTALS + "SELECT charged FROM totals", self._params()))

    def charged_calls(self) -> dict[str, str]:
        """Reservation id -> call id of the charged reservations that name their call."""
        return {str(rid): str(call_id) for rid, call_id in self._session.rows(_CHARGED, self._params())}

    def settle_charged(self, lines: Sequence[tuple[str, float, str, str]]) -> float:
        """Settle charged reservations at their answers' real costs (reservation id, usd, model,
        call id), each only while it is still charged (one statement; once across hosts).
        What was settled, in USD."""
        if not lines:
            return 0.0
        params = self._params(
            rids=[rid for rid, _, _, _ in lines],
            usd=[float(usd) for _, usd, _, _ in lines],
            model=[model for _, _, model, _ in lines],
            call_id=[call_id for _, _, _, call_id in lines],
        )
        return float(self._session.value(_SETTLE_CHARGED, params))

    def reserve(self, usd: float, limit: float, *, call_id: str = "") -> str | None:
        """A reservation id; None when spent (charged at death included) + ``usd`` exceeds
        ``limit``; :data:`WAIT` when only live reservations stand in the way (calls in flight
        may cost less than reserved). ``call_id``: as the file ledger's."""
        rid = uuid.uuid4().hex
        params = self._params(
            scope_ns=self._scope_ns,
            rid=rid,
            usd=usd,
            limit=limit,
            holder=self._session.holder,
            call_id=call_id,
        )
        spent, _reserved, granted = self._session.rows(_RESERVE, params)[0]
        if granted:
            return rid
        return None if float(spent) + usd > limit else WAIT

    def settle(self, rid: str | None, usd: float, *, model: str = "", call_id: str = "") -> None:
        """Record a new call's actual cost (and end its reservation, if it had one)."""
        self.settle_many([(rid, usd, model, call_id)])

    def settle_many(self, lines: Sequence[tuple[str | None, float, str, str]]) -> None:
        """:meth:`settle` for several calls (reservation id, usd, model, call id): one statement."""
        if not lines:
            return
        params = self._params(
            rids=[rid for rid, _, _, _ in lines if rid],
            usd=[float(usd) for _, usd, _, _ in lines],
            model=[model for _, _, model, _ in lines],
            call_id=[call_id for _, _, _, call_id in lines],
        )
        self._session.rows(_SETTLE, params)

    def release(self, rid: str) -> None:
        self._session.rows("DELETE FROM clcg_coord_reservations WHERE rid = %s", (rid,))

    def close(self) -> None:
        """Nothing to do: the process's ledger session serves every ledger it opens."""
