"""The complete-run memo on an object store (``s3://``, a local moto server): written, held while
nothing changed, missed by any object written or removed since, and read without writing."""

from __future__ import annotations

from typing import Any

import pytest
import s3fs
from upath import UPath

from clcg_pipeline.storage import (
    RECORDS,
    complete_run_holds,
    write_complete_run,
    write_record,
)
from clcg_pipeline_tests.storage.conftest import asked_run


def _other_host() -> s3fs.S3FileSystem:
    """A client of its own, as another process's: what it writes, this process's listings cache
    has not seen."""
    return s3fs.S3FileSystem(skip_instance_cache=True)


def _objects(data: str) -> dict[str, Any]:
    return {
        key: (info["ETag"], info["LastModified"], info["size"])
        for key, info in _other_host().find(data, detail=True).items()
    }


@pytest.fixture
def data(bucket: str) -> str:
    """An ``s3://`` data folder with a table, a results document, an inbox, a record, the call cache."""
    data = f"s3://{bucket}/clcg"
    for name in (
        "scores/language=en/data.parquet",
        "study_results.json",
        "inbox/a.csv",
        "cache/calls/ab/x.json",
    ):
        UPath(f"{data}/{name}").write_text(name)
    write_record(data, "scores", "en", code_version="v1", run_id="r", path=f"{data}/scores", metadata={})
    write_complete_run(data, asked_run(), 7)
    return data


def test_a_folder_as_the_complete_run_left_it_holds_and_reading_it_writes_nothing(data: str) -> None:
    assert UPath(f"{data}/{RECORDS}/_complete_run.json").exists()
    before = _objects(data)
    assert complete_run_holds(data, asked_run()) == 7
    assert complete_run_holds(data, asked_run(languages=["en"])) is None  # another request
    assert _objects(data) == before  # ETag and LastModified of every object: nothing rewritten
    # The call cache may grow (another study's calls) without touching a partition.
    _other_host().pipe(f"{data}/cache/calls/cd/y.json", b"{}")
    assert complete_run_holds(data, asked_run()) == 7


@pytest.mark.parametrize(
    "change",
    [
        lambda fs, data: fs.pipe(f"{data}/scores/language=pt/data.parquet", b"new"),  # an object written
        lambda fs, data: fs.rm(f"{data}/scores/language=en/data.parquet"),  # one removed
        lambda fs, data: fs.pipe(f"{data}/study_results.json", b"study_results.jsoN"),  # rewritten, same size
        lambda fs, data: fs.pipe(f"{data}/inbox/b.csv", b"a new annotation file"),
        lambda fs, data: fs.pipe(f"{data}/report.html", b"<html>"),  # at the top level
    ],
    ids=["written", "removed", "rewritten", "inbox", "top-level"],
)
def test_any_object_written_or_removed_since_misses(data: str, change: Any) -> None:
    fs = UPath(data).fs
    assert complete_run_holds(data, asked_run()) == 7  # this process has listed the folder
    change(_other_host(), data)  # written by another process: this one's listings are stale
    assert complete_run_holds(data, asked_run()) is None
    assert fs is UPath(data).fs


def test_a_record_rewritten_since_misses(data: str) -> None:
    record = UPath(f"{data}/{RECORDS}/scores/en.json")
    record.write_text(record.read_text().replace('"v1"', '"v2"'))  # the same size, another content
    assert complete_run_holds(data, asked_run()) is None


def test_a_new_file_in_an_inbox_outside_the_data_folder_misses(data: str) -> None:
    outside = data.rsplit("/", 1)[0] + "/shared-inbox"
    UPath(f"{outside}/a.csv").write_text("imported")
    write_complete_run(data, asked_run(inbox="../shared-inbox"), 7)
    assert complete_run_holds(data, asked_run(inbox="../shared-inbox")) == 7
    _other_host().pipe(f"{outside}/b.csv", b"a new annotation file")
    assert complete_run_holds(data, asked_run(inbox="../shared-inbox")) is None


def test_no_folder_or_no_memo_misses(bucket: str) -> None:
    assert complete_run_holds(f"s3://{bucket}/none", asked_run()) is None
    write_complete_run(f"s3://{bucket}/none", asked_run(), 7)  # nothing to vouch for: nothing written
    assert not UPath(f"s3://{bucket}/none").exists()
