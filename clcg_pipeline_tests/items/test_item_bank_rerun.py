"""A kept (frozen) bank run again keeps the record of the generated items it rejected."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from clcg_pipeline.calls import CallResult
from clcg_pipeline.config import load_config
from clcg_pipeline.inference.sensors import sync_model_partitions
from clcg_pipeline.items import _generate
from clcg_pipeline.orchestration import build_definitions

_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _answers_found_nowhere(model: object, requests: list, options: object) -> list[CallResult]:
    """Per request, an item whose answer is in no paragraph: validation rejects it."""
    reply = json.dumps([{"question": "What is never said?", "answer": "zzq qqz", "supporting_pids": []}])
    return [
        CallResult(f"{i:064x}", reply, "stop", "ok", None, 10, 10, 0.0, 0.0, 1, False)
        for i, _ in enumerate(requests)
    ]


def _inputs(defs: dg.Definitions, instance: dg.DagsterInstance, regenerate: bool) -> None:
    config = {
        **_QUIET,
        "ops": {
            "item_bank": {"config": {"regenerate": regenerate}},
            "granularity_task_bank": {"config": {"regenerate": regenerate}},
        },
    }
    job = defs.resolve_job_def("study_inputs_job")
    assert job.execute_in_process(instance=instance, run_config=config).success


@pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")
def test_a_kept_bank_keeps_its_rejections(
    demo_config_dir: Path, edit_yaml: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_yaml(
        demo_config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in ("en", "pt")]),
    )
    edit_yaml(demo_config_dir / "study.yaml", lambda doc: doc.update(item_generator="lexical-reader"))
    monkeypatch.setattr(_generate, "run_requests", _answers_found_nowhere)
    data = tmp_path / "data"
    defs = build_definitions(demo_config_dir, data)
    with dg.instance_for_test() as instance:
        sync_model_partitions(instance, load_config(demo_config_dir))
        for iso in ("en", "pt"):
            corpus = defs.resolve_job_def("corpus_job")
            assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success
        _inputs(defs, instance, regenerate=True)
        rejected = pd.read_parquet(data / "item_rejections" / "data.parquet")
        generated = rejected[rejected["rule"] == "span_not_found"]
        assert len(generated), "the fake generator's items were not rejected"
        # Run again with the bank kept (as `clcg run --force` does): nothing generated anew.
        _inputs(defs, instance, regenerate=False)
        again = pd.read_parquet(data / "item_rejections" / "data.parquet")
    key = ["item_id", "rule"]
    assert (
        again.sort_values(key)
        .reset_index(drop=True)[key]
        .equals(rejected.sort_values(key).reset_index(drop=True)[key])
    )
