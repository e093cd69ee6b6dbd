"""``clcg run --budget`` binds every paid op of a run, and the summary counts every calls table.

The offline models are given prices so their calls cost something (offline calls are free by
price otherwise); everything runs in process against a temporary instance and data folder.
"""

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.calls import Budget, Grant, run_budget
from clcg_pipeline.orchestration import StudyRunError, run_study
from clcg_pipeline.orchestration._freshness import Freshness

pytestmark = pytest.mark.slow

LANGUAGES = ("en", "pt")
# Calls-shaped tables and what the summary counts their calls as.
TABLES = {
    "calls": "response_calls",
    "task_calls": "task_calls",
    "task_judge_calls": "judge_calls",
    "judge_calls": "judge_calls",
    "keypoint_calls": "judge_calls",
}
PRICE = {"price_input_per_mtok": 1.0, "price_output_per_mtok": 4.0}


def test_run_budget_is_one_object_per_run_with_the_tightest_limit() -> None:
    first = run_budget("run-a", 1.0)
    assert run_budget("run-a", None) is first and first.limit == 1.0
    assert run_budget("run-a", 0.5) is first and first.limit == 0.5  # tighter wins
    assert run_budget("run-a", 2.0).limit == 0.5  # a looser one does not loosen it
    other = run_budget("run-b", None)
    assert other is not first and isinstance(other, Budget) and other.limit is None
    # Spend from one op counts against the next op of the same run.
    assert first.reserve(0.4) is Grant.GRANTED
    first.settle(0.4, 0.4)
    assert run_budget("run-a", None).reserve(0.2) is Grant.REFUSED


def test_a_partition_whose_task_or_judge_calls_stopped_short_is_unfinished() -> None:
    def recorded(outcomes: dict[str, int]) -> dict:
        return {"metadata": {"outcomes": outcomes}, "path": "x"}

    # From the folder's records, the one source.
    fresh = Freshness.__new__(Freshness)
    for stopped in ("task_calls", "task_judge_calls"):
        outcomes = {"calls": {"ok": 5}, "task_calls": {"ok": 4}, "task_judge_calls": {"ok": 2}}
        outcomes[stopped] = {"ok": 1, "skipped_budget": 3}
        fresh.folder_record = lambda asset, partition, o=outcomes: recorded(o[asset])  # type: ignore[method-assign]
        assert fresh.unfinished_calls("en|m") is True, stopped
    fresh.folder_record = lambda asset, partition: recorded({"ok": 1})  # type: ignore[method-assign]
    assert fresh.unfinished_calls("en|m") is False


def _config(config_dir: Path, edit_yaml: Callable, *, writer_priced: bool) -> None:
    def languages(doc: dict) -> None:
        doc["languages"] = [lang for lang in doc["languages"] if lang["iso"] in LANGUAGES]

    def models(doc: dict) -> None:
        writer = next(m for m in doc["models"] if m["id"] == "offline-writer")
        # The keypoint writer is priced; the confusion writer only when asked (see the last test).
        doc["models"].append({**writer, "id": "priced-writer", **PRICE})
        for model in doc["models"]:
            if model["id"] in ("lexical-reader", "offline-judge-a", "offline-judge-b") or (
                writer_priced and model["id"] == "offline-writer"
            ):
                model.update(PRICE)

    def study(doc: dict) -> None:
        doc["bootstrap_replicates"] = 200
        doc["human_validation"]["keypoint_writer"] = "priced-writer"

    edit_yaml(config_dir / "languages.yaml", languages)
    edit_yaml(config_dir / "models.yaml", models)
    edit_yaml(config_dir / "study.yaml", study)


def _table(data: Path, table: str) -> pd.DataFrame:
    files = sorted((data / table).rglob("*.parquet"))
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else pd.DataFrame()


def _made(frame: pd.DataFrame) -> pd.DataFrame:
    """New calls actually made: not from the cache, not skipped by the budget."""
    if not len(frame):
        return frame
    return frame[~frame["cached"].astype(bool) & (frame["outcome"] != "skipped_budget")]


def _writer_calls() -> int:
    """New confusion-writer calls of the latest task bank (they have no table: its metadata)."""
    with dg.DagsterInstance.get() as instance:
        records = instance.fetch_materializations(dg.AssetKey("granularity_tasks"), limit=1).records
    entry = records[0].asset_materialization.metadata["writer_new_calls"]  # type: ignore[union-attr]
    return int(entry.value)  # type: ignore[arg-type]


def test_budget_stops_task_and_judge_calls_and_the_summary_counts_every_table(
    config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    _config(config_dir, edit_yaml, writer_priced=False)
    data = tmp_path / "data"
    # One run over both languages (issue 32) answers every item (~$0.10) before the granularity
    # tasks (~$0.28): this covers the answers and part of the tasks.
    budget = 0.15
    summary = run_study(
        config_dir=str(config_dir), data_dir=str(data), models=["lexical-reader"], budget_usd=budget
    )
    assert summary.budget_exhausted
    frames = {table: _table(data, table) for table in TABLES}
    # The budget reached the granularity tasks' answers and judges, and the analysis job's
    # keypoint writer, not only the responses.
    tasks = frames["task_calls"]
    assert (tasks["outcome"] == "skipped_budget").any()
    keypoints = frames["keypoint_calls"]
    assert len(keypoints) and (keypoints["outcome"] == "skipped_budget").all()
    judges = frames["task_judge_calls"]
    assert not len(judges) or (judges["outcome"] == "skipped_budget").any()

    made = {table: _made(frame) for table, frame in frames.items()}
    spent = sum(float(frame["cost_usd"].sum()) for frame in made.values() if len(frame))
    one_call = max(float(frame["cost_usd"].max()) for frame in made.values() if len(frame))
    assert 0 < spent <= budget + one_call
    assert summary.new_cost_usd == pytest.approx(spent)

    # Every calls table is counted, by kind (the free confusion writer's calls too).
    counted = {"response_calls": 0, "task_calls": 0, "judge_calls": _writer_calls()}
    for table, kind in TABLES.items():
        counted[kind] += len(made[table])
    assert counted["response_calls"] > 0 and counted["task_calls"] > 0
    assert (summary.response_calls, summary.task_calls, summary.judge_calls) == (
        counted["response_calls"],
        counted["task_calls"],
        counted["judge_calls"],
    )
    assert summary.new_calls == sum(counted.values())

    # Without a budget the next run resumes what was skipped, the granularity tasks included
    # (a partition whose task calls stopped short is unfinished), and pays nothing twice.
    again = run_study(config_dir=str(config_dir), data_dir=str(data), models=["lexical-reader"])
    assert not again.budget_exhausted
    for table in ("calls", "task_calls", "task_judge_calls", "keypoint_calls"):
        frame = _table(data, table)
        assert len(frame) and not (frame["outcome"] == "skipped_budget").any(), table
    assert again.task_calls > 0 and again.judge_calls > 0


def test_a_budget_that_stops_the_confusion_writer_fails_before_freezing_the_bank(
    config_dir: Path, tmp_path: Path, edit_yaml: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    _config(config_dir, edit_yaml, writer_priced=True)
    data = tmp_path / "data"
    with pytest.raises(StudyRunError, match="cloze confusion writer"):
        run_study(config_dir=str(config_dir), data_dir=str(data), models=["lexical-reader"], budget_usd=1e-6)
    assert not (data / "granularity_tasks").exists()  # nothing frozen without its cloze sets
