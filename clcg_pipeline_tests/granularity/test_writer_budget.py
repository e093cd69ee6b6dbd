"""A budget that stops the task bank's writers says so in the budget's one line (which budget,
what was spent, the calls left, how to resume), writes no bank, and keeps the writers' record."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import build_definitions

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")]

_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _priced_writer_en_pt(config_dir: Path, edit_yaml: Callable) -> None:
    """en and pt only; the (offline) confusion writer priced, so that its calls cost something."""

    def languages(doc: dict) -> None:
        doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in ("en", "pt")]

    def models(doc: dict) -> None:
        writer = next(m for m in doc["models"] if m["id"] == "offline-writer")
        writer.update(price_input_per_mtok=1.0, price_output_per_mtok=4.0)

    edit_yaml(config_dir / "languages.yaml", languages)
    edit_yaml(config_dir / "models.yaml", models)


def test_a_run_budget_that_stops_the_writers_says_which_what_was_left_and_how_to_resume(
    demo_config_dir: Path, edit_yaml: Callable, tmp_path: Path
) -> None:
    _priced_writer_en_pt(demo_config_dir, edit_yaml)
    data = tmp_path / "data"
    defs = build_definitions(demo_config_dir, data)
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(demo_config_dir))
        for iso in ("en", "pt"):
            corpus = defs.resolve_job_def("corpus_job")
            assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success
        job = defs.resolve_job_def("study_inputs_job")
        config = {**_QUIET, "ops": {"granularity_task_bank": {"config": {"budget_usd": 1e-6}}}}
        result = job.execute_in_process(instance=instance, run_config=config, raise_on_error=False)
    failures = [e.event_specific_data.error.message for e in result.all_events if e.is_step_failure]
    assert len(failures) == 1, failures
    writer_calls = pd.read_parquet(data / "task_writer_calls" / "data.parquet")
    left = int((writer_calls["outcome"] == "skipped_budget").sum())
    assert left == len(writer_calls) > 0  # the budget is below any call's worst case
    assert (
        "granularity_tasks: not written: budget reached: the run budget (--budget $0.0000) stopped "
        f"{left} of {left} calls of the task bank's writers (cloze confusion writer, word-question "
        f"writer): $0.0000 spent by this run, {left} calls left unmade; run `clcg run` again (with a "
        "larger --budget, or none) to resume (paid calls are kept)"
    ) in failures[0]
    assert not (data / "granularity_tasks").exists()  # nothing frozen without its cloze sets
