"""read_all_partitions looks at its own table's folder only (an analysis run calls it ~20 times)."""

from pathlib import Path

import pandas as pd
import pytest

from clcg_pipeline.storage import _catalog, partition_dir, read_all_partitions, write_frame


def test_every_partition_of_the_table_read_and_absent_tables_empty(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for iso, value in (("en", 1), ("pt", 2)):
        write_frame(
            partition_dir(data, "scores_x", {"language": iso}) / "data.parquet", pd.DataFrame({"v": [value]})
        )
    (data / "empty_table").mkdir()  # a folder with no Parquet file is no table
    (data / "a_file").write_text("not a table")

    assert sorted(read_all_partitions(str(data), "scores_x")["v"]) == [1, 2]
    for absent in ("empty_table", "a_file", "never_written"):
        assert read_all_partitions(str(data), absent).empty
    assert read_all_partitions(str(tmp_path / "no_such_folder"), "scores_x").empty


def test_the_other_tables_are_not_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    write_frame(
        partition_dir(data, "scores_x", {"language": "en"}) / "data.parquet", pd.DataFrame({"v": [1]})
    )

    def every_table(*args: object) -> list[str]:
        raise AssertionError("listed every table of the folder to read one")

    monkeypatch.setattr(_catalog, "stored_tables", every_table)
    assert list(read_all_partitions(str(data), "scores_x")["v"]) == [1]
