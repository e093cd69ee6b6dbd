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
from clcg_pipeline.items import _generate, _level_audit
from clcg_pipeline.orchestration import build_definitions
from clcg_pipeline.storage import spend

_QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _answers_found_nowhere(model: object, requests: list, options: object) -> list[CallResult]:
    """Per request, an item whose answer is in no paragraph: validation rejects it."""
    reply = json.dumps([{"question": "What is never said?", "answer": "zzq qqz", "supporting_pids": []}])
    return [
        CallResult(f"{i:064x}", reply, "stop", "ok", None, 10, 10, 0.0, 0.0, 1, False)
        for i, _ in enumerate(requests)
    ]


def _en_and_pt_only(config_dir: Path, edit_yaml: Callable) -> None:
    edit_yaml(
        config_dir / "languages.yaml",
        lambda doc: doc.update(languages=[lang for lang in doc["languages"] if lang["iso"] in ("en", "pt")]),
    )


def _corpus(defs: dg.Definitions, instance: dg.DagsterInstance, config_dir: Path) -> None:
    """The corpus of en and pt, on ``instance``: what the study inputs read."""
    sync_model_partitions(instance, load_config(config_dir))
    for iso in ("en", "pt"):
        corpus = defs.resolve_job_def("corpus_job")
        assert corpus.execute_in_process(instance=instance, partition_key=iso, run_config=_QUIET).success


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
    _en_and_pt_only(demo_config_dir, edit_yaml)
    edit_yaml(demo_config_dir / "study.yaml", lambda doc: doc.update(item_generator="lexical-reader"))
    monkeypatch.setattr(_generate, "run_requests", _answers_found_nowhere)
    data = tmp_path / "data"
    defs = build_definitions(demo_config_dir, data)
    with dg.instance_for_test() as instance:
        _corpus(defs, instance, demo_config_dir)
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


def _paid_items(model: object, requests: list, options: object) -> list[CallResult]:
    """Per request, one paid call (a cent); an L5 request gets one item (valid: L5 needs no pid)."""
    l5 = json.dumps([{"question": "What is the article about?", "answer": "a town", "supporting_pids": []}])
    return [
        CallResult(
            f"{i:064x}",
            l5 if r.metadata["level"] == "L5" else "[]",
            "stop",
            "ok",
            None,
            10,
            10,
            0.01,
            0.0,
            1,
            False,
        )
        for i, r in enumerate(requests)
    ]


class _PaidOnce:
    """A level auditor whose calls are paid (a cent) the first time, found in the cache after."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, model: object, requests: list, options: object) -> list[CallResult]:
        results = []
        for request in requests:
            key = request.metadata["item_id"]
            results.append(
                CallResult(
                    f"{hash(key) & (2**63 - 1):064x}",
                    "L3",
                    "stop",
                    "ok",
                    None,
                    10,
                    10,
                    0.01,
                    0.0,
                    1,
                    key in self.seen,
                )
            )
            self.seen.add(key)
        return results


@pytest.mark.filterwarnings("ignore::clcg_pipeline.corpus.CorpusWarning")
def test_a_kept_bank_keeps_the_record_of_what_its_generation_paid(
    demo_config_dir: Path, edit_yaml: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _en_and_pt_only(demo_config_dir, edit_yaml)
    edit_yaml(
        demo_config_dir / "study.yaml",
        lambda doc: doc.update(item_generator="lexical-reader", level_auditor="lexical-reader"),
    )
    monkeypatch.setattr(_generate, "run_requests", _paid_items)
    monkeypatch.setattr(_level_audit, "run_requests", _PaidOnce())
    data = tmp_path / "data"
    defs = build_definitions(demo_config_dir, data)
    with dg.instance_for_test() as instance:
        _corpus(defs, instance, demo_config_dir)
        _inputs(defs, instance, regenerate=True)
        generated = spend(data)
        # Run again with the bank kept: no call is made, and what the first run paid stays.
        _inputs(defs, instance, regenerate=False)
        kept = spend(data)
    calls, usd = generated.by_table["item_calls"]
    assert calls > 0 and usd == pytest.approx(0.01 * calls)
    assert generated.by_step["item generation"] == calls
    assert kept.by_table["item_calls"] == (calls, usd)
    # The level auditor's calls too, as judges; asked again, they are found in the cache.
    audited, audit_usd = generated.by_table["level_audit_calls"]
    assert audited > 0 and audit_usd == pytest.approx(0.01 * audited)
    assert generated.by_step["judges"] >= audited
    assert kept.by_table["level_audit_calls"] == (audited, audit_usd)
    assert kept.paid_usd == pytest.approx(generated.paid_usd)
