"""Adding a model to models.yaml runs that model only; editing one model reruns that model only.

One module fixture takes the small study (two languages, one offline reader:
``conftest.small_study``, built once per worker) and adds a second reader, then a third, then
edits the second's settings, each followed by ``run_study`` on a copy of its folder and
instance. Every language x model partition of a model that did not change must keep its
file and record byte for byte (``Freshness`` judges a family partition by its model's version:
``orchestration/_versions.py``), while the analysis, which reads every model, runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
import yaml

from clcg_pipeline.config import code_versions, load_config
from clcg_pipeline.orchestration import run_study
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.orchestration._freshness import Freshness
from clcg_pipeline.orchestration._jobs import RESPONSE_ASSETS, STUDY_INPUT_ASSETS
from clcg_pipeline.orchestration._versions import INPUTS, version_kinds
from clcg_pipeline.partitions import MODEL_DIMENSION, model_of_partition, response_partitions
from clcg_pipeline.storage import MODEL_VERSIONS, RECORDS, ParquetIOManager, read_records
from clcg_pipeline_tests.conftest import SMALL_PANEL, SmallStudy

LANGUAGES = list(SMALL_PANEL)
A, B, C = "lexical-reader", "reader-b", "reader-c"
RANGE_TAGS = ("dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


def _edit_yaml(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(document)
    path.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _reader(config_dir: Path, model_id: str, threshold: float) -> None:
    """A copy of the demo's offline reader under another id and answer threshold."""

    def add(doc: dict[str, Any]) -> None:
        first = doc["models"][0]
        doc["models"].append(
            {**first, "id": model_id, "options": {**first["options"], "threshold": threshold}}
        )

    _edit_yaml(config_dir / "models.yaml", add)


def _family_files(data: Path) -> dict[str, tuple[int, bytes]]:
    """(modification time, bytes) of every language x model partition's file and record."""
    found: dict[str, tuple[int, bytes]] = {}
    for asset in RESPONSE_ASSETS:
        for root in (data / asset, data / RECORDS / asset):
            for path in sorted(root.rglob("*")) if root.exists() else []:
                if path.is_file():
                    found[str(path.relative_to(data))] = (path.stat().st_mtime_ns, path.read_bytes())
    return found


def _of_model(files: dict[str, tuple[int, bytes]], model: str) -> dict[str, tuple[int, bytes]]:
    # Partition folders say model=<id>; records name the key "<language>|<id>", quoted.
    return {
        name: stamp
        for name, stamp in files.items()
        if f"model={model}/" in name or f"%7C{model}.json" in name
    }


def _runs(instance: dg.DagsterInstance) -> dict[str, dg.DagsterRun]:
    return {run.run_id: run for run in instance.get_runs()}


def _models_run(runs: list[dg.DagsterRun]) -> set[str]:
    """The models whose language x model partitions the responses runs among ``runs`` covered."""
    models: set[str] = set()
    for run in runs:
        keys = [run.tags[tag] for tag in RANGE_TAGS if tag in run.tags] or [
            run.tags.get("dagster/partition", "")
        ]
        models |= {model_of_partition(key) or "?" for key in keys}
    return models


@pytest.fixture(scope="module")
def story(small_study: SmallStudy, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # Reader A on LANGUAGES, built: the small study, copied with its instance, instead of a
    # study of this module's own (corpus, inputs, A). Adding B is the first run.
    root = small_study.copy_to(tmp_path_factory.mktemp("adding-a-model"))
    config_dir = root / "config"
    assert list(load_config(config_dir).languages.isos) == LANGUAGES
    _reader(config_dir, B, 0.3)
    data = root / "data"
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    out: dict[str, Any] = {"data": data}

    def run() -> dict[str, list[dg.DagsterRun]]:
        """Run the study; the new Dagster runs by job."""
        with dg.DagsterInstance.get() as instance:
            before = _runs(instance)
        run_study(config_dir=str(config_dir), data_dir=str(data), languages=LANGUAGES)
        with dg.DagsterInstance.get() as instance:
            new = [r for run_id, r in _runs(instance).items() if run_id not in before]
        by_job: dict[str, list[dg.DagsterRun]] = {}
        for dagster_run in new:
            by_job.setdefault(dagster_run.job_name, []).append(dagster_run)
        return by_job

    try:
        run()
        out["files_ab"] = _family_files(data)
        _reader(config_dir, C, 0.2)
        out["added"] = run()
        out["files_abc"] = _family_files(data)
        _edit_yaml(
            config_dir / "models.yaml", lambda doc: doc["models"][-2]["options"].update(threshold=0.35)
        )
        out["edited"] = run()
        out["files_edited"] = _family_files(data)
        yield out
    finally:
        mp.undo()


@pytest.mark.slow
def test_adding_a_model_runs_only_its_partitions(story: dict[str, Any]) -> None:
    added = story["added"]
    assert _models_run(added.get("responses_job", [])) == {C}, added
    # Nothing upstream of the family runs again: the corpus and the study inputs do not read the models.
    assert "corpus_job" not in added and "study_inputs_job" not in added, added
    assert len(added.get("analysis_job", [])) == 1  # the analysis reads every model: it runs
    before, after = story["files_ab"], story["files_abc"]
    for model in (A, B):
        assert _of_model(before, model), f"no partition of {model} was written"
        assert _of_model(after, model) == _of_model(before, model), f"{model}'s partitions were rewritten"
    assert _of_model(after, C)


@pytest.mark.slow
def test_the_new_model_is_in_the_results(story: dict[str, Any]) -> None:
    results = (story["data"] / "study_results.json").read_text(encoding="utf-8")
    assert f'"{C}"' in results
    # The analysis asset keeps its pairs for the next model's refresh (issue 37: incremental).
    assert (story["data"] / "model_pairs_reuse.parquet").exists()


@pytest.mark.slow
def test_editing_one_model_reruns_only_that_model(story: dict[str, Any]) -> None:
    edited = story["edited"]
    assert _models_run(edited.get("responses_job", [])) == {B}, edited
    assert "corpus_job" not in edited and "study_inputs_job" not in edited, edited
    before, after = story["files_abc"], story["files_edited"]
    for model in (A, C):
        assert _of_model(after, model) == _of_model(before, model), f"{model}'s partitions were rewritten"
    assert _of_model(after, B) != _of_model(before, B)


def test_the_study_inputs_take_no_model_list(config_dir: Path, edit_yaml: Callable) -> None:
    """The assets upstream of the language x model family take the version without the
    evaluated models; a judge's edit still changes it (every model's partitions read it)."""
    defs = build_definitions(str(config_dir), str(config_dir / "data"))
    kinds = version_kinds(defs)
    # Had one of them taken the model list, a new model would rewrite it, newer than every
    # model's partitions that read it: all of them stale.
    assert set(STUDY_INPUT_ASSETS) <= {name for name, kind in kinds.items() if kind == INPUTS}
    before = code_versions(load_config(config_dir))
    _reader(config_dir, C, 0.2)
    added = code_versions(load_config(config_dir))
    assert added[INPUTS] == before[INPUTS] and added["study"] != before["study"]
    assert {key for key in added if added[key] != before.get(key)} == {"study", f"model:{C}"}
    edit_yaml(config_dir / "models.yaml", lambda doc: doc["models"][1].update(concurrency=3))
    judged = code_versions(load_config(config_dir))
    assert judged[INPUTS] != added[INPUTS] and judged[f"model:{A}"] != added[f"model:{A}"]


def test_the_family_carries_each_models_version(config_dir: Path) -> None:
    """Dagster's code version is per asset: the family's is the version without the model list,
    and each model's own rides on the spec for the partition's record."""
    config = load_config(config_dir)
    defs = build_definitions(str(config_dir), str(config_dir / "data"))  # stamped by with_code_versions
    spec = defs.resolve_assets_def("scores").specs_by_key[dg.AssetKey("scores")]
    versions = code_versions(config)
    assert spec.code_version == versions[INPUTS]
    listed = spec.metadata["clcg/model_code_versions"]
    assert getattr(listed, "value", listed) == {A: versions[f"model:{A}"]}


def _answers(data: Path, by_model: dict[str, str]) -> dg.Definitions:
    """One language x model asset stamped as ``with_code_versions`` stamps the family."""

    @dg.asset(
        partitions_def=response_partitions(["en"]),
        code_version="inputs-v1",
        metadata={MODEL_VERSIONS: dg.MetadataValue.json(by_model)},
    )
    def answers() -> pd.DataFrame:
        return pd.DataFrame({"answer": ["yes"]})

    return dg.Definitions(assets=[answers], resources={"io_manager": ParquetIOManager(base_path=str(data))})


def test_a_partition_is_judged_by_its_models_version(tmp_path: Path) -> None:
    """Fast, without a study: the IO manager records each partition's model version, and
    Freshness compares that one, so another model's new version leaves a partition current."""
    data = tmp_path / "data"
    by_model = {"m1": "m1-v1", "m2": "m2-v1"}
    defs = _answers(data, by_model)
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(MODEL_DIMENSION, list(by_model))
        job = defs.resolve_implicit_global_asset_job_def()
        for model in by_model:
            assert job.execute_in_process(instance=instance, partition_key=f"en|{model}").success
    records = read_records(str(data), "answers")
    assert {key: record["code_version"] for key, record in records.items()} == {
        "en|m1": "m1-v1",
        "en|m2": "m2-v1",
    }
    versions = {"corpus": "c", "inputs": "inputs-v1", "study": "s", "model:m1": "m1-v1", "model:m2": "m2-v2"}
    fresh = Freshness(defs, str(data), versions)
    assert fresh.up_to_date(["answers"], "en|m1", ["en"])
    assert not fresh.up_to_date(["answers"], "en|m2", ["en"])  # its model changed
    del versions["model:m1"]  # a model no longer in the config is never current
    assert not Freshness(defs, str(data), versions).up_to_date(["answers"], "en|m1", ["en"])
