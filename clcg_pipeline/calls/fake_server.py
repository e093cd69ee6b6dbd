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

Run in a thread (:class:`FakeServer`) or as a process: ``python -m ...fake_server --port N``.

It lives in the package, not in the test package, because the tests, the benchmarks in
``bench/`` and a deployment smoke test (docs/DEPLOY.md: a worker image run against it with no
real key) all use it, and ``bench/`` must not depend on the tests. It needs only uvicorn and
starlette, which dagster-webserver already installs.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import email.parser
import email.policy
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

_MARK_FAULT = re.compile(r"\[\[fault:(400|401|429|500|503|slow|malformed)x(\d+)\]\]")
_MARK_ANSWER = re.compile(r"\[\[answer:(\w+)\]\]")
# A scripted reply, returned verbatim (judge tests: malformed JSON, extra keys, bad evidence).
_MARK_REPLY = re.compile(r"\[\[reply:([A-Za-z0-9_=-]+)\]\]")
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
    batch_polls: int = 1  # retrievals that still report a batch in progress


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
    # For benchmarks: when calls were in flight (first arrival, last departure, busy seconds).
    first_t: float | None = None
    last_t: float | None = None
    busy_s: float = 0.0
    busy_since: float = 0.0
    departures: list[float] = field(default_factory=list)  # monotonic times, for a calls/s timeline
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    bodies: dict[str, dict[str, Any]] = field(default_factory=dict)  # last body per call id
    batch_creates: int = 0
    batch_requests: Counter[str] = field(default_factory=Counter)


def _n_questions(text: str) -> int:
    return len(_QUESTION.findall(text))


def _answer(text: str) -> tuple[str | None, str]:
    """(reply text, kind) for a prompt: kind is normal, wrong_length, non_json, truncated, refusal."""
    n = _n_questions(text)
    mode = _MARK_ANSWER.search(text)
    kind = mode.group(1) if mode else "normal"
    scripted = _MARK_REPLY.search(text)
    if scripted and kind == "normal":
        return base64.urlsafe_b64decode(scripted.group(1)).decode("utf-8"), kind
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


def reply_marker(text: str) -> str:
    """The prompt marker that makes the server reply exactly ``text`` (urlsafe base64 inside)."""
    return f"[[reply:{base64.urlsafe_b64encode(text.encode('utf-8')).decode('ascii')}]]"


def _batch_line_failed(prompt: str) -> bool:
    scripted = _MARK_FAULT.search(prompt)
    return bool(scripted and scripted.group(1) in ("500", "503"))


class _BatchMixin:
    """OpenAI Batch (files + batches) and Anthropic Message Batches on the same fake server."""

    state: _State

    def _new_batch(self, kind: str, outputs: list[str]) -> str:
        s = self.state
        s.batch_creates += 1
        batch_id = f"batch_{kind}_{s.batch_creates}"
        s.batches[batch_id] = {"kind": kind, "polls_left": s.faults.batch_polls, "outputs": outputs}
        return batch_id

    def _poll(self, batch_id: str) -> bool:
        batch = self.state.batches[batch_id]
        if batch["polls_left"] > 0:
            batch["polls_left"] -= 1
            return False
        return True

    # -- OpenAI ----------------------------------------------------------------------------
    async def openai_file_create(self, request: Request) -> Response:
        # Parsed with the standard library: starlette's form parser needs python-multipart.
        raw = await request.body()
        head = f"content-type: {request.headers['content-type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + raw)
        parts = {p.get_param("name", header="content-disposition"): p for p in message.iter_parts()}  # type: ignore[attr-defined]
        content = parts["file"].get_payload(decode=True).decode()
        purpose = parts["purpose"].get_payload(decode=True).decode() if "purpose" in parts else "batch"
        file_id = f"file-{len(self.state.files) + 1}"
        self.state.files[file_id] = content
        return JSONResponse(
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": "batch.jsonl",
                "purpose": purpose,
                "status": "processed",
            }
        )

    async def openai_file_content(self, request: Request) -> Response:
        return Response(self.state.files[request.path_params["file_id"]], media_type="application/jsonl")

    def _openai_batch(self, batch_id: str) -> dict[str, Any]:
        batch = self.state.batches[batch_id]
        done = batch.get("output_file_id") is not None
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": batch["input_file_id"],
            "completion_window": "24h",
            "status": "completed" if done else "in_progress",
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": None,
            "created_at": 0,
            "request_counts": {
                "total": len(batch["outputs"]),
                "completed": len(batch["outputs"]) if done else 0,
                "failed": 0,
            },
        }

    async def openai_batch_create(self, request: Request) -> Response:
        body = await request.json()
        lines = [json.loads(x) for x in self.state.files[body["input_file_id"]].splitlines() if x.strip()]
        outputs = []
        for line in lines:
            self.state.batch_requests[line["custom_id"]] += 1
            msgs = line["body"]["messages"]
            prompt = "\n".join(str(m.get("content", "")) for m in msgs)
            if _batch_line_failed(prompt):
                out = {
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": "server_error", "message": "failed"},
                }
            else:
                text, kind = _answer(prompt)
                message = {
                    "role": "assistant",
                    "content": text,
                    "refusal": "no" if kind == "refusal" else None,
                }
                out = {
                    "id": "r",
                    "custom_id": line["custom_id"],
                    "error": None,
                    "response": {
                        "status_code": 200,
                        "request_id": "q",
                        "body": {
                            "id": "c",
                            "object": "chat.completion",
                            "created": 0,
                            "model": line["body"]["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "message": message,
                                    "logprobs": None,
                                    "finish_reason": "length" if kind == "truncated" else "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": len(prompt) // 4,
                                "completion_tokens": len(text or "") // 4,
                                "total_tokens": 0,
                            },
                        },
                    },
                }
            outputs.append(json.dumps(out))
        batch_id = self._new_batch("openai", outputs)
        self.state.batches[batch_id]["input_file_id"] = body["input_file_id"]
        return JSONResponse(self._openai_batch(batch_id))

    async def openai_batch_get(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        if self.state.batches[batch_id]["kind"] == "gemini":  # same path as Gemini's /v1/batches/{id}
            return await self.gemini_batch_get(request)  # type: ignore[attr-defined]
        batch = self.state.batches[batch_id]
        if self._poll(batch_id) and batch.get("output_file_id") is None:
            file_id = f"file-out-{batch_id}"
            self.state.files[file_id] = "\n".join(batch["outputs"]) + "\n"
            batch["output_file_id"] = file_id
        return JSONResponse(self._openai_batch(batch_id))

    # -- Gemini ----------------------------------------------------------------------------
    def gemini_response(self, prompt: str, model: str) -> dict[str, Any]:
        text, kind = _answer(prompt)
        finish = {"truncated": "MAX_TOKENS", "refusal": "SAFETY"}.get(kind, "STOP")
        candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
        if text is not None:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": len(prompt) // 4,
                "candidatesTokenCount": len(text or "") // 4,
                "totalTokenCount": (len(prompt) + len(text or "")) // 4,
            },
            "modelVersion": model,
        }

    def _gemini_batch(self, batch_id: str) -> dict[str, Any]:
        batch = self.state.batches[batch_id]
        meta: dict[str, Any] = {"name": f"batches/{batch_id}", "model": batch["model"]}
        if batch.get("ended"):
            meta["state"] = "BATCH_STATE_SUCCEEDED"
            meta["output"] = {
                "inlinedResponses": {"inlinedResponses": [json.loads(o) for o in batch["outputs"]]}
            }
        else:
            meta["state"] = "BATCH_STATE_PENDING"
        return {"name": f"batches/{batch_id}", "metadata": meta, "done": bool(batch.get("ended"))}

    async def gemini_batch_create(self, request: Request) -> Response:
        body = await request.json()
        model = request.path_params["model"]
        outputs = []
        for item in body["batch"]["inputConfig"]["requests"]["requests"]:
            key = item["metadata"]["key"]
            self.state.batch_requests[key] += 1
            prompt = "\n".join(p.get("text", "") for c in item["request"]["contents"] for p in c["parts"])
            if _batch_line_failed(prompt):
                out: dict[str, Any] = {
                    "error": {"code": 500, "message": "failed"},
                    "metadata": item["metadata"],
                }
            else:
                out = {"response": self.gemini_response(prompt, model), "metadata": item["metadata"]}
            outputs.append(json.dumps(out))
        batch_id = self._new_batch("gemini", outputs)
        self.state.batches[batch_id]["model"] = f"models/{model}"
        return JSONResponse(self._gemini_batch(batch_id))

    async def gemini_batch_get(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        if self._poll(batch_id):
            self.state.batches[batch_id]["ended"] = True
        return JSONResponse(self._gemini_batch(batch_id))

    # -- Anthropic -------------------------------------------------------------------------
    def _anthropic_batch(self, request: Request, batch_id: str) -> dict[str, Any]:
        batch = self.state.batches[batch_id]
        ended = batch.get("ended", False)
        n = len(batch["outputs"])
        return {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": n if ended else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-01-01T00:00:00Z",
            "expires_at": "2026-01-02T00:00:00Z",
            "ended_at": "2026-01-01T01:00:00Z" if ended else None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": f"{request.base_url}v1/messages/batches/{batch_id}/results" if ended else None,
        }

    async def anthropic_batch_create(self, request: Request) -> Response:
        body = await request.json()
        outputs = []
        for item in body["requests"]:
            self.state.batch_requests[item["custom_id"]] += 1
            params = item["params"]
            prompt = "\n".join(str(m["content"]) for m in params["messages"])
            if _batch_line_failed(prompt):
                result: dict[str, Any] = {
                    "type": "errored",
                    "error": {"type": "error", "error": {"type": "api_error", "message": "failed"}},
                }
            else:
                result = {"type": "succeeded", "message": self.anthropic_message(params, item["custom_id"])}  # type: ignore[attr-defined]
            outputs.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
        batch_id = self._new_batch("anthropic", outputs)
        return JSONResponse(self._anthropic_batch(request, batch_id))

    async def anthropic_batch_get(self, request: Request) -> Response:
        batch_id = request.path_params["batch_id"]
        if self._poll(batch_id):
            self.state.batches[batch_id]["ended"] = True
        return JSONResponse(self._anthropic_batch(request, batch_id))

    async def anthropic_batch_results(self, request: Request) -> Response:
        outputs = self.state.batches[request.path_params["batch_id"]]["outputs"]
        return Response("\n".join(outputs) + "\n", media_type="application/binary")


class _App(_BatchMixin):
    def __init__(self) -> None:
        self.state = _State()
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
                "total_requests": sum(s.requests.values()),
                "batch_creates": s.batch_creates,
                "batch_requests": dict(s.batch_requests),
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
        s.in_flight += 1
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
            self._leave()

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
