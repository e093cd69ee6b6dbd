"""The intent logs (storage/_intents.py): a dead process's calls sent and never cached are lost
at the kill, counted once each in the spend view; nothing already on record counts again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from clcg_pipeline.storage import (
    LOST_OUTCOME,
    IntentLog,
    build_catalog,
    call_spend,
    default_catalog_path,
    run_named_query,
    sent_by,
)
from clcg_pipeline.storage._intents import INTENTS_DIR, intents_folder, lost_at_kill

A, B, C, D = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)


def _cache(root: Path, call_id: str, entry: dict[str, object]) -> None:
    folder = root / call_id[:2]
    folder.mkdir(parents=True, exist_ok=True)
    body = {"call_id": call_id, "model_id": "m", "cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}
    (folder / f"{call_id}.json").write_text(json.dumps({**body, **entry}))


def _killed(root: Path) -> IntentLog:
    """A log with four sends: A answered, B cached but killed before its answered line, C ended
    with an error, D in flight; the process then "dies" (its descriptor closed, the log kept)."""
    intents = IntentLog(root)
    for call_id in (A, B, C, D):
        intents.sent(call_id, "m", "run-1", "en|m", 0.5 if call_id == D else 0.0)
    _cache(root, A, sent_by({"paid_run": "run-1"}, intents))
    intents.answered([A])
    _cache(root, B, sent_by({"paid_run": "run-1"}, intents))
    intents.ended(C)
    return intents


def test_only_the_calls_in_flight_of_a_dead_process_are_lost(tmp_path: Path) -> None:
    intents = _killed(tmp_path)
    assert lost_at_kill(tmp_path) == []  # alive: its calls in flight are not lost
    intents.close()
    (lost,) = lost_at_kill(tmp_path)
    assert lost["call_id"] == D and lost["outcome"] == LOST_OUTCOME
    assert (lost["paid_run"], lost["partition"], lost["language"]) == ("run-1", "en|m", "en")
    assert lost["cost_usd"] == 0.5 and lost["error"].startswith("cost estimated: the worst case")
    # Read once, the dead log keeps its lost send alone: the next read is short, and the same.
    (log_file,) = (tmp_path / INTENTS_DIR).glob("*.log")
    assert len(log_file.read_bytes().splitlines()) == 1
    assert lost_at_kill(tmp_path) == [lost]


def test_a_lost_call_sent_again_elsewhere_counts_both_payments(tmp_path: Path) -> None:
    """The rerun's answer (another payer) is one payment, the lost send another, at its usage."""
    root = tmp_path / "cache" / "calls"
    _killed(root).close()
    _cache(root, D, {"paid_run": "run-2", "cost_usd": 0.125})
    rows = call_spend(tmp_path)
    paid = rows[rows["paid"]]
    assert sorted(paid["call_id"]) == [A, B, D, D]
    lost = paid[paid["outcome"] == LOST_OUTCOME]
    assert list(lost["paid_usd"]) == [0.125] and list(lost["run"]) == ["run-1"]
    assert list(lost["calls_table"]) == ["killed run"]
    # The named query shows it apart, labelled by its outcome.
    build_catalog(tmp_path)
    costs = run_named_query(default_catalog_path(tmp_path), "call_costs", {})
    labelled = costs[costs["outcome"] == LOST_OUTCOME]
    assert list(labelled["paid_calls"]) == [1] and list(labelled["paid_usd"]) == [0.125]


def test_a_log_with_nothing_in_flight_is_removed_at_close(tmp_path: Path) -> None:
    intents = IntentLog(tmp_path)
    intents.sent(A, "m", "run-1", None, 0.0)
    intents.answered([A])
    intents.close()
    assert not list((tmp_path / INTENTS_DIR).glob("*.log"))


def test_a_log_that_cannot_be_written_is_said_and_the_calls_go_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder should be")
    intents = IntentLog(blocked)
    intents.sent(A, "m", "run-1", None, 0.0)
    intents.sent(B, "m", "run-1", None, 0.0)
    said = [record for record in caplog.records if "intent log" in record.getMessage()]
    assert len(said) == 1 and "not noted" in said[0].getMessage()


def _remote_host(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """A host's own user cache folder (its coordination folders): the intent logs of an
    object-store cache are kept there."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("CLCG_COORD_DIR", raising=False)


def test_an_object_store_caches_lost_calls_are_kept_and_read_on_the_host_that_sent(
    bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An s3:// cache has no appends nor locks: the log is in the host's coordination folder for
    the cache URL, and the spend built on that host counts the lost call, priced from the
    rerun's answer in a segment; the call the dead process cached itself is not lost. Another
    host sharing the data folder does not see the log."""
    from clcg_pipeline.calls import CallCache

    _remote_host(monkeypatch, tmp_path / "host-a")
    data = f"s3://{bucket}/clcg"
    root = f"{data}/cache/calls"
    cache = CallCache(root)
    intents = IntentLog(root)
    for call_id in (A, D):
        intents.sent(call_id, "m", "run-1", "en|m", 0.0)
    body = {"model_id": "m", "cost_usd": 0.25, "input_tokens": 10, "output_tokens": 5}
    cache.put_many({A: sent_by({**body, "paid_run": "run-1"}, intents)})  # killed before "answered"
    os.close(intents._fd or -1)  # the process dies: its lock goes, its lines stay
    cache.put_many({D: {**body, "paid_run": "run-2", "cost_usd": 0.125}})  # the rerun's answer
    (log_file,) = intents_folder(root).glob("*.log")
    assert str(log_file).startswith(str(tmp_path / "host-a"))
    rows = call_spend(data)
    lost = rows[rows["paid"] & (rows["outcome"] == LOST_OUTCOME)]
    assert list(lost["call_id"]) == [D] and list(lost["paid_usd"]) == [0.125]
    assert list(lost["run"]) == ["run-1"]
    assert sorted(rows.loc[rows["paid"], "call_id"]) == [A, D, D]
    _remote_host(monkeypatch, tmp_path / "host-b")  # another host: its own folder, no log of a's
    assert sorted(call_spend(data).loc[lambda r: r["paid"], "call_id"]) == [A, D]


def test_the_intent_folder_of_an_object_store_cache_is_its_coordination_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same folder as the host's file locks for that cache (calls/_coord_files.py)."""
    from clcg_pipeline.calls._coord_files import coord_root

    _remote_host(monkeypatch, tmp_path)
    url = "s3://b/clcg/cache/calls"
    assert intents_folder(url) == coord_root(url) / INTENTS_DIR
    assert intents_folder(url) != intents_folder("s3://other/clcg/cache/calls")
    monkeypatch.setenv("CLCG_COORD_DIR", str(tmp_path / "coord"))
    assert intents_folder(url) == coord_root(url) / INTENTS_DIR == tmp_path / "coord" / INTENTS_DIR
    assert intents_folder(tmp_path / "cache") == tmp_path / "cache" / INTENTS_DIR  # a local cache's own
