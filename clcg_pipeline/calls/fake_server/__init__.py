"""A fake provider server speaking the OpenAI, Anthropic and Gemini HTTP APIs on 127.0.0.1.

Driven through the real SDKs (pointed at it with ``base_url``). It answers every numbered
question of a prompt with ``"answer <n>"`` and can inject faults, either at random (seeded
probabilities, set with ``POST /_config``) or scripted per call by a marker in the prompt:
``[[fault:429x2]]`` (the first two attempts of that call get a 429), ``500xN``, ``503xN``,
``400xN`` (context overflow), ``401xN`` (bad key, echoed), ``slowxN`` (sleep past the client timeout),
``malformedxN`` (broken JSON body), and
``[[answer:wrong_length|non_json|truncated|refusal|prose]]`` for bad but well-formed replies,
and ``[[reply:B64]]`` (see :func:`reply_marker`) for a scripted reply text returned verbatim.
It counts requests and completed (200, well-formed) responses per call id (the
``x-clcg-call-id`` header) and remembers every Authorization value it saw, for leak tests.
Usage is reported in cl100k_base tokens of the prompt it received (so price tiers apply as with
a provider), and bodies have no size limit: a 128K-token document arrives whole.

Run in a thread (:class:`FakeServer`) or as a process: ``python -m ...fake_server --port N``.

It lives in the package, not in the test package, because the tests, the benchmarks in
``bench/`` and a deployment smoke test (docs/DEPLOY.md: a worker image run against it with no
real key) all use it, and ``bench/`` must not depend on the tests. It needs only uvicorn and
starlette, which dagster-webserver already installs.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict
from typing import Any

import uvicorn

from clcg_pipeline.calls.fake_server._app import App
from clcg_pipeline.calls.fake_server._state import CALL_ID_HEADER, Faults, State, reply_marker


class FakeServer:
    """The fake server in a background thread of this process."""

    def __init__(self, faults: Faults | None = None) -> None:
        self._app = App()
        if faults is not None:
            self._app.state.faults = faults
            self._app.state.rng.seed(faults.seed)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self._app.app, log_level="warning", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def state(self) -> State:
        return self._app.state

    def set_faults(self, faults: Faults) -> None:
        self._app.state.faults = faults
        self._app.state.rng.seed(faults.seed)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)


class ServerProcess:
    """The fake server in its own process (benchmarks: keeps its CPU out of the runner's)."""

    def __init__(self, faults: Faults | None = None) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        self.url = f"http://127.0.0.1:{self.port}"
        self.faults = faults or Faults()
        self._proc: subprocess.Popen[bytes] | None = None

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("content-type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/_stats")

    def bodies(self) -> list[dict[str, Any]]:
        """The request bodies the server received since its counts were reset, one per call."""
        return list(self._call("GET", "/_bodies"))

    def set_faults(self, faults: Faults) -> None:
        self._call("POST", "/_config", asdict(faults))
        self._call("POST", "/_reset", {})

    def __enter__(self) -> ServerProcess:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "clcg_pipeline.calls.fake_server", "--port", str(self.port)]
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                self.set_faults(self.faults)
                return self
            except OSError:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    raise RuntimeError("fake server process did not start") from None
                time.sleep(0.1)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(prog="fake_server.py", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    app = App()
    app.state.faults = Faults(latency_s=args.latency)
    uvicorn.run(
        app.app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, lifespan="off"
    )


__all__ = ["CALL_ID_HEADER", "App", "FakeServer", "Faults", "ServerProcess", "State", "main", "reply_marker"]
