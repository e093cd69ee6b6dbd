"""A fake provider server speaking the OpenAI, Anthropic and Gemini HTTP APIs on 127.0.0.1.

Driven through the real SDKs (pointed at it with ``base_url``). It answers every numbered
question of a prompt with ``"answer <n>"`` and can inject faults, either at random (seeded
probabilities, set with ``POST /_config``) or scripted per call by a marker in the prompt:
``[[fault:429x2]]`` (the first two attempts of that call get a 429), ``500xN``, ``503xN``,
``401xN`` (bad key, echoed), ``slowxN`` (sleep past the client timeout),
``malformedxN`` (broken JSON body), and
``[[answer:wrong_length|non_json|truncated|refusal|prose]]`` for bad but well-formed replies.
It counts requests and completed (200, well-formed) responses per call id (the
``x-clcg-call-id`` header) and remembers every Authorization value it saw, for leak tests.

Run in a thread (:class:`FakeServer`) or as a process: ``python -m ...fake_server --port N``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_MARK_FAULT = re.compile(r"\[\[fault:(401|429|500|503|slow|malformed)x(\d+)\]\]")
_MARK_ANSWER = re.compile(r"\[\[answer:(\w+)\]\]")
_QUESTION = re.compile(r"^\d+\.\s", re.MULTILINE)
CALL_ID_HEADER = "x-clcg-call-id"


@dataclass
class Faults:
    """Random fault probabilities (each request draws once) and their parameters."""

    latency_s: float = 0.0
    p429: float = 0.0
    p5xx: float = 0.0
    ptimeout: float = 0.0
    pmalformed: float = 0.0
    retry_after_s: float | None = 0.01
    slow_s: float = 2.0
    seed: int = 0


@dataclass
class _State:
    faults: Faults = field(default_factory=Faults)
    rng: random.Random = field(default_factory=random.Random)
    requests: Counter[str] = field(default_factory=Counter)
    completed: Counter[str] = field(default_factory=Counter)
    injected: Counter[str] = field(default_factory=Counter)
    auth_seen: set[str] = field(default_factory=set)
    in_flight: int = 0
    max_in_flight: int = 0
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


def _n_questions(text: str) -> int:
    return len(_QUESTION.findall(text))


def _answer(text: str) -> tuple[str | None, str]:
    """(reply text, kind) for a prompt: kind is normal, wrong_length, non_json, truncated, refusal."""
    n = _n_questions(text)
    mode = _MARK_ANSWER.search(text)
    kind = mode.group(1) if mode else "normal"
    answers = [f"answer {i + 1}" for i in range(n)]
    if kind == "wrong_length":
        return json.dumps(answers[:-1] if n > 1 else [*answers, "extra"]), kind
    if kind == "non_json":
        return "I think the first answer is probably the bridge.", kind
    if kind == "truncated":
        full = json.dumps(answers)
        return full[: max(2, len(full) * 2 // 3)], kind
    if kind == "refusal":
        return None, kind
    if kind == "prose":
        return "Here are the answers:\n```json\n" + json.dumps(answers) + ",\n```", "normal"
    return json.dumps(answers), kind


class _App:
    def __init__(self) -> None:
        self.state = _State()
        self.state.rng.seed(0)
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.openai, methods=["POST"]),
                Route("/v1/messages", self.anthropic, methods=["POST"]),
                Route("/v1beta/models/{model}:generateContent", self.gemini, methods=["POST"]),
                Route("/v1/models/{model}:generateContent", self.gemini, methods=["POST"]),
                Route("/_config", self.config, methods=["POST"]),
                Route("/_stats", self.stats, methods=["GET"]),
                Route("/_reset", self.reset, methods=["POST"]),
            ]
        )

    # -- control -------------------------------------------------------------------------
    async def config(self, request: Request) -> Response:
        self.state.faults = Faults(**(await request.json()))
        self.state.rng.seed(self.state.faults.seed)
        return JSONResponse(asdict(self.state.faults))

    async def stats(self, request: Request) -> Response:
        s = self.state
        return JSONResponse(
            {
                "requests": dict(s.requests),
                "completed": dict(s.completed),
                "injected": dict(s.injected),
                "auth_seen": sorted(s.auth_seen),
                "max_in_flight": s.max_in_flight,
                "total_requests": sum(s.requests.values()),
            }
        )

    async def reset(self, request: Request) -> Response:
        faults = self.state.faults
        self.state = _State(faults=faults)
        self.state.rng.seed(faults.seed)
        return JSONResponse({})

    # -- faults --------------------------------------------------------------------------
    async def _fault(self, request: Request, prompt: str, api: str) -> Response | None:
        """An injected failure for this attempt, or None to answer normally."""
        s = self.state
        call_id = request.headers.get(CALL_ID_HEADER, "-")
        attempt = s.requests[call_id]  # already counted: 1 for the first attempt
        scripted = _MARK_FAULT.search(prompt)
        kind: str | None = None
        if scripted and attempt <= int(scripted.group(2)):
            kind = scripted.group(1)
        else:
            draw = s.rng.random()
            f = s.faults
            for name, p in (
                ("429", f.p429),
                ("503", f.p5xx),
                ("slow", f.ptimeout),
                ("malformed", f.pmalformed),
            ):
                if draw < p:
                    kind = name
                    break
                draw -= p
        if kind is None:
            return None
        s.injected[kind] += 1
        if kind == "slow":
            await asyncio.sleep(s.faults.slow_s)
            return JSONResponse({"error": {"message": "late"}}, status_code=504)
        if kind == "malformed":
            return Response(b'{"id": "x", "choices": [{"mess', media_type="application/json")
        status = int(kind)
        if status == 401:
            # Like some real providers, echo the key in the message: the client must redact it.
            auth = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
            body = {"error": {"message": f"Incorrect API key provided: {auth}", "type": "invalid_api_key"}}
            return JSONResponse(body, status_code=401)
        headers = {}
        if status == 429 and s.faults.retry_after_s is not None:
            headers["retry-after-ms"] = str(int(s.faults.retry_after_s * 1000))
            headers["retry-after"] = str(s.faults.retry_after_s)
        return JSONResponse(_error_body(api, status), status_code=status, headers=headers)

    async def _enter(self, request: Request) -> str:
        s = self.state
        auth = request.headers.get("authorization") or request.headers.get("x-api-key") or ""
        auth = auth or request.headers.get("x-goog-api-key", "")
        s.auth_seen.add(auth)
        s.requests[request.headers.get(CALL_ID_HEADER, "-")] += 1
        s.in_flight += 1
        s.max_in_flight = max(s.max_in_flight, s.in_flight)
        if s.faults.latency_s:
            await asyncio.sleep(s.faults.latency_s)
        return request.headers.get(CALL_ID_HEADER, "-")

    def _done(self, call_id: str) -> None:
        self.state.completed[call_id] += 1

    # -- APIs ----------------------------------------------------------------------------
    async def openai(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
            fault = await self._fault(request, prompt, "openai")
            if fault is not None:
                return fault
            text, kind = _answer(prompt)
            message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
            finish = "length" if kind == "truncated" else "stop"
            if kind == "refusal":
                message["refusal"] = "I can't help with that."
            self._done(call_id)
            return JSONResponse(
                {
                    "id": f"chatcmpl-{call_id[:12]}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                    "usage": {
                        "prompt_tokens": len(prompt) // 4,
                        "completion_tokens": len(text or "") // 4,
                        "total_tokens": (len(prompt) + len(text or "")) // 4,
                    },
                }
            )
        finally:
            self.state.in_flight -= 1

    def anthropic_message(self, body: dict[str, Any], call_id: str) -> dict[str, Any]:
        prompt = str(body.get("system", "")) + "\n" + "\n".join(str(m["content"]) for m in body["messages"])
        text, kind = _answer(prompt)
        stop = {"truncated": "max_tokens", "refusal": "refusal"}.get(kind, "end_turn")
        return {
            "id": f"msg_{call_id[:12]}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}] if text is not None else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": len(prompt) // 4, "output_tokens": len(text or "") // 4},
        }

    async def anthropic(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            prompt = "\n".join(str(m["content"]) for m in body["messages"])
            fault = await self._fault(request, prompt, "anthropic")
            if fault is not None:
                return fault
            self._done(call_id)
            return JSONResponse(self.anthropic_message(body, call_id))
        finally:
            self.state.in_flight -= 1

    async def gemini(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            prompt = "\n".join(p.get("text", "") for c in body["contents"] for p in c["parts"])
            fault = await self._fault(request, prompt, "gemini")
            if fault is not None:
                return fault
            text, kind = _answer(prompt)
            finish = {"truncated": "MAX_TOKENS", "refusal": "SAFETY"}.get(kind, "STOP")
            candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
            if text is not None:
                candidate["content"] = {"role": "model", "parts": [{"text": text}]}
            self._done(call_id)
            return JSONResponse(
                {
                    "candidates": [candidate],
                    "usageMetadata": {
                        "promptTokenCount": len(prompt) // 4,
                        "candidatesTokenCount": len(text or "") // 4,
                        "totalTokenCount": (len(prompt) + len(text or "")) // 4,
                    },
                    "modelVersion": request.path_params["model"],
                }
            )
        finally:
            self.state.in_flight -= 1


def _error_body(api: str, status: int) -> dict[str, Any]:
    message = "rate limited" if status == 429 else "server error"
    if api == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        name = "RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE"
        return {"error": {"code": status, "message": message, "status": name}}
    return {"error": {"message": message, "type": "rate_limit" if status == 429 else "server_error"}}


class FakeServer:
    """The fake server in a background thread of this process."""

    def __init__(self, faults: Faults | None = None) -> None:
        self._app = _App()
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
    def state(self) -> _State:
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

    def set_faults(self, faults: Faults) -> None:
        self._call("POST", "/_config", asdict(faults))
        self._call("POST", "/_reset", {})

    def __enter__(self) -> ServerProcess:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "clcg_pipeline_tests.inference.fake_server", "--port", str(self.port)]
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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0)
    args = parser.parse_args()
    app = _App()
    app.state.faults = Faults(latency_s=args.latency)
    uvicorn.run(
        app.app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False, lifespan="off"
    )


if __name__ == "__main__":
    main()
