"""The fake server's routes: the three providers' chat APIs, faults injected, and its control endpoints."""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from clcg_pipeline.calls.fake_server._batches import BatchRoutes
from clcg_pipeline.calls.fake_server._state import (
    CALL_ID_HEADER,
    MARK_FAULT,
    Faults,
    State,
    scripted_answer,
    usage_tokens,
)


class App(BatchRoutes):
    def __init__(self) -> None:
        self.state = State()
        self.state.rng.seed(0)
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self.openai, methods=["POST"]),
                Route("/v1/messages", self.anthropic, methods=["POST"]),
                Route("/v1beta/models/{model}:generateContent", self.gemini, methods=["POST"]),
                Route("/v1/models/{model}:generateContent", self.gemini, methods=["POST"]),
                Route("/v1/files", self.openai_file_create, methods=["POST"]),
                Route("/v1/files/{file_id}/content", self.openai_file_content, methods=["GET"]),
                Route("/v1/batches", self.openai_batch_create, methods=["POST"]),
                Route("/v1/batches/{batch_id}", self.openai_batch_get, methods=["GET"]),
                Route("/v1/messages/batches", self.anthropic_batch_create, methods=["POST"]),
                Route("/v1/messages/batches/{batch_id}", self.anthropic_batch_get, methods=["GET"]),
                Route(
                    "/v1/messages/batches/{batch_id}/results", self.anthropic_batch_results, methods=["GET"]
                ),
                Route("/v1/models/{model}:batchGenerateContent", self.gemini_batch_create, methods=["POST"]),
                Route(
                    "/v1beta/models/{model}:batchGenerateContent", self.gemini_batch_create, methods=["POST"]
                ),
                Route("/v1/batches/{batch_id}", self.gemini_batch_get, methods=["GET"]),
                Route("/v1beta/batches/{batch_id}", self.gemini_batch_get, methods=["GET"]),
                Route("/_config", self.config, methods=["POST"]),
                Route("/_stats", self.stats, methods=["GET"]),
                Route("/_bodies", self.bodies, methods=["GET"]),
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
                "busy_s": s.busy_s,
                "calling_span_s": (s.last_t - s.first_t) if s.first_t and s.last_t else 0.0,
                "departures_s": [round(t - s.first_t, 3) for t in s.departures] if s.first_t else [],
                "arrivals_s": [round(t - s.first_t, 3) for t in s.arrivals] if s.first_t else [],
                "in_flight_at_arrival": s.in_flight_at_arrival,
                "total_requests": sum(s.requests.values()),
                "batch_creates": s.batch_creates,
                "batch_requests": dict(s.batch_requests),
            }
        )

    async def bodies(self, request: Request) -> Response:
        """The last body of each call since the reset: a baseline can send the very same calls."""
        return JSONResponse(list(self.state.bodies.values()))

    async def reset(self, request: Request) -> Response:
        faults = self.state.faults
        self.state = State(faults=faults)
        self.state.rng.seed(faults.seed)
        return JSONResponse({})

    # -- faults --------------------------------------------------------------------------
    async def _fault(self, request: Request, prompt: str, api: str) -> Response | None:
        """An injected failure for this attempt, or None to answer normally."""
        s = self.state
        call_id = request.headers.get(CALL_ID_HEADER, "-")
        attempt = s.requests[call_id]  # already counted: 1 for the first attempt
        scripted = MARK_FAULT.search(prompt)
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
        if status == 400:
            message = "This model's maximum context length is 8192 tokens; the prompt is longer."
            return JSONResponse(
                {"error": {"message": message, "type": "invalid_request_error"}}, status_code=400
            )
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
        now = time.monotonic()
        if s.in_flight == 0:
            s.busy_since = now
        if s.first_t is None:
            s.first_t = now
        s.arrivals.append(now)
        s.in_flight += 1
        s.in_flight_at_arrival.append(s.in_flight)
        s.max_in_flight = max(s.max_in_flight, s.in_flight)
        if s.faults.latency_s:
            await asyncio.sleep(s.faults.latency_s)
        return request.headers.get(CALL_ID_HEADER, "-")

    def _done(self, call_id: str) -> None:
        self.state.completed[call_id] += 1

    def _leave(self) -> None:
        s = self.state
        s.in_flight -= 1
        s.last_t = time.monotonic()
        s.departures.append(s.last_t)
        if s.in_flight == 0:
            s.busy_s += s.last_t - s.busy_since

    # -- APIs ----------------------------------------------------------------------------
    async def openai(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            self.state.bodies[call_id] = body
            prompt = "\n".join(str(m.get("content", "")) for m in body["messages"])
            fault = await self._fault(request, prompt, "openai")
            if fault is not None:
                return fault
            text, kind = scripted_answer(prompt)
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
                        "prompt_tokens": usage_tokens(prompt),
                        "completion_tokens": usage_tokens(text),
                        "total_tokens": usage_tokens(prompt) + usage_tokens(text),
                    },
                }
            )
        finally:
            self._leave()

    def anthropic_message(self, body: dict[str, Any], call_id: str) -> dict[str, Any]:
        prompt = str(body.get("system", "")) + "\n" + "\n".join(str(m["content"]) for m in body["messages"])
        text, kind = scripted_answer(prompt)
        stop = {"truncated": "max_tokens", "refusal": "refusal"}.get(kind, "end_turn")
        return {
            "id": f"msg_{call_id[:12]}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}] if text is not None else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": usage_tokens(prompt), "output_tokens": usage_tokens(text)},
        }

    async def anthropic(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            self.state.bodies[call_id] = body
            prompt = "\n".join(str(m["content"]) for m in body["messages"])
            fault = await self._fault(request, prompt, "anthropic")
            if fault is not None:
                return fault
            self._done(call_id)
            return JSONResponse(self.anthropic_message(body, call_id))
        finally:
            self._leave()

    async def gemini(self, request: Request) -> Response:
        call_id = await self._enter(request)
        try:
            body = await request.json()
            self.state.bodies[call_id] = body
            prompt = "\n".join(p.get("text", "") for c in body["contents"] for p in c["parts"])
            fault = await self._fault(request, prompt, "gemini")
            if fault is not None:
                return fault
            text, kind = scripted_answer(prompt)
            finish = {"truncated": "MAX_TOKENS", "refusal": "SAFETY"}.get(kind, "STOP")
            candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
            if text is not None:
                candidate["content"] = {"role": "model", "parts": [{"text": text}]}
            self._done(call_id)
            return JSONResponse(
                {
                    "candidates": [candidate],
                    "usageMetadata": {
                        "promptTokenCount": usage_tokens(prompt),
                        "candidatesTokenCount": usage_tokens(text),
                        "totalTokenCount": usage_tokens(prompt) + usage_tokens(text),
                    },
                    "modelVersion": request.path_params["model"],
                }
            )
        finally:
            self._leave()


def _error_body(api: str, status: int) -> dict[str, Any]:
    message = "rate limited" if status == 429 else "server error"
    if api == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        name = "RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE"
        return {"error": {"code": status, "message": message, "status": name}}
    return {"error": {"message": message, "type": "rate_limit" if status == 429 else "server_error"}}
