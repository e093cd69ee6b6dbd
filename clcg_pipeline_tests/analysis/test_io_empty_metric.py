"""A score column with no value in the file (``semsim`` of a study run without it) is not
decoded: ``read_scores`` gives the frame a full read gives, that column held as one missing
value (issue 37)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clcg_pipeline.analysis import read_scores
from clcg_pipeline_tests.analysis.conftest import write_score_file


def _read_columns_seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = pq.ParquetFile.read

    def read(self: pq.ParquetFile, columns: list[str] | None = None, **kwargs: object) -> pa.Table:
        seen.extend(columns or [])
        return real(self, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", read)
    return seen


@pytest.mark.parametrize("filters", [None, {"language": ["sw"]}])
def test_an_all_null_score_column_is_not_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: dict[str, list[str]] | None
) -> None:
    path = write_score_file(tmp_path / "scores.parquet", 12, row_group_size=5)
    full = pq.read_table(path).to_pandas()
    if filters:
        full = full[full["language"].isin(filters["language"])].reset_index(drop=True)
    seen = _read_columns_seen(monkeypatch)
    got = read_scores(str(path), filters=filters)
    assert "semsim" not in seen and "token_f1" in seen
    assert got["semsim"].dtype == np.float64 and len(got) == len(full)
    assert got["semsim"].isna().all()
    pd.testing.assert_frame_equal(
        got[["token_f1", "rouge_l", "semsim"]], full[["token_f1", "rouge_l", "semsim"]], check_dtype=True
    )


def test_a_score_column_with_a_value_in_one_row_group_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    semsim: list[float | None] = [None] * 12
    semsim[11] = 0.25  # the last row group only
    path = write_score_file(tmp_path / "scores.parquet", 12, semsim, row_group_size=5)
    seen = _read_columns_seen(monkeypatch)
    got = read_scores(str(path))
    assert "semsim" in seen
    assert got["semsim"].iloc[11] == 0.25 and got["semsim"].iloc[:11].isna().all()
