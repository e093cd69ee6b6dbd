"""The IO manager in a run over a partition range: one file and one record per partition."""

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.partitions import PartitionFrames
from clcg_pipeline.storage import ParquetIOManager, read_frame, read_records
from clcg_pipeline_tests.conftest import materialize

grid = dg.MultiPartitionsDefinition(
    {
        "language": dg.StaticPartitionsDefinition(["en", "ka", "pt"]),
        "model": dg.StaticPartitionsDefinition(["m1"]),
    }
)
RANGE = {"dagster/asset_partition_range_start": "en|m1", "dagster/asset_partition_range_end": "pt|m1"}


@dg.asset(partitions_def=grid, backfill_policy=dg.BackfillPolicy.single_run())
def cells() -> pd.DataFrame:
    """Rows for en and pt only: ka is an empty partition of the range."""
    return pd.DataFrame({"language": ["en", "pt", "pt"], "model": ["m1"] * 3, "n": [1, 2, 3]})


@dg.asset(partitions_def=grid, backfill_policy=dg.BackfillPolicy.single_run())
def judged(context: dg.AssetExecutionContext) -> PartitionFrames:
    """A table without partition columns (like task_judge_calls), given per partition."""
    keys = [str(key) for key in context.partition_keys]
    return PartitionFrames(
        {key: pd.DataFrame({"judge": [key]}) for key in keys}, {key: {"own": key} for key in keys}
    )


@dg.asset(partitions_def=grid, backfill_policy=dg.BackfillPolicy.single_run())
def unsplittable() -> pd.DataFrame:
    return pd.DataFrame({"n": [1]})


def test_a_range_run_writes_each_partition_its_file_and_record(tmp_path: Path) -> None:
    resources = {"io_manager": ParquetIOManager(base_path=str(tmp_path))}
    with dg.instance_for_test() as instance:
        result = materialize([cells, judged], resources=resources, instance=instance, tags=RANGE)
        assert result.success
    for iso, rows in (("en", [1]), ("ka", []), ("pt", [2, 3])):
        # The empty partition still gets its file: an empty partition is a state, not a gap.
        assert (
            list(read_frame(tmp_path / "cells" / f"language={iso}" / "model=m1" / "data.parquet")["n"])
            == rows
        )
        judge = read_frame(tmp_path / "judged" / f"language={iso}" / "model=m1" / "data.parquet")
        assert list(judge["judge"]) == [f"{iso}|m1"]
    records = read_records(str(tmp_path), "cells")
    assert set(records) == {"en|m1", "ka|m1", "pt|m1"}
    assert all(r["run_id"] == result.run_id for r in records.values())
    assert records["pt|m1"]["path"] == "cells/language=pt/model=m1/data.parquet"
    judged_records = read_records(str(tmp_path), "judged")
    assert {key: r["metadata"] for key, r in judged_records.items()} == {k: {"own": k} for k in records}


def test_a_table_without_partition_columns_is_refused_in_a_range_run(tmp_path: Path) -> None:
    resources = {"io_manager": ParquetIOManager(base_path=str(tmp_path))}
    with (
        dg.instance_for_test() as instance,
        pytest.raises(ValueError, match=r"'unsplittable'.*\['language', 'model'\]"),
    ):
        materialize([unsplittable], resources=resources, instance=instance, tags=RANGE)
    assert not (tmp_path / "unsplittable").exists()
