"""Up to date in a data folder is what the folder's records say (``_freshness``, ``storage/_records.py``).

A two-asset graph (``source`` -> ``reader``) written by the project's IO manager: no full
study, so each situation takes a fraction of a second. The Dagster instance that ran the
materializations is never asked: a folder without records is redone, a copied folder with
its records is current on any instance or none.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.storage import RECORDS, ParquetIOManager

# Neither asset reads a per-model asset: both take the version without the model list.
VERSIONS = {"corpus": "corpus-v1", "inputs": "inputs-v1", "study": "study-v1"}
ASSETS = ("source", "reader")


def _definitions(data: Path, version: str = VERSIONS["inputs"]) -> dg.Definitions:
    @dg.asset(code_version=version)
    def source() -> pd.DataFrame:
        return pd.DataFrame({"x": [1, 2]})

    @dg.asset(code_version=version)
    def reader(source: pd.DataFrame) -> dg.Output[pd.DataFrame]:
        return dg.Output(source.assign(y=source["x"] * 2), metadata={"rows": len(source)})

    return dg.Definitions(
        assets=[source, reader], resources={"io_manager": ParquetIOManager(base_path=str(data))}
    )


def _materialize(defs: dg.Definitions, instance: dg.DagsterInstance, *assets: str) -> None:
    job = defs.resolve_implicit_global_asset_job_def()
    selection = [dg.AssetKey(asset) for asset in assets] if assets else None
    assert job.execute_in_process(instance=instance, asset_selection=selection).success


def _fresh(data: Path | str, versions: dict[str, str] = VERSIONS) -> Freshness:
    return Freshness(_definitions(Path(str(data).removeprefix("file://"))), str(data), versions)


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, dg.DagsterInstance]:
    """A data folder both assets were written to, and the instance that holds their runs."""
    data = tmp_path / "data"
    instance = dg.DagsterInstance.ephemeral()
    _materialize(_definitions(data), instance)
    return data, instance


def test_a_folder_just_written_is_up_to_date(written: tuple[Path, dg.DagsterInstance]) -> None:
    data, _ = written
    assert _fresh(data).up_to_date(ASSETS, None, [])
    assert _fresh(f"file://{data}").up_to_date(ASSETS, None, [])  # one folder, however spelled


def test_a_folder_without_its_records_is_redone_whatever_the_instance_holds(
    written: tuple[Path, dg.DagsterInstance],
) -> None:
    data, instance = written
    # The instance still holds both materializations, with their paths in this folder...
    for asset in ASSETS:
        assert instance.get_latest_materialization_event(dg.AssetKey(asset)) is not None
    # ...but the folder's records are the one source: without them, nothing here is current.
    shutil.rmtree(data / RECORDS / "reader")
    fresh = _fresh(data)
    assert fresh.up_to_date(["source"], None, [])
    assert not fresh.up_to_date(ASSETS, None, [])
    shutil.rmtree(data / RECORDS)
    fresh = _fresh(data)
    assert not fresh.up_to_date(["source"], None, [])
    assert not fresh.newer_than_everything_read(["reader"])
    assert fresh.recorded_metadata("reader", None, "rows") is None


def test_a_copied_folder_is_up_to_date_on_a_fresh_instance(
    written: tuple[Path, dg.DagsterInstance], tmp_path: Path
) -> None:
    data, _ = written
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(data, copy)
    shutil.rmtree(data)  # the original is gone: the copy's records name its own files
    fresh = _fresh(copy)
    assert fresh.up_to_date(ASSETS, None, [])
    assert fresh.newer_than_everything_read(["reader"])
    assert fresh.recorded_metadata("reader", None, "rows") == 2


def test_a_stale_version_a_missing_file_or_a_newer_input_is_not_up_to_date(
    written: tuple[Path, dg.DagsterInstance],
) -> None:
    data, instance = written
    assert not _fresh(data, {**VERSIONS, "inputs": "inputs-v2"}).up_to_date(["source"], None, [])
    # The input written again after its reader: the reader is stale, the input is not.
    _materialize(_definitions(data), instance, "source")
    fresh = _fresh(data)
    assert fresh.up_to_date(["source"], None, []) and not fresh.up_to_date(["reader"], None, [])
    assert not fresh.newer_than_everything_read(["reader"])
    _materialize(_definitions(data), instance, "reader")
    assert _fresh(data).up_to_date(ASSETS, None, [])
    os.remove(data / "reader" / "data.parquet")
    assert not _fresh(data).up_to_date(["reader"], None, [])


def test_forget_reads_the_records_again(written: tuple[Path, dg.DagsterInstance]) -> None:
    data, _ = written
    fresh = _fresh(data)
    assert fresh.up_to_date(ASSETS, None, [])
    shutil.rmtree(data / RECORDS / "reader")
    assert fresh.up_to_date(ASSETS, None, [])  # read once per asset, kept for the run's steps
    fresh.forget(["reader"])
    assert not fresh.up_to_date(ASSETS, None, [])
