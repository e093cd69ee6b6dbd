"""The item generator and the level auditor spend from the run's budget like the responses do:
the limit a run's config gives any of its paid ops binds them, a budget that stops them says
so in one line (which budget, what was spent, the calls left, how to resume) and leaves no bank
frozen short of items; the run after resumes, paying for no call twice."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from clcg_pipeline.calls.fake_server import FakeServer, Faults
from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.storage import call_spend
from clcg_pipeline_tests.conftest import add_fake_model, fake_provider_bill
from clcg_pipeline_tests.orchestration.test_authoring_spend import _answer_the_generator_with_items

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")]

KEY_ENV = "CLCG_AUTHORING_BUDGET_FAKE_KEY"
_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
# The run budget's line (calls.budget_stop_line), as the failed op says it.
_RUN_STOP = re.compile(
    r"budget reached: the run budget \(--budget \$(?P<limit>[\d.]+)\) stopped (?P<left>\d+) of "
    r"(?P<calls>\d+) calls of {who}: \$(?P<spent>[\d.]+) spent by this run, (?P=left) calls left "
    r"unmade; run `clcg run` again \(with a larger --budget, or none\) to resume \(paid calls are kept\)"
)


def _en_and_pt_only(doc: dict[str, Any]) -> None:
    doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in ("en", "pt")]


def _study_inputs(defs: dg.Definitions, instance: dg.DagsterInstance, ops: dict[str, Any]) -> list[str]:
    """Run the study inputs job; the failure messages of its ops (none when it succeeded)."""
    job = defs.resolve_job_def("study_inputs_job")
    result = job.execute_in_process(
        instance=instance, run_config={**_QUIET, "ops": ops}, raise_on_error=False
    )
    failures = [
        event.event_specific_data.error.message for event in result.all_events if event.is_step_failure
    ]
    assert result.success == (not failures)
    return failures


def _corpus(defs: dg.Definitions, instance: dg.DagsterInstance, config_dir: Path) -> None:
    sync_model_partitions(instance, load_config(config_dir))
    for iso in ("en", "pt"):
        corpus = defs.resolve_job_def("corpus_job")
        assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success


@pytest.fixture
def paid(demo_config_dir: Path, edit_yaml: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """(config dir, data dir, the provider's bill) with ``fake-gpt`` served and its key set."""
    monkeypatch.setenv(KEY_ENV, "fake-authoring-budget-not-real")
    edit_yaml(demo_config_dir / "languages.yaml", _en_and_pt_only)
    charges = fake_provider_bill(monkeypatch, _answer_the_generator_with_items)
    with FakeServer(Faults()) as server:
        add_fake_model(demo_config_dir, edit_yaml, server.url, KEY_ENV, concurrency=4)
        yield demo_config_dir, tmp_path / "data", charges


def test_the_run_budget_given_to_another_op_stops_the_item_generator_and_a_rerun_resumes(
    paid: Any, edit_yaml: Callable
) -> None:
    config_dir, data, charges = paid
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(item_generator="fake-gpt"))
    budget = 0.02  # the generator costs about $0.067 unbounded
    defs = build_definitions(config_dir, data)
    with dg.instance_for_test() as instance:
        _corpus(defs, instance, config_dir)
        # As `clcg run --budget` gives it: to the paid ops it knows, the task bank among them.
        limited = {
            "item_bank": {"config": {"regenerate": True}},
            "granularity_task_bank": {"config": {"budget_usd": budget}},
        }
        failures = _study_inputs(defs, instance, limited)
        assert len(failures) == 1, failures
        said = re.compile(_RUN_STOP.pattern.format(who="the item generator")).search(failures[0])
        assert said is not None, failures[0]
        bill = sum(charges)
        assert 0 < bill <= budget and float(said["limit"]) == budget
        assert float(said["spent"]) == round(bill, 4)
        # Nothing frozen short of items; what was paid is in the record, with what was left.
        assert not (data / "items" / "data.parquet").exists()
        rows = call_spend(data, tables=["item_calls"])
        assert int(rows["paid"].astype(bool).sum()) == len(charges)
        assert int(said["left"]) == int((rows["outcome"] == "skipped_budget").sum()) > 0
        assert int(said["calls"]) == len(rows)
        first = len(charges)
        # Run again without a budget: the calls left are made, the ones paid come from the cache.
        assert _study_inputs(defs, instance, {"item_bank": {"config": {"regenerate": True}}}) == []
    assert (data / "items" / "data.parquet").exists()
    rows = call_spend(data, tables=["item_calls"])
    assert not (rows["outcome"] == "skipped_budget").any()
    assert len(charges) - first == int(said["left"])  # only what was left was paid for
    assert int(rows["paid"].astype(bool).sum()) == len(charges) == len(rows)


def test_a_study_budget_stops_the_level_auditor(paid: Any, edit_yaml: Callable) -> None:
    config_dir, data, charges = paid
    budget = 0.004
    edit_yaml(config_dir / "study.yaml", lambda doc: doc.update(level_auditor="fake-gpt", budget_usd=budget))
    defs = build_definitions(config_dir, data)
    with dg.instance_for_test() as instance:
        _corpus(defs, instance, config_dir)
        failures = _study_inputs(defs, instance, {})
    assert len(failures) == 1, failures
    assert "item_level_audit: not written: budget reached: the study budget " in failures[0]
    assert f"(study.yaml budget_usd ${budget:.4f}) stopped " in failures[0]
    assert f"calls of the level auditor: ${sum(charges):.4f} spent by the study in all" in failures[0]
    assert 0 < sum(charges) <= budget
    assert not (data / "item_level_audit").exists()
    rows = call_spend(data, tables=["level_audit_calls"])
    assert int(rows["paid"].astype(bool).sum()) == len(charges)
