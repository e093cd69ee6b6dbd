"""Two writers of one partition's calls table, on S3 (moto) and a local folder: no crash, no lost payment.

The race is injected, not hoped for: writer B writes the partition while writer A sits between
reading the stored table and writing its own (inside A's merge, ``keep_paid_record``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from upath import UPath

from clcg_pipeline.storage import _files, _io_manager, read_frame, write_frame
from clcg_pipeline.storage._files import ConcurrentWriteError
from clcg_pipeline_tests.storage.conftest import write_output

ASSET = "probe_calls"  # calls-shaped, outside the table contracts: the merge is what is tested


def calls(paid: str) -> pd.DataFrame:
    """Calls x and y of one partition; this writer paid for ``paid``, found the other cached
    (both, where ``paid`` is ``"none"``)."""
    return pd.DataFrame(
        {
            "call_id": ["x", "y"],
            "cached": [paid != "x", paid != "y"],
            "cost_usd": [0.01, 0.02],
            "input_tokens": [100, 200],
            "output_tokens": [10, 20],
            "latency_s": [0.5, 0.5],
            "attempts": [1, 1],
            "outcome": ["ok", "ok"],
        }
    )


def _write(base: str, frame: pd.DataFrame, run_id: str) -> None:
    write_output(base, ASSET, frame, run_id, partition="en")


def _race_inside_merge(monkeypatch: pytest.MonkeyPatch, other_writer: Callable[[], None]) -> None:
    """Run ``other_writer`` once, inside the first writer's merge (after its read, before its write)."""
    real = _io_manager.keep_paid_record
    fired: list[bool] = []

    def racing(*args: object, **kwargs: object) -> pd.DataFrame:
        if not fired:
            fired.append(True)
            other_writer()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_io_manager, "keep_paid_record", racing)


def _assert_paid(base: str, paid_runs: dict[str, str]) -> None:
    table = read_frame(UPath(base) / ASSET / "language=en" / "data.parquet")
    assert sorted(table["call_id"]) == ["x", "y"]  # a valid table: each call once
    paid = table[~table["cached"].astype(bool)].set_index("call_id")
    assert paid["paid_run"].to_dict() == paid_runs
    assert paid["cost_usd"].to_dict() == {call: {"x": 0.01, "y": 0.02}[call] for call in paid_runs}


def _assert_both_payments_kept(base: str) -> None:
    _assert_paid(base, {"x": "run-a", "y": "run-b"})


def race_two_writers(
    monkeypatch: pytest.MonkeyPatch, base: str, first: pd.DataFrame, second: pd.DataFrame
) -> None:
    """Writer A ("run-a", ``first``) and writer B ("run-b", ``second``) of one partition in one
    process, B started inside A's merge: both finish without an error."""
    errors: list[BaseException] = []
    other_done = threading.Event()

    def other() -> None:
        try:
            _write(base, second, "run-b")
        except BaseException as exc:
            errors.append(exc)
        finally:
            other_done.set()

    thread = threading.Thread(target=other)

    def start_other_and_let_it_finish() -> None:
        thread.start()
        # Unlocked (before the fix) B writes within this wait; locked, it waits for A's write.
        other_done.wait(timeout=2)

    _race_inside_merge(monkeypatch, start_other_and_let_it_finish)
    _write(base, first, "run-a")
    thread.join(timeout=30)
    assert not thread.is_alive() and not errors, errors


@pytest.mark.parametrize("stored_before", [False, True], ids=["new partition", "rewritten partition"])
def test_two_writers_of_one_partition_on_s3_keep_both_payments(
    bucket: str, monkeypatch: pytest.MonkeyPatch, stored_before: bool
) -> None:
    base = f"s3://{bucket}/clcg"
    if stored_before:  # A's write is then conditional on an ETag (If-Match), else on none (If-None-Match)
        _write(base, calls(paid="none"), "run-0")
    _race_inside_merge(monkeypatch, lambda: _write(base, calls(paid="y"), "run-b"))
    _write(base, calls(paid="x"), "run-a")  # before the fix: B's payment of y was overwritten
    _assert_both_payments_kept(base)


def test_a_table_replaced_while_it_is_read_on_s3_is_read_whole_not_crashed(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash seen with two hosts: ``PreconditionFailed`` on GetObject, the object replaced mid-read."""
    path = f"s3://{bucket}/clcg/{ASSET}/language=en/data.parquet"
    write_frame(path, calls(paid="x"))
    real = pq.read_table
    replaced: list[bool] = []

    def replaced_mid_read(source: object, *args: object, **kwargs: object) -> object:
        if not replaced:  # another host writes the table after this reader opened it
            replaced.append(True)
            write_frame(path, calls(paid="y"))
        return real(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pq, "read_table", replaced_mid_read)
    assert sorted(read_frame(path)["call_id"]) == ["x", "y"]


def test_two_processes_writing_one_partition_in_a_local_folder_keep_both_payments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = str(tmp_path / "data")
    race_two_writers(monkeypatch, base, calls(paid="x"), calls(paid="y"))
    _assert_both_payments_kept(base)


def test_a_writer_that_always_loses_the_race_on_s3_stops_with_a_clear_error(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = f"s3://{bucket}/clcg"
    real = _io_manager.keep_paid_record
    monkeypatch.setattr(_files, "_PAUSE_S", 0.0)
    inside: list[bool] = []

    def always_beaten(*args: object, **kwargs: object) -> pd.DataFrame:
        if not inside:  # writer A's merge: writer B writes first, every time
            inside.append(True)
            try:
                _write(base, calls(paid="y"), "run-b")
            finally:
                inside.pop()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_io_manager, "keep_paid_record", always_beaten)
    with pytest.raises(ConcurrentWriteError, match=r"probe_calls/language=en/data.parquet.* 8 writes"):
        _write(base, calls(paid="x"), "run-a")
    _assert_paid(base, {"y": "run-b"})  # the winner's payment stands


def test_a_table_replaced_between_its_head_and_get_on_s3_is_read_again(
    bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = UPath(f"s3://{bucket}/clcg/{ASSET}/language=en/data.parquet")
    write_frame(path, calls(paid="x"))
    fs = path.fs
    real = fs.info
    replaced: list[bool] = []

    def replaced_after_head(*args: object, **kwargs: object) -> dict:
        details = real(*args, **kwargs)
        if not replaced:  # the GET pinned to this ETag now fails with PreconditionFailed
            replaced.append(True)
            write_frame(path, calls(paid="y"))
        return details

    monkeypatch.setattr(fs, "info", replaced_after_head)
    table = read_frame(path)
    assert replaced and table["cached"].tolist() == [True, False]  # the second writer's table
