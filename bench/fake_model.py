"""What the runner benchmarks share: a model served by the fake server, and the bare loop.

The bare loop (asyncio + httpx2 posting the same bodies: no SDK, no cache, no parsing) is the
baseline a benchmark's runner rate is compared with.

    from fake_model import bare_loop, fake_server_model  # bench/ is the script's folder
"""

from __future__ import annotations

import asyncio
import json
import os
import time

import httpx2

from clcg_pipeline.config import ModelSpec

KEY_ENV = "CLCG_BENCH_FAKE_KEY"


def fake_server_model(
    url: str,
    *,
    model_id: str = "bench",
    model: str = "bench-model",
    provider: str = "openai",
    concurrency: int = 32,
) -> ModelSpec:
    """A model on the fake server at ``url``, its fake key exported (the SDKs refuse none)."""
    os.environ[KEY_ENV] = "bench-not-a-real-key"
    return ModelSpec(
        id=model_id,
        provider=provider,
        model=model,
        # The OpenAI SDK's paths start after /v1; the other SDKs add their own prefix.
        base_url=url + "/v1" if provider == "openai" else url,
        api_key_env=KEY_ENV,
        concurrency=concurrency,
        timeout_s=30,
        max_attempts=3,
    )


async def bare_loop(url: str, bodies: list[dict[str, object]], *, concurrency: int = 32) -> float:
    """Seconds to post every body to the fake server's chat endpoint, ``concurrency`` at a time."""
    sem = asyncio.Semaphore(concurrency)
    limits = httpx2.Limits(max_connections=concurrency * 2, max_keepalive_connections=concurrency * 2)
    async with httpx2.AsyncClient(base_url=url, limits=limits, timeout=30) as client:

        async def one(body: dict[str, object]) -> None:
            async with sem:
                response = await client.post("/v1/chat/completions", json=body)
                json.loads(response.content)["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - start
