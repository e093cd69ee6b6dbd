"""The provider of ``bench/two_hosts.py``: the fake server in its own process, billing per API key.

Besides the fake server's answers (and faults), it keeps what a real provider's bill says:
answered calls, USD and call ids per key (``/_bill``), a call answered after its client hung
up (killed) included, and every request's span for the concurrency limit's check, with the
instant its client hung up when it did (``two_hosts_checks.clipped_spans``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from typing import Any

PRICE_IN, PRICE_OUT = 1.0, 4.0  # USD per million tokens, in models.yaml and in the server's bill


def serve(port: int, faults_json: str) -> None:
    """The fake server in this process, with a ``/_bill`` route: answered calls and USD per key."""
    import uvicorn
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response

    from clcg_pipeline.calls.fake_server import App, Faults

    bill: dict[str, dict[str, Any]] = {}
    # Every request: arrival, departure, key, status, and the last instant its client was seen
    # connected when it hung up before the answer (a timeout, a kill), else None.
    spans: list[tuple[float, float, str, int, float | None]] = []
    faults = Faults(**json.loads(faults_json))

    async def hung_up(request: Request, arrived: float) -> float:
        """The last instant ``request``'s client was seen connected, once it has hung up.

        Watched from the answer's latency on (an answer in time needs no watching), every 2 ms:
        the limit's check ends a request there, as its client's slots did. The client's own
        timeout starts when it sends, before the arrival stamped here; ending a slow request
        at arrival + timeout counted a slot given back and taken again as two (run 7: 5 in
        flight, the fifth 2 ms before that estimate)."""
        await asyncio.sleep(max(0.0, arrived + faults.latency_s - time.time()))
        seen = time.time()
        while not await request.is_disconnected():
            seen = time.time()
            await asyncio.sleep(0.002)
        return seen

    class BillingApp(App):
        async def openai(self, request: Request) -> Response:  # type: ignore[override]
            key = (request.headers.get("authorization") or "").removeprefix("Bearer ")
            arrived = time.time()
            # Read at arrival, as a real provider does: a client killed while its answer is
            # being made is still answered (to no one) and billed, not a ClientDisconnect.
            await request.body()
            watcher = asyncio.ensure_future(hung_up(request, arrived))
            try:
                response = await super().openai(request)
            finally:
                watcher.cancel()
            ended = watcher.done() and not watcher.cancelled() and watcher.exception() is None
            gone = watcher.result() if ended else None
            spans.append((arrived, time.time(), key, response.status_code, gone))
            if response.status_code == 200:
                try:
                    usage = json.loads(bytes(response.body))["usage"]
                except (ValueError, KeyError, TypeError):  # malformed: no usage, nothing billable seen
                    return response
                new = {"calls": 0, "usd": 0.0, "ids": Counter(), "gone": 0, "gone_ids": Counter()}
                line = bill.setdefault(key, new)
                call_id = request.headers.get("x-clcg-call-id", "-")
                # Billed, but its client had hung up (killed): no cache entry, no ledger line
                # but the dead reservation's charge; a rerun pays for the call again.
                if await request.is_disconnected():
                    line["gone"] += 1
                    line["gone_ids"][call_id] += 1
                line["calls"] += 1
                line["usd"] += (
                    usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT
                ) / 1e6
                line["ids"][call_id] += 1
            return response

        async def bill(self, request: Request) -> Response:
            lines = {
                k: {**v, "ids": dict(v["ids"]), "gone_ids": dict(v["gone_ids"])} for k, v in bill.items()
            }
            return JSONResponse({"spans": spans, **lines})

    app = BillingApp()
    app.state.faults = faults
    app.state.rng.seed(app.state.faults.seed)
    app.app.add_route("/_bill", app.bill, methods=["GET"])
    uvicorn.run(app.app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off")
