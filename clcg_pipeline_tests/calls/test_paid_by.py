"""Each cache entry says who paid for its answer (run, host, time, partition) the moment it is
written, so a run killed before any calls table recorded the call is still named."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from clcg_pipeline.calls import CallOptions, run_requests
from clcg_pipeline.calls._cache import CallCache
from clcg_pipeline.calls._results import call_row, from_cache
from clcg_pipeline.calls.fake_server import FakeServer
from clcg_pipeline_tests.calls.conftest import FAST, make_request, spec_for

pytestmark = pytest.mark.usefixtures("fake_key")

KEY = "en|m"


def test_an_answer_is_cached_with_its_payer_host_time_and_partition(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "host-a")
    spec = spec_for("openai", server.url)
    cache_dir = str(tmp_path / "cache")
    # A stream sending ``en|m``'s calls ahead: its token names the payer, the origin the partition.
    options = CallOptions(cache_dir=cache_dir, policy=FAST, origin=f"stream-1/{KEY}")
    (result,) = run_requests(spec, [make_request(tag="a")], options)
    entry = CallCache(cache_dir).get(result.call_id)
    assert entry is not None and result.cost_usd > 0
    assert (entry["paid_run"], entry["paid_host"], entry["paid_for"]) == ("stream-1", "host-a", KEY)
    assert entry["cost_usd"] == result.cost_usd and entry["created"] > 0


def test_outside_any_run_or_stream_the_process_is_the_payer(server: FakeServer, tmp_path: Path) -> None:
    cache_dir = str(tmp_path / "cache")
    (result,) = run_requests(
        spec_for("openai", server.url), [make_request(tag="b")], CallOptions(cache_dir=cache_dir, policy=FAST)
    )
    entry = CallCache(cache_dir).get(result.call_id)
    assert entry is not None and entry["paid_run"].startswith("process-") and "paid_for" not in entry


def _entry(**paid: object) -> dict[str, object]:
    return {"text": "x", "outcome": "ok", "cost_usd": 0.02, "created": 1_800_000_000.5, **paid}


def test_a_cache_hit_carries_its_payer_into_the_partition_it_was_paid_for() -> None:
    entry = _entry(paid_run="killed-run", paid_host="host-a", paid_for=KEY)
    mine = from_cache("ab" * 8, entry, f"/{KEY}")  # the partition's own origin (no stream)
    assert mine.cached and (mine.paid_run, mine.paid_host) == ("killed-run", "host-a")
    row = call_row(spec_for("openai", "http://unused"), make_request(tag="c"), mine)
    assert (row["paid_run"], row["paid_host"]) == ("killed-run", "host-a")
    assert row["paid_at"].isoformat() == "2027-01-15T08:00:00.500000+00:00"
    # Another partition asking the same request found it cached: the payment is not its to record.
    other = from_cache("ab" * 8, entry, "/pt|m")
    assert other.cached and other.paid_run is None
    assert call_row(spec_for("openai", "http://unused"), make_request(tag="c"), other)["paid_run"] is None


def test_an_entry_from_before_payers_names_the_stream_of_its_origin() -> None:
    older = _entry(origin=f"stream-0/{KEY}")
    assert from_cache("cd" * 8, older, f"/{KEY}").paid_run == "stream-0"
    assert from_cache("cd" * 8, _entry(), f"/{KEY}").paid_run is None  # no payer known: cached
