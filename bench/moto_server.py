"""A local S3-compatible server (moto, its own process) for the benches that keep data or the call
cache on ``s3://``, and the start, wait and stop of any server process a bench runs.

    with moto_s3(log) as env:  # the standard AWS variables that point S3 clients at it
        ...

Its own process, not moto's threaded server: a server thread in the bench's interpreter would
compete for its GIL with the calls the bench times.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from clcg_pipeline_tests.pg_server import free_port

START_S = 60.0  # a busy 2-core machine starting several Python servers at once


def listening(port: int) -> bool:
    """Whether a server accepts connections on ``port`` of 127.0.0.1."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


@contextlib.contextmanager
def serving(cmd: list[str], port: int, what: str, log: Path | None = None) -> Iterator[None]:
    """The server process ``cmd``, listening on ``port`` before this yields, stopped after; its
    output goes to ``log`` (nowhere without one). Raises naming ``what`` if it does not start."""
    with log.open("wb") if log else contextlib.nullcontext(subprocess.DEVNULL) as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_S
        while not listening(port):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def moto_s3(log: Path | None = None) -> Iterator[dict[str, str]]:
    """moto's S3 server on a free port of 127.0.0.1, stopped after: yields the AWS variables
    (endpoint and moto's test credentials) that point every S3 client at it."""
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]
    with serving(cmd, port, "moto_server", log):
        yield {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
