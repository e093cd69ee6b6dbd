from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.storage import (
    ContractError,
    conform,
    empty_frame,
    partition_dir,
    read_frame,
    write_bytes_atomic,
    write_frame,
)


def test_partition_dir_is_hive_layout(tmp_path: Path) -> None:
    path = partition_dir(tmp_path, "scores", {"language": "ka", "model": "m1"})
    assert str(path).endswith("scores/language=ka/model=m1")


def test_failed_write_keeps_previous_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "t" / "data.bin"
    write_bytes_atomic(target, b"old")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_bytes_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["data.bin"]  # no temp file left behind


def test_written_files_are_readable_by_others(tmp_path: Path) -> None:
    """study_results.json and every table are 0644 like report.html, not mkstemp's 0600: an
    analyst reading a shared data folder under another account must be able to open them."""
    target = tmp_path / "study_results.json"
    write_bytes_atomic(target, b"{}")
    assert target.stat().st_mode & 0o777 == 0o644


def test_failed_write_names_the_target_not_the_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import tempfile

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / ".data.parquet.x1y2.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    with pytest.raises(OSError) as caught:
        write_bytes_atomic(tmp_path / "data.parquet", b"x")
    assert caught.value.filename == str(tmp_path / "data.parquet")
    assert caught.value.strerror == "Read-only file system"


def test_contract_roundtrip_and_types(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "doc_id": ["d1"],
            "language": ["en"],
            "pid": ["p01"],
            "ordinal": [1],
            "text": ["Hello"],
            "extra": [0.5],
        }
    )
    write_frame(tmp_path / "p.parquet", frame, contract="paragraphs")
    back = read_frame(tmp_path / "p.parquet")
    assert list(back.columns) == ["doc_id", "language", "pid", "ordinal", "text", "extra"]
    assert back["ordinal"].dtype == "int64"


def test_contract_names_table_and_column() -> None:
    with pytest.raises(ContractError, match=r"table 'paragraphs': missing column\(s\) \['text'\]"):
        conform(
            "paragraphs", pd.DataFrame({"doc_id": ["d"], "language": ["en"], "pid": ["p"], "ordinal": [1]})
        )
    bad = pd.DataFrame(
        {"doc_id": ["d"], "language": ["en"], "pid": ["p"], "ordinal": ["first"], "text": ["t"]}
    )
    with pytest.raises(ContractError, match="column 'ordinal'"):
        conform("paragraphs", bad)


def test_empty_frame_has_contract_columns() -> None:
    frame = empty_frame("scores")
    assert len(frame) == 0
    assert "token_f1" in frame.columns and "status" in frame.columns
