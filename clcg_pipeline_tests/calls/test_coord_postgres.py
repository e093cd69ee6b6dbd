"""Coordination through PostgreSQL: two "hosts" with no shared folder, one database, one object store.

Each host is a process with folders of its own (no ``CLCG_COORD_DIR``: the file locks could not
meet), the same ``s3://`` cache on a local moto server and the same throwaway PostgreSQL server.
Skipped without the PostgreSQL binaries unless CLCG_REQUIRE_POSTGRES is set (as test_postgres.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._coord import COORD_ENV, COORD_URL_ENV, WAIT
from clcg_pipeline.calls._coord_postgres import PgCallClaims, PgSharedSlots, PgSpendLedger, settings_from_url
from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for
from clcg_pipeline_tests.conftest import PROJECT_ROOT
from clcg_pipeline_tests.pg_server import PgServer, running_postgres, skip_without_postgres

WORKER = [sys.executable, "-m", "clcg_pipeline_tests.calls.coord_worker"]


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    binaries = skip_without_postgres()
    with running_postgres("clcg_coord", binaries) as server:
        yield server


def _host_env(home: Path, pg_url: str) -> dict[str, str]:
    """A host of its own: its own home and cache folders, the shared database, no shared folder."""
    env = {k: v for k, v in os.environ.items() if k not in (COORD_ENV, "DAGSTER_HOME")}
    for name in ("home", "xdg"):
        (home / name).mkdir(parents=True)
    return {**env, "HOME": str(home / "home"), "XDG_CACHE_HOME": str(home / "xdg"), COORD_URL_ENV: pg_url}


def _run_hosts(
    url: str, cache: str, tmp: Path, pg_url: str, runs: list[tuple[str, int, int, str, str]]
) -> list[dict[str, object]]:
    """One coord_worker per host and (tag, n, concurrency, budget, order), released together."""
    go = tmp / "go"
    procs = []
    for h, (tag, n, c, budget, order) in enumerate(runs):
        home = tmp / f"host{h}"
        cmd = [*WORKER, url, cache, tag, str(n), str(c), budget, str(go), order]
        env = _host_env(home, pg_url)
        procs.append(
            subprocess.Popen(
                cmd, env=env, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    go.touch()
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr[-2000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def _count(outs: list[dict[str, object]], test: Callable[[str], bool]) -> int:
    return sum(v for o in outs for k, v in o["outcomes"].items() if test(k))  # type: ignore[attr-defined]


@pytest.mark.usefixtures("fake_key")
def test_two_hosts_share_claims_concurrency_and_budget(pg: PgServer, bucket: str, tmp_path: Path) -> None:
    n, limit = 64, 4  # the same calls on both hosts, from opposite ends; 4 in flight for both
    # A call is estimated at ~$0.0009 (200 output tokens at $4/Mtok) and costs ~$0.00018: about
    # 40 of the 64 calls fit, so the budget binds while both hosts are sending.
    budget = 0.0075
    cache = f"s3://{bucket}/cache"
    with FakeServer(Faults(latency_s=0.1)) as server:
        outs = _run_hosts(
            server.url,
            cache,
            tmp_path,
            pg.url,
            [("same", n, limit, str(budget), "forward"), ("same", n, limit, str(budget), "reverse")],
        )
        sent, peak = dict(server.state.requests), server.state.max_in_flight
    paid_twice = {cid: k for cid, k in sent.items() if k > 1}
    spent = sum(float(o["spent"]) for o in outs)  # type: ignore[arg-type]
    ledger_spent, outstanding = PgSpendLedger(settings_from_url(pg.url, "test"), cache).totals()
    print(
        f"two hosts: {len(sent)} calls sent, {len(paid_twice)} paid twice, peak {peak} in flight "
        f"(limit {limit}), spent ${spent:.5f} of ${budget} ({spent / budget:.2f})"
    )
    assert not paid_twice, paid_twice
    assert 3 <= peak <= limit, f"{peak} in flight against a limit of {limit} shared by two hosts"
    assert all(_count([o], lambda k: k.endswith(":new")) for o in outs), outs  # both hosts sent
    assert 0 < spent <= budget and spent == pytest.approx(ledger_spent) and outstanding == 0
    stopped = _count(outs, lambda k: k.startswith("skipped_budget:StudyBudgetExceeded"))
    assert len(sent) < n and stopped > 0  # the one budget stopped both hosts
    # Every call is answered on at least one host, or stopped by the budget on both.
    assert _count(outs, lambda k: k.startswith("ok:")) + stopped == 2 * n


_HOLDER = """
import asyncio, sys
from clcg_pipeline.calls._coord_postgres import PgCallClaims, PgSharedSlots, PgSpendLedger, settings_from_url
s = settings_from_url(sys.argv[1], "holder")
claim = PgCallClaims(s, "scope").try_claim(sys.argv[2])
slots = PgSharedSlots(s, "scope", "model", 1)
slot = asyncio.run(slots.acquire())
rid = PgSpendLedger(s, "scope").reserve(1.0, 1.5)
print(claim is not None, slot, rid not in (None, "wait"), flush=True)
sys.stdin.read()
"""


def _eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _slot_free(slots: PgSharedSlots) -> bool:
    async def attempt() -> bool:
        try:
            slot = await asyncio.wait_for(slots.acquire(), 0.3)
        except TimeoutError:
            return False
        slots.release(slot)
        return True

    return asyncio.run(attempt())


def test_a_killed_holder_releases_claims_and_slots_and_its_reservations_are_charged(pg: PgServer) -> None:
    settings = settings_from_url(pg.url, "test")
    call_id = "cd" * 32
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, pg.url, call_id],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    claims = PgCallClaims(settings, "scope")
    slots = PgSharedSlots(settings, "scope", "model", 1)
    ledger = PgSpendLedger(settings, "scope")
    try:
        assert holder.stdout is not None and holder.stdout.readline().split() == ["True", "0", "True"]
        assert claims.try_claim(call_id) is None  # held by a live session elsewhere
        assert not _slot_free(slots)
        assert ledger.totals() == (0.0, 1.0) and ledger.reserve(1.0, 1.5) == WAIT
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The server ends the dead client's session, and its advisory locks with it.
    # Each lock is its own check: on a loaded machine the server may end the session's
    # advisory locks a moment after the ledger stops counting its reservation.
    assert _eventually(lambda: ledger.totals() == (0.0, 0.0))
    claims_taken = []

    def claimed() -> bool:
        claims_taken.append(claims.try_claim(call_id))
        return claims_taken[-1] is not None

    assert _eventually(claimed)
    assert claims.try_claim(call_id) is None  # one task of this process
    claims.release(claims_taken[-1])
    assert _eventually(lambda: _slot_free(slots))
    # Its reservation is charged, not dropped: what it had sent may still be billed.
    assert ledger.charged_at_death() == 1.0
    assert ledger.reserve(1.0, 1.5) is None  # refused for good, not deferred
    rid = ledger.reserve(0.5, 1.5)
    assert rid not in (None, WAIT)
    ledger.release(rid)  # type: ignore[arg-type]
    assert ledger.totals() == (0.0, 0.0) and ledger.charged_at_death() == 1.0
    slots.close()


@pytest.mark.usefixtures("fake_key")
def test_dagster_postgres_instance_is_used_and_logged_without_password(
    pg: PgServer,
    server: FakeServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(PROJECT_ROOT / "dagster.postgres.yaml", home / "dagster.yaml")
    for name, value in {**pg.env, "CLCG_PG_PASSWORD": "not-logged-7c1d"}.items():
        monkeypatch.setenv(name, value)  # trust auth: the password is sent, never checked
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv(COORD_ENV, raising=False)
    monkeypatch.delenv(COORD_URL_ENV, raising=False)
    cache = tmp_path / "cache"
    spec = spec_for("openai", server.url, concurrency=2)
    with caplog.at_level(logging.INFO, logger="clcg_pipeline.calls._coord"):
        results = run_requests(
            spec,
            [make_request(tag=f"auto-{i}") for i in range(3)],
            CallOptions(cache_dir=str(cache), policy=FAST, study_budget_usd=1.0),
        )
    assert [r.outcome for r in results] == ["ok"] * 3
    spent, outstanding = PgSpendLedger(settings_from_url(pg.url, "test"), str(cache.resolve())).totals()
    assert spent == pytest.approx(sum(r.cost_usd for r in results)) and outstanding == 0
    assert not (cache / "_coord").exists()  # nothing went to the file locks
    lines = [r.getMessage() for r in caplog.records if "call coordination" in r.getMessage()]
    assert lines and "PostgreSQL postgresql://clcg@127.0.0.1" in lines[0] and "dagster.yaml" in lines[0]
    assert "not-logged-7c1d" not in caplog.text


def test_a_statement_the_server_refuses_names_the_database_not_a_stack(pg: PgServer) -> None:
    import psycopg2

    admin = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=pg.dbname)
    admin.autocommit = True
    with admin.cursor() as cur:  # a database where a plain role may not create the ledger's tables
        cur.execute("CREATE DATABASE clcg_no_create")
        cur.execute("CREATE ROLE clcg_reader LOGIN")
    admin.close()
    locked = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname="clcg_no_create")
    locked.autocommit = True
    with locked.cursor() as cur:
        cur.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    locked.close()
    url = f"postgresql://clcg_reader:pw-not-shown@{pg.host}:{pg.port}/clcg_no_create"
    with pytest.raises(RuntimeError) as caught:
        PgSpendLedger(settings_from_url(url, COORD_URL_ENV), "scope")
    message = str(caught.value)
    assert f"clcg_reader@{pg.host}:{pg.port}/clcg_no_create" in message and COORD_URL_ENV in message
    assert "permission denied" in message and "pw-not-shown" not in message


def test_a_ledger_made_before_charges_at_death_is_altered_to_keep_them(pg: PgServer) -> None:
    import psycopg2

    admin = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname=pg.dbname)
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute("CREATE DATABASE clcg_old_ledger")
    admin.close()
    old = psycopg2.connect(host=pg.host, port=pg.port, user=pg.user, dbname="clcg_old_ledger")
    old.autocommit = True
    with old.cursor() as cur:  # the reservations table as it was made before died_at
        cur.execute(
            "CREATE TABLE clcg_coord_reservations (rid text PRIMARY KEY, scope text NOT NULL,"
            " usd double precision NOT NULL, holder integer NOT NULL, host text NOT NULL,"
            " at timestamptz NOT NULL DEFAULT now());"
            "INSERT INTO clcg_coord_reservations (rid, scope, usd, holder, host)"
            " VALUES ('dead', 'scope', 0.25, 12345, 'gone')"
        )
    url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/clcg_old_ledger"
    ledger = PgSpendLedger(settings_from_url(url, "test"), "scope")
    # The row of a session that no longer holds its token is charged, not deleted.
    assert ledger.totals() == (0.0, 0.0) and ledger.charged_at_death() == 0.25
    with old.cursor() as cur:
        cur.execute("SELECT rid, died_at IS NOT NULL FROM clcg_coord_reservations")
        assert cur.fetchall() == [("dead", True)]
    old.close()
