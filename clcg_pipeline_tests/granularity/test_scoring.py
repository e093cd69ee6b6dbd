"""Scores of the granularity tasks: accuracy, ROUGE-L, sacrebleu, and the judges' mean and spread."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.calls import CallOptions
from clcg_pipeline.granularity._predict import PREDICTION_COLUMNS, predict_tasks
from clcg_pipeline.granularity._scoring import (
    attach_judges,
    bleu_chrf,
    judge_tasks,
    rouge_l,
    score_tasks,
    word_correct,
)
from clcg_pipeline.scoring._metrics import rouge_l as rouge_score_rouge_l
from clcg_pipeline.storage._tables import conform
from clcg_pipeline_tests.conftest import materialize
from clcg_pipeline_tests.granularity.g2_frames import (
    CLOZE_OPTIONS,
    JUDGE_A,
    JUDGE_B,
    PT,
    READER,
    SETTINGS,
    documents,
    paragraphs,
    tasks,
)


def test_rouge_l_equals_rouge_score_on_ascii_and_reads_other_scripts() -> None:
    pairs = [
        ("The cat sat on the mat.", "A cat was sitting on the mat"),
        ("Repairs cost 95,000 euros a year", "repairs were costing about 95,000 euros a year"),
        ("", "something"),
    ]
    ours = rouge_l([p for p, _ in pairs], [g for _, g in pairs])
    assert ours == pytest.approx([rouge_score_rouge_l(p, g) for p, g in pairs])
    georgian = "ლინდმირის წყლის კოოპერატივმა მილები შეცვალა"
    assert rouge_score_rouge_l(georgian, georgian) == 0.0  # why the ASCII tokenizer is not used here
    assert rouge_l([georgian], [georgian]) == [1.0]
    assert rouge_l(["ação rápida"], ["ação lenta"]) == [0.5]


def test_sacrebleu_scores_on_known_strings() -> None:
    assert bleu_chrf("The cat sat on the mat.", "The cat sat on the mat.", "pt") == (100.0, 100.0)
    bleu, chrf = bleu_chrf("the cat is on the mat", "there is a cat on the mat", "pt")
    assert bleu == pytest.approx(29.0593, abs=1e-3) and chrf == pytest.approx(47.8924, abs=1e-3)
    assert bleu_chrf("", "x y", "pt")[0] == 0.0


@pytest.mark.parametrize(
    ("answer", "gold", "correct"),
    [
        ("1961", "1961", 1.0),
        ("1,961", "1961", 1.0),
        ("hollin.", "Hollin", 1.0),
        ("1962", "1961", 0.0),
        ("", "", 0.0),
    ],
)
def test_word_accuracy_after_normalisation(answer: str, gold: str, correct: float) -> None:
    assert word_correct(answer, gold) == correct


def _pred(task_id: str, task: str, answer: str | None, status: str = "ok", context: str = "full") -> dict:
    return {
        "model": "m",
        "language": "pt",
        "doc_id": "doc-1",
        "task_id": task_id,
        "group_id": task_id,
        "task": task,
        "context": context,
        "rep": 0,
        "answer": answer,
        "status": status,
        "call_id": "c",
        "truncated": False,
        "error": None,
    }


def test_scores_by_task_with_failures_at_zero_and_references_in_the_language() -> None:
    preds = pd.DataFrame(
        [
            _pred("t-word", "word_single_qa", "1961"),
            _pred("t-cloze-1", "cloze", "A"),
            _pred("t-cloze-2", "cloze", "b"),
            _pred("t-fill", "paragraph_fill", PT[2]),
            _pred("t-summary", "summary", "Uma cooperativa."),
            _pred("t-trans", "translation", None, status="unparseable"),
        ],
        columns=PREDICTION_COLUMNS,
    )
    scores = score_tasks(preds, tasks(), paragraphs(), documents()).set_index("task_id")
    conform("task_scores", scores.reset_index())
    assert scores.loc["t-word", ["metric", "score", "status"]].tolist() == ["accuracy", 1.0, "ok"]
    assert scores.loc["t-cloze-1", "score"] == 1.0 and scores.loc["t-cloze-2", "score"] == 0.0
    # The reference of a filled paragraph is that language's paragraph.
    assert scores.loc["t-fill", ["metric", "score", "rouge_l"]].tolist() == ["rouge_l", 1.0, 1.0]
    # The Portuguese version has no summary of its own: no score, said so.
    assert scores.loc["t-summary", "status"] == "no_reference" and np.isnan(scores.loc["t-summary", "score"])
    assert scores.loc["t-trans", ["status", "score", "chrf"]].tolist() == ["unparseable", 0.0, 0.0]
    assert scores.loc["t-word", "granularity"] == "word" and scores.loc["t-fill", "region"] == "middle"


def _judged(totals: dict[str, int | None]) -> pd.DataFrame:
    rows = []
    for judge, total in totals.items():
        dims = [total // 5] * 5 if total is not None else [None] * 5
        rows.append(
            {
                "model": "m",
                "language": "pt",
                "task_id": "t-fill",
                "context": "full",
                "rep": 0,
                "kind": "fill",
                "judge": judge,
                "status": "ok" if total is not None else "unparseable",
                "total": total,
                **dict(
                    zip(
                        [
                            "topic_fidelity",
                            "local_coherence",
                            "entity_consistency",
                            "instruction_following",
                            "format_compliance",
                        ],
                        dims,
                        strict=True,
                    )
                ),
            }
        )
    return pd.DataFrame(rows)


def test_judges_are_averaged_with_their_spread_and_a_missing_verdict_is_visible() -> None:
    preds = pd.DataFrame([_pred("t-fill", "paragraph_fill", PT[2])], columns=PREDICTION_COLUMNS)
    base = score_tasks(preds, tasks(), paragraphs(), documents())
    both = attach_judges(base, _judged({"a": 80, "b": 60}), ["a", "b"]).iloc[0]
    assert both["judge_total"] == 70.0 and both["judge_range"] == 20.0
    assert both["judge_spread"] == pytest.approx(np.sqrt(200.0))  # sample sd of 80 and 60
    assert both["topic_fidelity"] == 14.0 and both["judge_n"] == 2 and both["judge_status"] == "ok"
    one = attach_judges(base, _judged({"a": 80, "b": None}), ["a", "b"]).iloc[0]
    assert one["judge_total"] == 80.0 and np.isnan(one["judge_spread"]) and one["judge_status"] == "partial"
    none = attach_judges(base, _judged({"a": None, "b": None}), ["a", "b"]).iloc[0]
    assert np.isnan(none["judge_total"]) and none["judge_status"] == "failed"
    assert (
        attach_judges(base, _judged({}).reindex(columns=["kind"]), ["a"]).iloc[0]["judge_status"]
        == "not_judged"
    )


def test_offline_judges_score_fillings_and_label_wrong_cloze_choices(tmp_path: Path) -> None:
    result = predict_tasks(
        model=READER,
        language="en",
        paragraphs=paragraphs(),
        tasks=tasks(),
        settings=SETTINGS,
        options=CallOptions(cache_dir=str(tmp_path)),
    )
    preds = result.predictions.copy()
    # A wrong cloze choice for the error judge: the first blank answered with the confusion (B).
    wrong = (preds["task_id"] == "t-cloze-1") & (preds["context"] == "full")
    preds.loc[wrong, "answer"] = "B"
    judgements, calls = judge_tasks(
        preds, tasks(), paragraphs(), [JUDGE_A, JUDGE_B], CallOptions(cache_dir=str(tmp_path))
    )
    conform("task_judgements", judgements)
    conform("task_judge_calls", calls)
    fill = judgements[judgements["kind"] == "fill"]
    assert sorted(fill["judge"]) == ["offline-judge-a", "offline-judge-b"]  # full context only
    assert (fill["status"] == "ok").all() and set(fill["context"]) == {"full"}
    assert (
        fill["total"]
        == fill[["topic_fidelity", "local_coherence"]].sum(axis=1)
        + fill[["entity_consistency", "instruction_following", "format_compliance"]].sum(axis=1)
    ).all()
    cloze = judgements[judgements["kind"] == "cloze_error"]
    assert len(cloze) == 2 and set(cloze["task_id"]) == {"t-cloze-1"}
    assert cloze["label"].isin(["M1", "M2", "M3"]).all() and cloze["tags"].map(len).gt(0).all()
    assert json.loads(cloze["judgement"].iloc[0])["evidence"][0] in CLOZE_OPTIONS[1]
    scores = attach_judges(score_tasks(preds, tasks(), paragraphs(), documents()), judgements, ["a", "b"])
    filled = scores[(scores["task"] == "paragraph_fill") & (scores["context"] == "full")].iloc[0]
    totals = fill.set_index("judge")["total"]
    assert filled["judge_total"] == totals.mean() and filled["judge_range"] == abs(totals.diff().iloc[-1])
    assert filled["judge_spread"] > 0 and filled["judge_status"] == "ok"  # the strict judge is harsher
    assert len(calls) == 4 and calls["prompt_version"].isin(["fill-judge-v1", "cloze-error-judge-v1"]).all()


def test_empty_or_disabled_partitions_warn_instead_of_passing() -> None:
    import dagster as dg

    from clcg_pipeline.granularity._scoring import SCORE_COLUMNS
    from clcg_pipeline.granularity.assets import DISABLED, task_predictions_check, task_scores_check

    empty = pd.DataFrame(columns=PREDICTION_COLUMNS)
    skipped = task_predictions_check(empty, "pt / m", 0.2, DISABLED)
    assert not skipped.passed and skipped.severity == dg.AssetCheckSeverity.WARN
    assert skipped.description == f"pt / m: {DISABLED}"
    assert "empty" in (task_predictions_check(empty, "pt / m", 0.2).description or "")
    failing = pd.DataFrame(
        [_pred("t-word", "word_single_qa", None, status="unparseable")], columns=PREDICTION_COLUMNS
    )
    assert not task_predictions_check(failing, "pt / m", 0.2).passed
    ok = pd.DataFrame([_pred("t-word", "word_single_qa", "1961")], columns=PREDICTION_COLUMNS)
    assert task_predictions_check(ok, "pt / m", 0.2).passed
    scores = score_tasks(ok, tasks(), paragraphs(), documents())
    assert task_scores_check(scores, "pt / m").passed
    assert not task_scores_check(pd.DataFrame(columns=SCORE_COLUMNS), "pt / m").passed
    half = attach_judges(
        score_tasks(
            pd.DataFrame([_pred("t-fill", "paragraph_fill", PT[2])], columns=PREDICTION_COLUMNS),
            tasks(),
            paragraphs(),
        ),
        _judged({"a": 80, "b": None}),
        ["a", "b"],
    )
    assert "lack a parsed verdict" in (task_scores_check(half, "pt / m").description or "")


# ---------------------------------------------------------------------------- assets
def _materialize_partition(config_dir: Path, data: Path) -> dg.ExecuteInProcessResult:
    from clcg_pipeline.config import load_config
    from clcg_pipeline.granularity.assets import build_task_scoring_defs
    from clcg_pipeline.partitions import response_key
    from clcg_pipeline.resources import StudyResource
    from clcg_pipeline.storage import ParquetIOManager
    from clcg_pipeline.storage._files import DATA_FILE, partition_dir, write_frame

    for table, frame in (
        ("long_paragraphs", paragraphs()),
        ("long_documents", documents()),
        ("granularity_tasks", tasks()),
    ):
        write_frame(partition_dir(data, table, None) / DATA_FILE, frame)
    defs = build_task_scoring_defs(load_config(config_dir))
    assets: list[dg.AssetsDefinition | dg.SourceAsset] = [
        a for a in defs.assets if isinstance(a, dg.AssetsDefinition)
    ]
    assets += [dg.SourceAsset(name) for name in ("long_paragraphs", "long_documents", "granularity_tasks")]
    resources = {
        "study": StudyResource(config_dir=str(config_dir), data_dir=str(data)),
        "io_manager": ParquetIOManager(base_path=str(data)),
    }
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("model", ["lexical-reader"])
        return materialize(
            assets, resources=resources, instance=instance, partition_key=response_key("pt", "lexical-reader")
        )


def _stored(data: Path, table: str) -> pd.DataFrame:
    from clcg_pipeline.storage import read_all_partitions

    return read_all_partitions(data, table)


def test_assets_answer_score_and_judge_a_partition_and_skip_visibly_when_disabled(
    tmp_path: Path, config_dir: Path, edit_yaml: Callable[[Path, Callable[[dict], None]], None]
) -> None:
    data = tmp_path / "data"
    result = _materialize_partition(config_dir, data)
    assert result.success
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert checks["task_answers_parsed"].passed and checks["task_scores_complete"].passed
    predictions, scores = _stored(data, "task_predictions"), _stored(data, "task_scores")
    assert len(predictions) == len(scores) == 12 and set(predictions["language"]) == {"pt"}
    assert (scores.loc[scores["task"] == "paragraph_fill", "judge_n"] == 2).any()
    assert set(_stored(data, "task_judge_calls")["judge"]) == {"offline-judge-a", "offline-judge-b"}

    edit_yaml(config_dir / "study.yaml", lambda doc: doc["granularity"].update(enabled=False))
    data = tmp_path / "disabled"
    result = _materialize_partition(config_dir, data)
    assert result.success
    for check in result.get_asset_check_evaluations():
        assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN
        assert "skipped: study.granularity.enabled is false" in (check.description or "")
    assert _stored(data, "task_predictions").empty and _stored(data, "task_scores").empty
