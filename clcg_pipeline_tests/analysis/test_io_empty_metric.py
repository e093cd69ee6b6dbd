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


def _scores(rows: int, semsim: list[float | None] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": [f"m{i % 3}" for i in range(rows)],
            "language": ["en", "sw"] * (rows // 2),
            "doc_id": [f"d{i % 4}" for i in range(rows)],
            "item_id": [f"i{i}" for i in range(rows)],
            "rep": [0] * rows,
            "context_scope": ["full_body"] * rows,
            "level": ["L3"] * rows,
            "item_source": ["llm"] * rows,
            "status": ["ok"] * rows,
            "token_f1": np.linspace(0, 1, rows),
            "accuracy": [np.nan] * rows,
            "rouge_l": np.linspace(1, 0, rows),
            "semsim": np.array(semsim if semsim is not None else [None] * rows, dtype=np.float64),
        }
    )


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
    path = tmp_path / "scores.parquet"
    pq.write_table(pa.Table.from_pandas(_scores(12), preserve_index=False), path, row_group_size=5)
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
    path = tmp_path / "scores.parquet"
    semsim: list[float | None] = [None] * 12
    semsim[11] = 0.25  # the last row group only
    pq.write_table(pa.Table.from_pandas(_scores(12, semsim), preserve_index=False), path, row_group_size=5)
    seen = _read_columns_seen(monkeypatch)
    got = read_scores(str(path))
    assert "semsim" in seen
    assert got["semsim"].iloc[11] == 0.25 and got["semsim"].iloc[:11].isna().all()
