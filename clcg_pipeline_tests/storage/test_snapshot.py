"""A complete run's record of the data folder holds only while the folder and the request are the same."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clcg_pipeline.storage import (
    RECORDS,
    complete_run_holds,
    write_complete_run,
    write_record,
)
from clcg_pipeline_tests.storage.conftest import asked_run


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    for name in (
        "scores/language=en/data.parquet",
        "study_results.json",
        "inbox/a.csv",
        "cache/calls/ab/x.json",
    ):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text(name)
    write_complete_run(str(data), asked_run(), 7)
    return data


def test_the_same_folder_and_request_hold(folder: Path) -> None:
    assert complete_run_holds(str(folder), asked_run()) == 7
    assert complete_run_holds(f"file://{folder}", asked_run()) == 7
    # The call cache may grow (another study's calls) without touching a partition.
    (folder / "cache" / "calls" / "cd").mkdir()
    (folder / "cache" / "calls" / "cd" / "y.json").write_text("{}")
    assert complete_run_holds(str(folder), asked_run()) == 7


@pytest.mark.parametrize(
    "change",
    [
        {"versions": {"corpus": "c1", "study": "s2"}},  # config, package or source contents
        {"models": ["other"]},
        {"languages": ["en"]},
        {"mode": "batch"},
        {"budget_usd": 1.0},
    ],
)
def test_another_request_misses(folder: Path, change: dict) -> None:
    assert complete_run_holds(str(folder), asked_run(**change)) is None


def test_a_changed_added_or_removed_file_misses(folder: Path) -> None:
    results = folder / "study_results.json"
    stat = results.stat()
    os.utime(results, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert complete_run_holds(str(folder), asked_run()) is None
    write_complete_run(str(folder), asked_run(), 7)
    (folder / "inbox" / "b.csv").write_text("a new annotation file")
    assert complete_run_holds(str(folder), asked_run()) is None
    write_complete_run(str(folder), asked_run(), 7)
    (folder / "scores" / "language=en" / "data.parquet").unlink()
    assert complete_run_holds(str(folder), asked_run()) is None


def test_a_copy_of_the_folder_misses(folder: Path, tmp_path: Path) -> None:
    # The memo names its folder: a copy (times kept) may hold a catalog that reads the original.
    shutil.copytree(folder, tmp_path / "copy")
    assert complete_run_holds(str(tmp_path / "copy"), asked_run()) is None
    assert complete_run_holds(str(folder), asked_run()) == 7


def test_no_record_misses(tmp_path: Path) -> None:
    assert complete_run_holds(str(tmp_path), asked_run()) is None  # on an object store: test_snapshot_s3.py


def test_any_record_written_since_misses_even_with_the_same_size_and_time(folder: Path) -> None:
    # The snapshot memoizes the records' verdict: a record rewritten since (here by another
    # code version, on a filesystem whose coarse timestamps and the same length hide it) is read.
    record = folder / RECORDS / "scores" / "en.json"
    record.parent.mkdir(parents=True)
    write_record(str(folder), "scores", "en", code_version="v1", run_id="r", path="p", metadata={})
    write_complete_run(str(folder), asked_run(), 7)
    assert complete_run_holds(str(folder), asked_run()) == 7
    stat = record.stat()
    record.write_text(record.read_text().replace('"v1"', '"v2"'))
    os.utime(record, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert record.stat().st_size == stat.st_size
    assert complete_run_holds(str(folder), asked_run()) is None
    write_complete_run(str(folder), asked_run(), 7)
    write_record(str(folder), "scores", "pt", code_version="v1", run_id="r", path="p", metadata={})
    assert complete_run_holds(str(folder), asked_run()) is None


@pytest.mark.parametrize("spelling", ["absolute", "relative"])
def test_a_new_file_in_an_inbox_outside_the_data_folder_misses(
    folder: Path, tmp_path: Path, spelling: str
) -> None:
    # The analysis is current only while the inbox holds what it imported (its record says):
    # an inbox the config puts outside the data folder is watched too.
    outside = tmp_path / "shared-inbox"
    outside.mkdir()
    (outside / "a.csv").write_text("imported")
    inbox = str(outside) if spelling == "absolute" else "../shared-inbox"
    write_complete_run(str(folder), asked_run(inbox=inbox), 7)
    assert complete_run_holds(str(folder), asked_run(inbox=inbox)) == 7
    (outside / "b.csv").write_text("a new annotation file")
    assert complete_run_holds(str(folder), asked_run(inbox=inbox)) is None
    # Inside the data folder, the inbox is among the folder's files already.
    write_complete_run(str(folder), asked_run(inbox="inbox"), 7)
    (folder / "inbox" / "c.csv").write_text("another")
    assert complete_run_holds(str(folder), asked_run(inbox="inbox")) is None
