"""A complete run's record of the data folder holds only while the folder and the request are the same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clcg_pipeline.storage import complete_run_holds, complete_run_request, write_complete_run


def _asked(**change: object) -> dict:
    asked = {
        "config_dir": "config",
        "versions": {"corpus": "c1", "study": "s1"},
        "models": None,
        "languages": ["en", "pt"],
        "mode": "online",
        "budget_usd": None,
    }
    return complete_run_request(**{**asked, **change})  # type: ignore[arg-type]


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
    write_complete_run(str(data), _asked(), 7)
    return data


def test_the_same_folder_and_request_hold(folder: Path) -> None:
    assert complete_run_holds(str(folder), _asked()) == 7
    assert complete_run_holds(f"file://{folder}", _asked()) == 7
    # The call cache may grow (another study's calls) without touching a partition.
    (folder / "cache" / "calls" / "cd").mkdir()
    (folder / "cache" / "calls" / "cd" / "y.json").write_text("{}")
    assert complete_run_holds(str(folder), _asked()) == 7


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
    assert complete_run_holds(str(folder), _asked(**change)) is None


def test_a_changed_added_or_removed_file_misses(folder: Path) -> None:
    results = folder / "study_results.json"
    stat = results.stat()
    os.utime(results, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert complete_run_holds(str(folder), _asked()) is None
    write_complete_run(str(folder), _asked(), 7)
    (folder / "inbox" / "b.csv").write_text("a new annotation file")
    assert complete_run_holds(str(folder), _asked()) is None
    write_complete_run(str(folder), _asked(), 7)
    (folder / "scores" / "language=en" / "data.parquet").unlink()
    assert complete_run_holds(str(folder), _asked()) is None


def test_no_record_or_an_object_store_misses(tmp_path: Path) -> None:
    assert complete_run_holds(str(tmp_path), _asked()) is None
    write_complete_run("s3://bucket/clcg", _asked(), 7)  # not written: listing a bucket costs as much
    assert complete_run_holds("s3://bucket/clcg", _asked()) is None
