"""G2 Dagster wrappers: every task answered per language x model, then scored and judged."""

from collections.abc import Callable, Iterator
from typing import Literal

import dagster as dg
import pandas as pd

from clcg_pipeline.calls import CALL_COLUMNS as JUDGE_CALL_COLUMNS
from clcg_pipeline.calls import CallOptions, Origin, logged_progress, partition_origin, run_budget
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import study_coverage
from clcg_pipeline.granularity._asset_parts import DISABLED, GROUP, empty
from clcg_pipeline.granularity._predict import CALL_COLUMNS as TASK_CALL_COLUMNS
from clcg_pipeline.granularity._predict import PREDICTION_COLUMNS, partition_paragraphs, predict_tasks
from clcg_pipeline.granularity._scoring import (
    JUDGEMENT_COLUMNS,
    SCORE_COLUMNS,
    attach_judges,
    judge_tasks,
    score_tasks,
)
from clcg_pipeline.partitions import (
    LANGUAGE_DIMENSION,
    MODEL_DIMENSION,
    each_partition,
    model_calls_dep,
    own_rows,
    response_partitions,
    single_run_policy,
)
from clcg_pipeline.resources import StudyResource


class TaskInferenceConfig(dg.Config):
    budget_usd: float | None = None
    """Stop issuing calls before this Dagster run's spend would exceed it; partial results are kept.
    Shared by every paid op of the run (``inference._calls.run_budget``): responses, tasks, judges."""
    mode: Literal["online", "batch"] = "online"
    """batch submits through the provider's batch API (cheaper, slower; resumable)."""


def _partition(partition: str, partitions: dg.MultiPartitionsDefinition) -> tuple[str, str]:
    # `dagster job launch` and some backfills hand the key over as text ("en|gpt-4o").
    key = partitions.get_partition_key_from_str(partition).keys_by_dimension
    return key[LANGUAGE_DIMENSION], key[MODEL_DIMENSION]


def _call_options(
    context: dg.AssetExecutionContext,
    study: StudyResource,
    cfg: ProjectConfig,
    config: TaskInferenceConfig,
    *,
    progress: Callable[[int, int], None],
    origin: Origin = None,
) -> CallOptions:
    """The op's calls: the data folder's cache, the study's and this run's budgets, the mode."""
    return CallOptions(
        cache_dir=study.cache_dir,
        study_budget_usd=cfg.study.budget_usd,
        budget=run_budget(context.run_id, config.budget_usd),
        mode=config.mode,
        origin=origin,
        progress=progress,
    )


def _counts(series: pd.Series) -> dict[str, int]:
    return {str(k): int(v) for k, v in series.value_counts().items()}


def task_predictions_check(
    predictions: pd.DataFrame, where: str, limit: float, skipped: str | None = None
) -> dg.AssetCheckResult:
    """WARN when the partition has no answer (disabled, no task, no document in the language)
    or more than ``limit`` of its answers failed to parse."""
    failed = int((predictions["status"] != "ok").sum()) if len(predictions) else 0
    rate = failed / len(predictions) if len(predictions) else 0.0
    if skipped is not None:
        description: str | None = f"{where}: {skipped}"
    elif not len(predictions):
        description = f"{where}: empty: no granularity task has a document in this language"
    elif rate > limit:
        description = f"{where}: {failed} of {len(predictions)} answers unparseable or missing"
    else:
        description = None
    return dg.AssetCheckResult(
        asset_key="task_predictions",
        check_name="task_answers_parsed",
        passed=description is None,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={"rows": len(predictions), "failed": failed, "rate": rate, "limit": limit},
    )


def task_scores_check(scores: pd.DataFrame, where: str, skipped: str | None = None) -> dg.AssetCheckResult:
    """WARN on an empty partition, and when a judged answer lacks a verdict from some judge."""
    judged = scores[scores["judge_status"] != "not_judged"] if len(scores) else scores
    incomplete = int((judged["judge_status"] != "ok").sum()) if len(judged) else 0
    if skipped is not None:
        description: str | None = f"{where}: {skipped}"
    elif not len(scores):
        description = f"{where}: empty: no task answer to score"
    elif incomplete:
        description = f"{where}: {incomplete} filled paragraph(s) lack a parsed verdict from every judge"
    else:
        description = None
    return dg.AssetCheckResult(
        asset_key="task_scores",
        check_name="task_scores_complete",
        passed=description is None,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "rows": len(scores),
            "judged": len(judged),
            "incomplete_judgements": incomplete,
            "statuses": dg.MetadataValue.json(_counts(scores["status"]) if len(scores) else {}),
        },
    )


def build_task_scoring_defs(config: ProjectConfig) -> dg.Definitions:
    """G2: every task answered per language x model, then scored and judged."""
    partitions = response_partitions(study_coverage(config).covered)
    return dg.Definitions(assets=[_task_responses_asset(partitions), _task_scoring_asset(partitions)])


def _task_responses_asset(partitions: dg.MultiPartitionsDefinition) -> dg.AssetsDefinition:
    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=partitions,
        # After the model's stream (model_calls), which sends this partition's calls ahead.
        deps=[model_calls_dep()],
        backfill_policy=single_run_policy(),  # one run per new model, not per language (issue 32)
        ins={"long_paragraphs": dg.AssetIn(), "granularity_tasks": dg.AssetIn()},
        outs={
            "task_predictions": dg.AssetOut(
                description="One row per granularity task x context (full, none) x repetition.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
            "task_calls": dg.AssetOut(
                description="One row per task request: outcome, tokens, cost, latency.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "task_answers_parsed",
                asset="task_predictions",
                description="The partition answered its tasks and few answers failed to parse (warns).",
                partitions_def=partitions,
            )
        ],
    )
    def task_responses(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: TaskInferenceConfig,
        study: StudyResource,
        long_paragraphs: pd.DataFrame,
        granularity_tasks: pd.DataFrame,
    ):
        """Ask the partition's model every granularity task on the language's long documents."""
        cfg = study.load()
        inputs = (long_paragraphs, granularity_tasks)
        yield from each_partition(context, lambda key: _answer(context, config, study, cfg, key, *inputs))

    def _answer(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: TaskInferenceConfig,
        study: StudyResource,
        cfg: ProjectConfig,
        partition: str,
        long_paragraphs: pd.DataFrame,
        granularity_tasks: pd.DataFrame,
    ):
        """One partition's task answers, calls and check."""
        gran = cfg.study.granularity
        language, model_id = _partition(partition, partitions)
        where = f"{language} / {model_id}"
        if not gran.enabled:
            context.log.warning(f"task_predictions: {DISABLED}")
            yield dg.Output(
                empty(PREDICTION_COLUMNS), output_name="task_predictions", metadata={"status": DISABLED}
            )
            yield dg.Output(empty(TASK_CALL_COLUMNS), output_name="task_calls", metadata={"status": DISABLED})
            yield task_predictions_check(empty(PREDICTION_COLUMNS), where, 0.0, DISABLED)
            return
        reference = cfg.languages.reference
        names = {lang.iso: lang.name for lang in cfg.languages.languages}
        result = predict_tasks(
            model=cfg.models.get(model_id),
            language=language,
            paragraphs=partition_paragraphs(long_paragraphs, language, reference),
            tasks=granularity_tasks,
            settings=gran,
            options=_call_options(
                context,
                study,
                cfg,
                config,
                progress=logged_progress(context.log.info, f"{model_id} / {language} tasks"),
                origin=partition_origin(context, "task_calls", partition),
            ),
            reference=reference,
            language_name=names.get(language),
        )
        yield from _response_outputs(result.predictions, result.calls)
        yield task_predictions_check(result.predictions, where, cfg.study.max_parse_failure_rate)

    return task_responses


def _task_scoring_asset(partitions: dg.MultiPartitionsDefinition) -> dg.AssetsDefinition:
    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=partitions,
        backfill_policy=single_run_policy(),  # one run per new model, not per language (issue 32)
        ins={
            "task_predictions": dg.AssetIn(),
            "granularity_tasks": dg.AssetIn(),
            "long_paragraphs": dg.AssetIn(),
            "long_documents": dg.AssetIn(),
        },
        outs={
            "task_scores": dg.AssetOut(
                description="Accuracy, ROUGE-L, BLEU/chrF and the paragraph judges' mean and spread.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
            "task_judgements": dg.AssetOut(
                description="Each judge's verdict: filled paragraphs (five 0-20 dimensions) and cloze "
                "errors (M1-M3, S1-S8).",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
            "task_judge_calls": dg.AssetOut(
                description="One row per judge request of the granularity judges (cost, tokens, outcome).",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "task_scores_complete",
                asset="task_scores",
                description="The partition has scores; every judged paragraph has every judge's verdict.",
                partitions_def=partitions,
            )
        ],
    )
    def task_scoring(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: TaskInferenceConfig,
        study: StudyResource,
        task_predictions: pd.DataFrame,
        granularity_tasks: pd.DataFrame,
        long_paragraphs: pd.DataFrame,
        long_documents: pd.DataFrame,
    ):
        """Score every answer; the configured judges score filled paragraphs and label cloze errors."""
        cfg = study.load()
        inputs = (granularity_tasks, long_paragraphs, long_documents)
        yield from each_partition(
            context,
            lambda key: _score(
                context, config, study, cfg, key, own_rows(context, task_predictions, key), *inputs
            ),
        )

    def _score(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: TaskInferenceConfig,
        study: StudyResource,
        cfg: ProjectConfig,
        partition: str,
        task_predictions: pd.DataFrame,
        granularity_tasks: pd.DataFrame,
        long_paragraphs: pd.DataFrame,
        long_documents: pd.DataFrame,
    ):
        """One partition's scores, judgements, judge calls and check."""
        gran = cfg.study.granularity
        language, model_id = _partition(partition, partitions)
        where = f"{language} / {model_id}"
        if not gran.enabled or not len(task_predictions):
            why = DISABLED if not gran.enabled else None
            yield dg.Output(
                empty(SCORE_COLUMNS), output_name="task_scores", metadata={"status": why or "empty"}
            )
            yield dg.Output(empty(JUDGEMENT_COLUMNS), output_name="task_judgements")
            yield dg.Output(empty(JUDGE_CALL_COLUMNS), output_name="task_judge_calls")
            yield task_scores_check(empty(SCORE_COLUMNS), where, why)
            return
        reference = cfg.languages.reference
        paragraphs = long_paragraphs[long_paragraphs["language"].isin([language, reference])]
        scores = score_tasks(
            task_predictions, granularity_tasks, paragraphs, long_documents, reference=reference
        )
        judges = [cfg.models.get(j) for j in gran.judges]
        progress = logged_progress(context.log.info, f"judges of {model_id} / {language}")
        judgements, judge_calls = judge_tasks(
            task_predictions,
            granularity_tasks,
            paragraphs,
            judges,
            _call_options(context, study, cfg, config, progress=progress),
        )
        if not judges:
            context.log.warning(
                f"task_scores {where}: study.granularity.judges is empty: filling is not judged"
            )
        scores = attach_judges(scores, judgements, [j.id for j in judges])
        yield from _scoring_outputs(scores, judgements, judge_calls, [j.id for j in judges])
        yield task_scores_check(scores, where)

    return task_scoring


def _response_outputs(predictions: pd.DataFrame, calls: pd.DataFrame) -> Iterator[dg.Output]:
    """``task_predictions`` and ``task_calls`` with their counts as metadata."""
    yield dg.Output(
        predictions,
        output_name="task_predictions",
        metadata={
            "statuses": dg.MetadataValue.json(_counts(predictions["status"]) if len(predictions) else {}),
            "tasks": dg.MetadataValue.json(_counts(predictions["task"]) if len(predictions) else {}),
        },
    )
    fresh = calls.loc[~calls["cached"].astype(bool)] if len(calls) else calls
    yield dg.Output(
        calls,
        output_name="task_calls",
        metadata={
            "new_cost_usd": float(fresh["cost_usd"].sum()) if len(fresh) else 0.0,
            "cached": int(calls["cached"].sum()) if len(calls) else 0,
            "input_tokens": int(calls["input_tokens"].sum()) if len(calls) else 0,
            "outcomes": dg.MetadataValue.json(_counts(calls["outcome"]) if len(calls) else {}),
        },
    )


def _scoring_outputs(
    scores: pd.DataFrame, judgements: pd.DataFrame, judge_calls: pd.DataFrame, judge_ids: list[str]
) -> Iterator[dg.Output]:
    """``task_scores``, ``task_judgements`` and ``task_judge_calls`` with their metadata."""
    yield dg.Output(
        scores,
        output_name="task_scores",
        metadata={
            "statuses": dg.MetadataValue.json(_counts(scores["status"])),
            "judges": ", ".join(judge_ids) or "none",
        },
    )
    yield dg.Output(
        judgements,
        output_name="task_judgements",
        metadata={
            "statuses": dg.MetadataValue.json(_counts(judgements["status"]) if len(judgements) else {})
        },
    )
    yield dg.Output(
        judge_calls if len(judge_calls) else empty(JUDGE_CALL_COLUMNS),
        output_name="task_judge_calls",
        metadata={"cost_usd": float(judge_calls["cost_usd"].sum()) if len(judge_calls) else 0.0},
    )
