"""``clcg run`` launches one responses run per model over its stale languages (issue 32).

The same runs the daemon's backfill and the UI's Materialize launch: a model's languages in
one Dagster run, whatever their number, each partition written and recorded as if alone.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from clcg_pipeline.orchestration import StudyRunError, run_study
from clcg_pipeline.orchestration._jobs import CORPUS_ASSETS
from clcg_pipeline.orchestration._partition_run import LanguageRange, stretches
from clcg_pipeline.partitions import RANGE_END_TAG, RANGE_START_TAG
from clcg_pipeline.storage import RECORDS, read_records
from clcg_pipeline_tests.conftest import DEFAULT_CONFIG, cut_to_demo

MODEL = "lexical-reader"
SECOND = "lexical-reader-2"
LANGUAGES = ["en", "pt", "ka"]  # the study's languages, in languages.yaml's order


def _response_runs(instance: dg.DagsterInstance) -> list[dg.DagsterRun]:
    """The runs that wrote responses (the whole of ``responses_job``), oldest first."""
    return list(reversed(instance.get_runs(filters=dg.RunsFilter(job_name="responses_job"))))


def _file(data: Path, asset: str, key: str) -> Path:
    language, model = key.split("|")
    return data / asset / f"language={language}" / f"model={model}" / "data.parquet"


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A study of one model and three languages, run, run again, and run after files went missing."""
    root = tmp_path_factory.mktemp("ranges")
    config_dir, data = root / "config", root / "data"
    shutil.copytree(DEFAULT_CONFIG, config_dir)
    cut_to_demo(config_dir)
    languages = yaml.safe_load((config_dir / "languages.yaml").read_text(encoding="utf-8"))
    languages["languages"] = [lang for lang in languages["languages"] if lang["iso"] in LANGUAGES]
    (config_dir / "languages.yaml").write_text(yaml.safe_dump(languages, sort_keys=False), encoding="utf-8")
    # A second model from the start (adding one later would change the first one's code version).
    models = yaml.safe_load((config_dir / "models.yaml").read_text(encoding="utf-8"))
    models["models"].append({**models["models"][0], "id": SECOND})
    (config_dir / "models.yaml").write_text(yaml.safe_dump(models, sort_keys=False), encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root / "home"))
    steps: list[tuple[str, int, int]] = []
    out: dict[str, Any] = {"data": data, "steps": steps}

    def run(models: tuple[str, ...] = (MODEL,)) -> Any:
        steps.clear()
        summary = run_study(
            config_dir=str(config_dir),
            data_dir=str(data),
            models=list(models),
            on_step=lambda *step: steps.append(step),
        )
        # Which run wrote each partition whose file is there, as the folder's records say.
        written = {
            asset: {
                key: record["run_id"]
                for key, record in read_records(str(data), asset).items()
                if _file(data, asset, key).exists()
            }
            for asset in ("predictions", "calls", "scores")
        }
        with dg.DagsterInstance.get() as instance:
            return summary, _response_runs(instance), list(steps), written

    try:
        out["first"] = run()
        with dg.DagsterInstance.get() as instance:
            out["corpus_runs"] = instance.get_runs(filters=dg.RunsFilter(job_name="corpus_job"))
            out["corpus_partitions"] = {
                asset: instance.get_materialized_partitions(dg.AssetKey(asset)) for asset in CORPUS_ASSETS
            }
            out["corpus_checks"] = {
                (check, str(evaluation.partition))
                for run in out["corpus_runs"]
                for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
                for evaluation in [entry.dagster_event.event_specific_data]  # type: ignore[union-attr]
                for check in [evaluation.check_name]
            }
        out["again"] = run()
        out["snapshot"] = json.loads((data / RECORDS / "_complete_run.json").read_text(encoding="utf-8"))
        shutil.rmtree(data / "scores" / "language=pt")  # one language's files gone
        out["one_gone"] = run()
        # The second model, and the first one's pt gone again: two runs, one per model, in the
        # two workers (--parallel 2, the default).
        shutil.rmtree(data / "scores" / "language=pt")
        out["two_models"] = run((MODEL, SECOND))
        # A failing range names the job and the range it ran.
        shutil.rmtree(data / "scores" / "language=en")
        shutil.rmtree(data / "scores" / "language=pt")

        def broken(*_args: object, **_kwargs: object) -> None:
            raise RuntimeError("the reader broke")

        mp.setattr("clcg_pipeline.inference.assets.predict_partition", broken)
        with pytest.raises(StudyRunError) as failure:
            run()
        out["failure"] = str(failure.value)
        yield out
    finally:
        mp.undo()


@pytest.mark.slow
def test_one_model_is_one_run_whatever_its_languages(story: dict[str, Any]) -> None:
    summary, runs, steps, written = story["first"]
    assert len(runs) == 1, [r.tags.get("dagster/partition") for r in runs]
    run = runs[0]
    keys = [f"{iso}|{MODEL}" for iso in LANGUAGES]
    assert (run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) == (keys[0], keys[-1])
    assert run.tags["clcg/provider"] == "offline" and run.tags.get("clcg/fingerprint")
    assert run.status == dg.DagsterRunStatus.SUCCESS
    for asset, by_key in written.items():
        assert by_key == dict.fromkeys(keys, run.run_id), asset
    # the corpus run, inputs, the responses run, the analysis; one progress step per model.
    assert summary.runs == 4
    assert summary.response_calls > 0
    assert {total for _, _, total in steps} == {4}
    labels = {(label, n) for label, n, _ in steps}
    assert {("corpus en..ka (3 languages)", 1), (f"{MODEL} / en..ka (3 languages)", 3)} <= labels


@pytest.mark.slow
def test_a_new_studys_corpus_is_one_run_over_its_languages(story: dict[str, Any]) -> None:
    """The source is parsed once for every language, not once per language's run."""
    runs = story["corpus_runs"]
    assert len(runs) == 1, [r.tags.get("dagster/partition") for r in runs]
    run = runs[0]
    assert (run.tags[RANGE_START_TAG], run.tags[RANGE_END_TAG]) == (LANGUAGES[0], LANGUAGES[-1])
    assert run.status == dg.DagsterRunStatus.SUCCESS
    # Each language is still its own partition, materialized and checked, as the UI shows it.
    assert story["corpus_partitions"] == {asset: set(LANGUAGES) for asset in CORPUS_ASSETS}
    checks = {(name, iso) for name in ("alignment_coverage", "language_has_paragraphs") for iso in LANGUAGES}
    assert story["corpus_checks"] == checks
    # Each language's files and records, written by that run.
    data: Path = story["data"]
    for asset in CORPUS_ASSETS:
        records = read_records(str(data), asset)
        assert {iso: records[iso]["run_id"] for iso in LANGUAGES} == dict.fromkeys(LANGUAGES, run.run_id)
        for iso in LANGUAGES:
            assert (data / asset / f"language={iso}" / "data.parquet").exists(), (asset, iso)


@pytest.mark.slow
def test_an_up_to_date_model_launches_no_run(story: dict[str, Any]) -> None:
    summary, runs, _, _ = story["again"]
    assert len(runs) == 1  # the first run's only
    assert summary.runs == 0 and summary.skipped == len(LANGUAGES) * 2 + 2
    # The next `clcg run` says as many partitions up to date without Dagster (the snapshot).
    assert story["snapshot"]["partitions"] == summary.skipped


@pytest.mark.slow
def test_a_missing_language_reruns_only_a_range_covering_it(story: dict[str, Any]) -> None:
    summary, runs, _, written = story["one_gone"]
    assert len(runs) == 2
    rerun = runs[-1]
    assert rerun.tags["dagster/partition"] == f"pt|{MODEL}"  # a range of one: that partition's run
    assert rerun.tags["clcg/provider"] == "offline"
    assert written["scores"] == {
        f"en|{MODEL}": runs[0].run_id,
        f"pt|{MODEL}": rerun.run_id,
        f"ka|{MODEL}": runs[0].run_id,
    }
    assert summary.skipped == len(LANGUAGES) + 1 + len(LANGUAGES) - 1  # corpus, inputs, en and ka


@pytest.mark.slow
def test_each_worker_runs_one_models_range(story: dict[str, Any]) -> None:
    summary, runs, steps, written = story["two_models"]
    new = runs[len(story["one_gone"][1]) :]
    assert sorted(r.tags.get("dagster/partition") or r.tags[RANGE_START_TAG] for r in new) == [
        f"en|{SECOND}",
        f"pt|{MODEL}",
    ]
    second = next(r for r in new if r.tags.get(RANGE_END_TAG) == f"ka|{SECOND}")
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in new)
    assert summary.runs == 3  # the two responses runs and the analysis
    assert {k: v for k, v in written["scores"].items() if k.endswith(SECOND)} == {
        f"{iso}|{SECOND}": second.run_id for iso in LANGUAGES
    }
    # One progress step per model, numbered in order, out of a total that counts models.
    total = 1 + 1 + 2 + 1
    numbered = [(n, label) for label, n, t in steps if t == total and n in (3, 4)]
    assert sorted(n for n, _ in numbered) == [3, 4]


@pytest.mark.slow
def test_a_failed_range_run_names_the_job_and_the_range(story: dict[str, Any]) -> None:
    assert story["failure"] == (
        f"responses_job [en|{MODEL}..pt|{MODEL}] failed: RuntimeError: the reader broke"
    )


@pytest.mark.parametrize(
    ("stale", "expected"),
    [
        (["en", "pt", "is"], [("en", "pt", "is")]),
        (["ka"], [("ka",)]),
        # Not contiguous (ka up to date, or left out of --languages): one run per stretch.
        (["pt", "is", "ht"], [("pt", "is"), ("ht",)]),
        ([], []),
    ],
)
def test_stale_languages_run_in_contiguous_stretches(
    stale: list[str], expected: list[tuple[str, ...]]
) -> None:
    order = ["en", "pt", "is", "ka", "ht"]
    assert stretches(order, stale) == expected


def test_a_range_of_one_language_is_a_partition_run() -> None:
    one, many = LanguageRange(MODEL, ("pt",)), LanguageRange(MODEL, ("en", "pt"))
    assert (one.partition, one.tags, one.name) == (f"pt|{MODEL}", {}, f"pt|{MODEL}")
    assert many.partition is None and many.name == f"en|{MODEL}..pt|{MODEL}"
    assert many.tags == {RANGE_START_TAG: f"en|{MODEL}", RANGE_END_TAG: f"pt|{MODEL}"}
