from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.storage import ParquetIOManager, read_frame, read_json
from clcg_pipeline_tests.conftest import materialize

languages = dg.StaticPartitionsDefinition(["en", "ka"])
grid = dg.MultiPartitionsDefinition(
    {"language": languages, "model": dg.StaticPartitionsDefinition(["m1", "m2"])}
)


@dg.asset(partitions_def=languages)
def words(context: dg.AssetExecutionContext) -> pd.DataFrame:
    return pd.DataFrame({"language": [context.partition_key] * 2, "n": [1, 2]})


@dg.asset(partitions_def=grid)
def cells(context: dg.AssetExecutionContext, words: pd.DataFrame) -> pd.DataFrame:
    keys = context.partition_key.keys_by_dimension  # type: ignore[attr-defined]
    return words.assign(model=keys["model"])


@dg.asset
def everything(cells: pd.DataFrame) -> dict:
    return {"rows": len(cells), "models": sorted(cells["model"].unique())}


def test_partitions_are_written_in_hive_layout_and_read_back(tmp_path: Path) -> None:
    resources = {"io_manager": ParquetIOManager(base_path=str(tmp_path))}
    with dg.instance_for_test() as instance:
        for iso in ("en", "ka"):
            assert materialize([words], partition_key=iso, resources=resources, instance=instance).success
            for model in ("m1", "m2"):
                key = dg.MultiPartitionKey({"language": iso, "model": model})
                assert materialize(
                    [words, cells],
                    selection=[cells],
                    partition_key=key,
                    resources=resources,
                    instance=instance,
                ).success
        assert materialize(
            [words, cells, everything], selection=[everything], resources=resources, instance=instance
        ).success
    cell = read_frame(tmp_path / "cells" / "language=ka" / "model=m2" / "data.parquet")
    assert list(cell["model"]) == ["m2", "m2"] and list(cell["language"]) == ["ka", "ka"]
    assert read_json(tmp_path / "everything.json") == {"rows": 8, "models": ["m1", "m2"]}


def test_missing_upstream_partition_is_a_clear_error(tmp_path: Path) -> None:
    resources = {"io_manager": ParquetIOManager(base_path=str(tmp_path))}
    key = dg.MultiPartitionKey({"language": "en", "model": "m1"})
    with (
        dg.instance_for_test() as instance,
        pytest.raises(FileNotFoundError, match=r"asset 'words'.*materialize"),
    ):
        materialize(
            [words, cells], selection=[cells], partition_key=key, resources=resources, instance=instance
        )
