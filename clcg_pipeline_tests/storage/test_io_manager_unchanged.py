"""An unpartitioned table written again with the same rows keeps its file (issue 33).

The frozen ``annotation_sample`` is yielded as stored on every refresh: its file must not be
rewritten (a user watching it sees it untouched), while its record says the run wrote it, so
the freshness of what reads it is judged as before.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from clcg_pipeline.storage import read_frame, read_records
from clcg_pipeline_tests.storage.conftest import write_output


def _write(base: Path, frame: pd.DataFrame, run_id: str) -> None:
    write_output(base, "frozen_sample", frame, run_id)


def _sample(*tasks: str) -> pd.DataFrame:
    return pd.DataFrame({"task_id": list(tasks), "annotators": [["a1", "a2"]] * len(tasks)})


def test_the_same_rows_written_again_leave_the_file_as_it_was(tmp_path: Path) -> None:
    _write(tmp_path, _sample("t1", "t2"), "run-1")
    path = tmp_path / "frozen_sample" / "data.parquet"
    written = (path.stat().st_ino, path.stat().st_mtime_ns)  # a rewrite replaces the file
    first = read_records(str(tmp_path), "frozen_sample")[None]
    _write(tmp_path, read_frame(path), "run-2")  # the frozen sample, yielded as read
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == written
    again = read_records(str(tmp_path), "frozen_sample")[None]
    assert again["run_id"] == "run-2" and again["written_ns"] > first["written_ns"]


def test_other_rows_are_written(tmp_path: Path) -> None:
    _write(tmp_path, _sample("t1", "t2"), "run-1")
    _write(tmp_path, _sample("t3"), "run-2")
    assert read_frame(tmp_path / "frozen_sample" / "data.parquet")["task_id"].tolist() == ["t3"]
