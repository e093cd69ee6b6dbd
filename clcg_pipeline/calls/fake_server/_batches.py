"""The batch APIs of the fake server: OpenAI Batch (files + batches), Anthropic Message Batches, Gemini."""

from __future__ import annotations

import email.message
import email.parser
import email.policy
import json
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clcg_pipeline.calls.fake_server._state import MARK_FAULT, State, scripted_answer, usage_tokens


def _form_field(part: email.message.Message) -> str:
    """A multipart form field's text; a field that is itself multipart is not a file upload."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        raise ValueError(
            f"multipart field {part.get_param('name', header='content-disposition')!r}: not a leaf part"
        )
    return payload.decode()


def _batch_line_failed(prompt: str) -> bool:
    scripted = MARK_FAULT.search(prompt)
    return bool(scripted and scripted.group(1) in ("500", "503"))


class BatchRoutes:
    """OpenAI Batch (files + batches) and Anthropic Message Batches on the same fake server."""

    state: State

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
        content = _form_field(parts["file"])
        purpose = _form_field(parts["purpose"]) if "purpose" in parts else "batch"
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
                text, kind = scripted_answer(prompt)
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
                                "prompt_tokens": usage_tokens(prompt),
                                "completion_tokens": usage_tokens(text),
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
        text, kind = scripted_answer(prompt)
        finish = {"truncated": "MAX_TOKENS", "refusal": "SAFETY"}.get(kind, "STOP")
        candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
        if text is not None:
            candidate["content"] = {"role": "model", "parts": [{"text": text}]}
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": usage_tokens(prompt),
                "candidatesTokenCount": usage_tokens(text),
                "totalTokenCount": usage_tokens(prompt) + usage_tokens(text),
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
