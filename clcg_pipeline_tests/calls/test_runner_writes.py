"""The runner's per-call work kept cheap: batched cache/ledger writes, the OpenAI reply read as bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai.types.chat import ChatCompletion

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._coord import SpendLedger, coord_root
from clcg_pipeline.calls._providers._base import ProviderError
from clcg_pipeline.calls._providers.openai import output_from_body, output_from_completion
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")


def _body(**message: object) -> dict[str, object]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hi", **message},
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }


@pytest.mark.parametrize("message", [{}, {"refusal": "I cannot help"}, {"content": None}])
def test_body_reads_as_the_sdk_model_would(message: dict[str, object]) -> None:
    body = _body(**message)
    assert output_from_body(body) == output_from_completion(ChatCompletion.model_validate(body))


@pytest.mark.parametrize(
    "body",
    [{}, {"choices": []}, {"choices": [None]}, [1, 2], "text", {"choices": [{"message": {"content": 5}}]}],
)
def test_body_of_the_wrong_shape_is_a_malformed_response(body: object) -> None:
    with pytest.raises(ProviderError) as caught:
        output_from_body(body)
    assert (caught.value.kind, caught.value.error_class) == ("transient", "MalformedResponse")


def test_every_call_is_cached_and_settled_in_the_ledger(server: FakeServer, tmp_path: Path) -> None:
    spec = spec_for("openai", server.url, concurrency=16)
    requests = [make_request(tag=f"t{i}") for i in range(60)]
    cache_dir = str(tmp_path / "cache")
    results = run_requests(spec, requests, CallOptions(cache_dir=cache_dir, policy=FAST))
    assert all(r.outcome == "ok" and not r.cached for r in results)
    cache = CallCache(cache_dir)
    assert all(cache.get(r.call_id) is not None for r in results)
    root = coord_root(cache_dir)
    assert root is not None
    lines = [json.loads(line) for line in (root / "spend.jsonl").read_text().splitlines()]
    settled = [line for line in lines if line["op"] == "settle"]
    assert sorted(line["call_id"] for line in settled) == sorted(r.call_id for r in results)
    assert sum(line["usd"] for line in settled) == pytest.approx(sum(r.cost_usd for r in results))
    assert SpendLedger(root).totals()[0] == pytest.approx(sum(r.cost_usd for r in results))


def test_a_failed_cache_write_fails_the_run(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: CallCache, entries: dict[str, dict[str, object]]) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(CallCache, "put_many", broken)
    with pytest.raises(OSError, match="disk full"):
        run_requests(
            spec_for("openai", server.url),
            [make_request(tag="x")],
            CallOptions(cache_dir=str(tmp_path), policy=FAST),
        )


def test_settle_many_appends_every_line_in_one_write(tmp_path: Path) -> None:
    ledger = SpendLedger(tmp_path)
    ledger.settle_many([(None, 0.5, "m", "a" * 16), (None, 0.25, "m", "b" * 16)])
    ledger.settle_many([])
    assert ledger.totals()[0] == pytest.approx(0.75)
    ledger.close()
