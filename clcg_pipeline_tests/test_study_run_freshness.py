"""When `clcg run` may skip a partition: only when it is current *in this data folder*.

One module fixture takes the small study (two languages, one model: ``conftest.small_study``)
and runs a sequence of situations on a copy of it and its instance; each test checks one of
them. A language the corpus does not cover has no partition at all: ``test_uncovered_languages.py``.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.orchestration import RunSummary, run_study
from clcg_pipeline.orchestration._definitions import build_definitions
from clcg_pipeline.partitions import response_key
from clcg_pipeline.storage import RECORDS
from clcg_pipeline_tests.conftest import SMALL_PANEL, SmallStudy

pytestmark = pytest.mark.slow

LANGUAGES = list(SMALL_PANEL)
MODEL = "lexical-reader"
# What a complete run covers: corpus and responses per language, study inputs, analysis.
FULL_RUNS = len(LANGUAGES) * 2 + 2
# The Dagster runs it takes: ONE corpus run over the languages and ONE responses run for the
# model's languages (partition ranges), study inputs, analysis.
FIRST_RUNS = 4


def _runs_by_job(instance: dg.DagsterInstance) -> dict[str, int]:
    counts: dict[str, int] = {}
    for run in instance.get_runs():
        counts[run.job_name] = counts.get(run.job_name, 0) + 1
    return counts


def _new_runs(instance: dg.DagsterInstance, before: dict[str, int]) -> dict[str, int]:
    now = _runs_by_job(instance)
    return {job: n - before.get(job, 0) for job, n in now.items() if n > before.get(job, 0)}


@pytest.fixture(scope="module")
def story(small_study: SmallStudy, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    # The first run: the small study (two languages, one model), built once per worker, copied.
    root = small_study.copy_to(tmp_path_factory.mktemp("freshness"))
    config_dir = root / "config"
    assert list(load_config(config_dir).languages.isos) == LANGUAGES
    data = root / "data"
    mp = pytest.MonkeyPatch()
    mp.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    out: dict[str, Any] = {"data": data, "config_dir": config_dir}

    def run(data_dir: str) -> RunSummary:
        return run_study(config_dir=str(config_dir), data_dir=data_dir, models=[MODEL], languages=LANGUAGES)

    try:
        out["first"] = small_study.summary
        out["calls_first"] = _paid(data)
        # Entered, so Dagster's context-local state (its defs-state storage) points at a live
        # instance: a bare `DagsterInstance.get()` could inherit a disposed one left by an
        # earlier test in the same process.
        with dg.DagsterInstance.get() as instance:
            out["checks"] = _check_evaluations(instance)
            # The same folder spelled as a file:// URL: nothing to redo.
            out["as_url"] = run(f"file://{data}")
            # A file dropped into the annotation inbox: only the analysis (which imports it) re-runs.
            inbox = data / load_config(config_dir).study.human_validation.inbox
            dropped = sorted(path for path in inbox.iterdir() if path.is_file())[0]
            (inbox / f"late-{dropped.name}").write_bytes(dropped.read_bytes())
            before = _runs_by_job(instance)
            out["after_inbox"] = run(str(data))
            out["jobs_after_inbox"] = _new_runs(instance, before)
            # A run launched outside `clcg run` (the UI, a backfill, the daemon): no clcg tag.
            defs = build_definitions(str(config_dir), str(data))
            result = defs.resolve_job_def("responses_job").execute_in_process(
                instance=instance, partition_key=str(response_key("en", MODEL)), raise_on_error=False
            )
            assert result.success
            before = _runs_by_job(instance)
            out["after_outside_run"] = run(str(data))
            out["jobs_after_outside_run"] = _new_runs(instance, before)
            # Half a study_inputs_job: fertility's records gone from the folder, items' still
            # there. The instance still holds fertility's materializations: it is never asked.
            shutil.rmtree(data / RECORDS / "tokenizer_fertility_by_language")
            before = _runs_by_job(instance)
            out["after_wipe"] = run(str(data))
            out["jobs_after_wipe"] = _new_runs(instance, before)
            # Files removed from the data folder: the instance remembers them, but the files are the truth.
            shutil.rmtree(data / "scores" / "language=pt")
            shutil.rmtree(data / "articles" / "language=en")
            before = _runs_by_job(instance)
            out["after_rm"] = run(str(data))
            out["jobs_after_rm"] = _new_runs(instance, before)
            out["calls_end"] = _paid(data)
        # The folder copied elsewhere and run with a Dagster home of its own (a second host, a
        # laptop): every call is found in the copied cache, and the record of what was paid stays.
        copy = root / "copy"
        shutil.copytree(data, copy)
        mp.setenv("DAGSTER_HOME", str(root / "home-of-the-copy"))
        out["copy_run"] = run(str(copy))
        out["calls_copy"] = _paid(copy)
        yield out
    finally:
        mp.undo()


def _paid(data: Path) -> pd.DataFrame:
    """The record of the calls paid for, over every calls table of the folder, in one order."""
    calls = pd.concat(pd.read_parquet(path) for path in sorted((data / "calls").rglob("*.parquet")))
    record = ["call_id", "language", "cost_usd", "paid_run", "paid_at"]
    paid = calls.loc[~calls["cached"].astype(bool), record]
    return paid.sort_values(["language", "call_id"]).reset_index(drop=True)


def _check_evaluations(instance: dg.DagsterInstance) -> dict[tuple[str, str], dg.AssetCheckEvaluation]:
    """Every check evaluation so far, by (check name, partition)."""
    found = {}
    for run in instance.get_runs():
        for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
            evaluation = entry.dagster_event.event_specific_data  # type: ignore[union-attr]
            found[(evaluation.check_name, str(evaluation.partition))] = evaluation
    return found


def test_first_run_runs_everything(story: dict[str, Any]) -> None:
    assert story["first"].runs == FIRST_RUNS


def test_a_covered_partition_passes(story: dict[str, Any]) -> None:
    assert story["checks"][("alignment_coverage", "en")].passed
    assert story["checks"][("has_scores", f"en|{MODEL}")].passed


def test_a_file_url_is_the_same_folder(story: dict[str, Any]) -> None:
    assert story["as_url"].runs == 0  # the analysis too: nothing it reads has changed
    assert story["as_url"].skipped == FULL_RUNS


def test_a_new_annotation_file_reruns_only_the_analysis(story: dict[str, Any]) -> None:
    assert story["jobs_after_inbox"] == {"analysis_job": 1}


def test_runs_launched_elsewhere_count_as_done(story: dict[str, Any]) -> None:
    assert story["after_outside_run"].runs == 1
    assert story["jobs_after_outside_run"] == {"analysis_job": 1}


def test_a_half_finished_study_inputs_job_is_redone(story: dict[str, Any]) -> None:
    jobs = story["jobs_after_wipe"]
    assert jobs.get("study_inputs_job") == 1
    # What reads the new inputs follows them; the corpus is untouched.
    # One run over the model's languages (a partition range).
    assert jobs.get("responses_job") == 1 and "corpus_job" not in jobs


def test_removed_files_are_rebuilt(story: dict[str, Any]) -> None:
    # English articles gone: that corpus partition is loaded again, and what reads it follows.
    assert story["jobs_after_rm"] == {
        "corpus_job": 1,
        "study_inputs_job": 1,
        "responses_job": 1,  # the model's languages in one range run
        "analysis_job": 1,
    }
    data: Path = story["data"]
    for iso in LANGUAGES:
        assert (data / "articles" / f"language={iso}" / "data.parquet").exists()
        assert (data / "scores" / f"language={iso}" / f"model={MODEL}" / "data.parquet").exists()
    assert (data / "study_results.json").exists()


def test_reruns_keep_the_record_of_what_was_paid(story: dict[str, Any]) -> None:
    first = story["calls_first"]
    assert len(first) and first["paid_run"].notna().all()
    # Responses re-run twice above (new inputs, removed files), finding every call cached.
    assert story["calls_end"].equals(first)


def test_a_copied_folder_is_up_to_date_with_another_dagster_home(story: dict[str, Any]) -> None:
    # The folder's own records say how each partition was made (storage/_records.py).
    assert story["copy_run"].runs == 0 and story["copy_run"].skipped == FULL_RUNS


def test_a_copied_folder_keeps_the_record_of_what_was_paid(story: dict[str, Any]) -> None:
    assert story["copy_run"].new_calls == 0
    assert story["calls_copy"].equals(story["calls_first"])
