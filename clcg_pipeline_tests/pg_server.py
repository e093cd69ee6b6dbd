"""A throwaway PostgreSQL server for tests and benchmarks: initdb + pg_ctl, trust auth on 127.0.0.1.

Needs the ``postgres`` server binaries (Debian: postgresql) and psycopg2 (the ``postgres``
extra). Tests skip without them unless ``CLCG_REQUIRE_POSTGRES`` is set (CI), when their absence
fails the test (:func:`require_or_skip`).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

USER = "clcg"


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int
    user: str
    dbname: str

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.dbname}"

    @property
    def env(self) -> dict[str, str]:
        """The variables dagster.postgres.yaml reads (no password: trust auth)."""
        return {
            "CLCG_PG_HOST": self.host,
            "CLCG_PG_PORT": str(self.port),
            "CLCG_PG_DB": self.dbname,
            "CLCG_PG_USER": self.user,
            "CLCG_PG_PASSWORD": "",
        }


def require_or_skip(reason: str) -> None:
    if os.environ.get("CLCG_REQUIRE_POSTGRES"):
        pytest.fail(f"CLCG_REQUIRE_POSTGRES is set but {reason}")
    pytest.skip(reason)


def bin_dir() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "postgres").exists():
            return Path(candidate)
    found = shutil.which("postgres")
    return Path(found).parent if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def skip_without_postgres() -> Path:
    """The server binaries' folder; skips (or fails, see above) without them or psycopg2."""
    found = bin_dir()
    if found is None:
        require_or_skip("no PostgreSQL server binary (apt-get install postgresql)")
    try:
        import psycopg2  # noqa: F401
    except ImportError as exc:
        require_or_skip(f"the postgres extra is not installed ({exc})")
    assert found is not None
    return found


@contextlib.contextmanager
def running_postgres(dbname: str, binaries: Path) -> Iterator[PgServer]:
    """A server with its data in a temporary folder and one database, stopped and deleted after."""
    # The server refuses to run as root: then it runs as `nobody`, in a folder nobody owns.
    as_root = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="clcg-pg-"))
    data = root / "data"
    if as_root:
        shutil.chown(root, user="nobody")

    def run(*args: str) -> None:
        cmd = [str(binaries / args[0]), *args[1:]]
        if as_root:
            cmd = ["runuser", "-u", "nobody", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120)

    port = free_port()
    started = False
    try:
        run("initdb", "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8", "--no-sync")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run("pg_ctl", "-D", str(data), "-o", opts, "-l", str(root / "server.log"), "-w", "start")
        started = True
        import psycopg2

        conn = psycopg2.connect(host="127.0.0.1", port=port, user=USER, dbname="postgres")
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{dbname}"')
        conn.close()
        yield PgServer("127.0.0.1", port, USER, dbname)
    finally:
        if started:
            run("pg_ctl", "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)
