"""Dagster wrappers of the granularity task family: documents, tasks, responses, scores."""

from collections.abc import Callable
from typing import Any, Literal

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CALL_COLUMNS as JUDGE_CALL_COLUMNS
from clcg_pipeline.calls import CALLS_AHEAD_TAG, call_origin, run_budget
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.granularity._documents import (
    LONG_DOCUMENT_COLUMNS,
    LONG_PARAGRAPH_COLUMNS,
    DocumentError,
    LongDocuments,
    build_long_documents,
)
from clcg_pipeline.granularity._predict import CALL_COLUMNS as TASK_CALL_COLUMNS
from clcg_pipeline.granularity._predict import PREDICTION_COLUMNS, partition_paragraphs, predict_tasks
from clcg_pipeline.granularity._scoring import (
    JUDGEMENT_COLUMNS,
    SCORE_COLUMNS,
    attach_judges,
    judge_tasks,
    score_tasks,
)
from clcg_pipeline.granularity._tasks import TASK_COLUMNS, TaskBank, build_tasks, freeze, judge_writer
from clcg_pipeline.granularity._validate import REJECTION_COLUMNS
from clcg_pipeline.partitions import LANGUAGE_DIMENSION, MODEL_DIMENSION, response_partitions
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_all_partitions, read_frame

GROUP = "granularity"
# Task kinds every document should get; a document without one of them is reported.
CORE_TASKS = ("word_single_qa", "word_multi_qa", "cloze", "paragraph_fill", "translation")
DISABLED = "skipped: study.granularity.enabled is false"


def _md(frame: pd.DataFrame) -> dg.MetadataValue:
    return dg.MetadataValue.md(frame.to_markdown(index=False) if len(frame) else "none")


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def bucket_check(result: LongDocuments | None) -> dg.AssetCheckResult:
    """WARN when a bucket got fewer documents than configured (or the family is disabled)."""
    if result is None:
        return dg.AssetCheckResult(
            asset_key="long_documents",
            check_name="every_bucket_has_documents",
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=DISABLED,
        )
    problems = result.problems
    return dg.AssetCheckResult(
        asset_key="long_documents",
        check_name="every_bucket_has_documents",
        passed=not problems,
        severity=dg.AssetCheckSeverity.WARN,
        description="; ".join(problems) if problems else "every bucket has its documents",
        metadata={b.bucket: f"{b.built}/{b.wanted} ({b.status})" for b in result.buckets},
    )


def task_check(tasks: pd.DataFrame, documents: pd.DataFrame | None) -> dg.AssetCheckResult:
    """WARN when the bank is empty or a document lacks one of the core task kinds."""
    if documents is None:
        passed, description = False, DISABLED
    else:
        doc_ids = sorted(set(documents["doc_id"]))
        missing = {
            doc_id: [t for t in CORE_TASKS if not ((tasks["doc_id"] == doc_id) & (tasks["task"] == t)).any()]
            for doc_id in doc_ids
        }
        missing = {d: m for d, m in missing.items() if m}
        if not doc_ids:
            passed, description = False, "empty: no long documents, so no tasks (see long_documents' check)"
        elif missing:
            passed = False
            description = "too few tasks: " + "; ".join(
                f"{d} has no {', '.join(m)}" for d, m in missing.items()
            )
            description += " (task_rejections says why)"
        else:
            passed, description = True, f"{len(tasks)} tasks; every document has every core task kind"
    return dg.AssetCheckResult(
        asset_key="granularity_tasks",
        check_name="task_bank_not_empty",
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={"tasks": len(tasks)},
    )


class TaskBankConfig(dg.Config):
    regenerate: bool = False
    """Build the granularity task bank again. Off by default: the bank is frozen."""
    budget_usd: float | None = None
    """Most USD this Dagster run's new model calls (the cloze confusion writer's) may cost, shared by
    every paid op of the run (``inference._calls.run_budget``). Online only: see ``judge_writer``."""


def build_task_bank_defs(config: ProjectConfig) -> dg.Definitions:
    """G1: long documents (every language, same pids) and the task bank built from English."""

    @dg.multi_asset(
        group_name=GROUP,
        deps=["paragraphs", "corpus_audit"],
        outs={
            "long_documents": dg.AssetOut(
                description="Long documents of the configured token buckets, a row per document x language.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
            "long_paragraphs": dg.AssetOut(
                description="Their paragraphs with region and position; pids are the same in every language.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "every_bucket_has_documents",
                asset="long_documents",
                description="Each configured length bucket got its documents; else says why (warns).",
            )
        ],
    )
    def long_documents(context: dg.AssetExecutionContext, study: StudyResource):  # type: ignore[no-untyped-def]
        """Assembled from the aligned articles (seeded) or read from a long-document JSONL corpus."""
        cfg = study.load()
        gran = cfg.study.granularity
        if not gran.enabled:
            context.log.warning(f"long_documents: {DISABLED}")
            yield dg.Output(
                _empty(LONG_DOCUMENT_COLUMNS), output_name="long_documents", metadata={"status": DISABLED}
            )
            yield dg.Output(
                _empty(LONG_PARAGRAPH_COLUMNS), output_name="long_paragraphs", metadata={"status": DISABLED}
            )
            yield bucket_check(None)
            return
        # Whatever languages are materialized (a run may cover part of the panel).
        paragraphs = read_all_partitions(study.data_dir, "paragraphs")
        audit = read_all_partitions(study.data_dir, "corpus_audit")
        if paragraphs.empty:
            paragraphs = pd.DataFrame(columns=["doc_id", "language", "pid", "ordinal", "text"])
            audit = pd.DataFrame(columns=["doc_id", "language", "complete"])
        try:
            result = build_long_documents(
                gran,
                paragraphs=paragraphs,
                audit=audit,
                languages=[lang.iso for lang in cfg.languages.languages],
                reference=cfg.languages.reference,
                threshold=cfg.study.completeness_threshold,
                tokenizer=cfg.study.fertility.tokenizer,
            )
        except DocumentError as exc:
            raise dg.Failure(
                description=f"long-document source {gran.source!r} could not be read, nothing was "
                f"stored: {exc}",
                metadata={"source": gran.source},
                allow_retries=False,
            ) from exc
        for note in result.notes:
            context.log.info(f"long_documents: {note}")
        for problem in result.problems:
            context.log.warning(f"long_documents: {problem}")
        outputs = checked_outputs(
            None, {"long_documents": result.documents, "long_paragraphs": result.paragraphs}
        )
        reference = result.documents[result.documents["language"] == cfg.languages.reference]
        by_bucket = pd.DataFrame(
            [
                {
                    "bucket": b.bucket,
                    "tokens": f"{b.min_tokens}-{b.max_tokens}",
                    "wanted": b.wanted,
                    "built": b.built,
                    "status": b.status,
                    "english_tokens": ", ".join(
                        str(n) for n in reference.loc[reference["bucket"] == b.bucket, "n_tokens"]
                    ),
                }
                for b in result.buckets
            ]
        )
        status = "ok" if not result.problems else "; ".join(result.problems)
        source = "assembled from the study's aligned articles" if gran.source == "assembled" else gran.source
        yield dg.Output(
            outputs["long_documents"],
            output_name="long_documents",
            metadata={
                "status": status,
                "source": source,
                "documents": int(reference["doc_id"].nunique()),
                "languages": int(result.documents["language"].nunique()),
                "buckets": _md(by_bucket),
                "assembly": dg.MetadataValue.md(
                    "\n".join(
                        f"- {d}: {a}" for d, a in zip(reference["doc_id"], reference["assembly"], strict=True)
                    )
                    or "none"
                ),
                "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in result.notes) or "none"),
            },
        )
        yield dg.Output(
            outputs["long_paragraphs"],
            output_name="long_paragraphs",
            metadata={"paragraphs": len(result.paragraphs), "status": status},
        )
        yield bucket_check(result)

    @dg.multi_asset(
        group_name=GROUP,
        ins={"long_documents": dg.AssetIn(), "long_paragraphs": dg.AssetIn()},
        outs={
            "granularity_tasks": dg.AssetOut(
                description="The frozen task bank (word, sentence, paragraph, document), built from English.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
            "task_rejections": dg.AssetOut(
                description="Task candidates rejected by deterministic validation, with the rule.",
                kinds={"parquet"},
                owners=["team:clcg"],
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "task_bank_not_empty",
                asset="granularity_tasks",
                description="Every long document has every core task kind; else says which lack (warns).",
            )
        ],
    )
    def granularity_task_bank(
        context: dg.AssetExecutionContext,
        config: TaskBankConfig,
        study: StudyResource,
        long_documents: pd.DataFrame,
        long_paragraphs: pd.DataFrame,
    ):  # type: ignore[no-untyped-def]
        """Tasks built once from English, validated; cloze confusions by the confusion writer."""
        cfg = study.load()
        gran = cfg.study.granularity
        if not gran.enabled:
            context.log.warning(f"granularity_tasks: {DISABLED}")
            tasks = _empty(TASK_COLUMNS)
            yield dg.Output(tasks, output_name="granularity_tasks", metadata={"status": DISABLED})
            yield dg.Output(
                _empty(REJECTION_COLUMNS), output_name="task_rejections", metadata={"status": DISABLED}
            )
            yield task_check(tasks, None)
            return
        writer_spec = cfg.models.get(gran.confusion_writer) if gran.confusion_writer else None
        bank: TaskBank = build_tasks(
            long_documents,
            long_paragraphs,
            gran,
            reference=cfg.languages.reference,
            tokenizer=cfg.study.fertility.tokenizer,
            writer=(
                judge_writer(
                    writer_spec,
                    cache_dir=study.cache_dir,
                    study_budget_usd=cfg.study.budget_usd,
                    budget=run_budget(context.run_id, config.budget_usd),
                )
                if writer_spec is not None
                else None
            ),
            writer_id=writer_spec.id if writer_spec is not None else None,
        )
        writer_calls = bank.writer_calls
        skipped = int((writer_calls["outcome"] == "skipped_budget").sum()) if len(writer_calls) else 0
        if skipped:
            # The bank is frozen once written: stored without these cloze sets, they would stay lost.
            reasons = ", ".join(sorted(set(writer_calls["error"].dropna())))
            raise dg.Failure(
                f"granularity_tasks: the run budget stopped {skipped} of the cloze confusion writer's "
                f"{len(writer_calls)} call(s) ({reasons}); the task bank is "
                "frozen once written, so it is not written without them: raise --budget (or "
                "study.budget_usd) and run again"
            )
        stored = UPath(study.path("granularity_tasks", "data.parquet"))
        provenance = "built from the long documents"
        freeze_notes: list[str] = []
        tasks = bank.tasks
        if stored.exists() and not config.regenerate:
            tasks, freeze_notes = freeze(read_frame(stored), bank.tasks)
            provenance = "stored bank kept for unchanged documents (frozen; set regenerate to build it again)"
        for note in [*bank.notes, *freeze_notes]:
            context.log.warning(f"granularity_tasks: {note}")
        outputs = checked_outputs(None, {"granularity_tasks": tasks, "task_rejections": bank.rejections})
        counts = tasks.groupby(["task", "region"], dropna=False).size().reset_index(name="tasks")
        rejected = bank.rejections.groupby(["task", "rule"]).size().reset_index(name="rejected")
        calls = bank.writer_calls
        metadata: dict[str, Any] = {
            "provenance": provenance,
            "tasks": len(tasks),
            "documents": int(tasks["doc_id"].nunique()) if len(tasks) else 0,
            "by_task_and_region": _md(counts),
            "rejected_by_rule": _md(rejected),
            "confusion_writer": gran.confusion_writer or "none (cloze skipped)",
            "writer_calls": len(calls),
            "writer_cost_usd": float(calls["cost_usd"].sum()) if len(calls) else 0.0,
            # Read by ``clcg run`` to count this run's new calls (the writer's calls have no table).
            "writer_new_calls": int((~calls["cached"].astype(bool)).sum()) if len(calls) else 0,
            "writer_new_cost_usd": (
                float(calls.loc[~calls["cached"].astype(bool), "cost_usd"].sum()) if len(calls) else 0.0
            ),
            "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in [*bank.notes, *freeze_notes]) or "none"),
        }
        context.log.info(f"granularity_tasks: {len(tasks)} tasks, {len(bank.rejections)} rejected candidates")
        yield dg.Output(outputs["granularity_tasks"], output_name="granularity_tasks", metadata=metadata)
        yield dg.Output(outputs["task_rejections"], output_name="task_rejections")
        yield task_check(tasks, long_documents[long_documents["language"] == cfg.languages.reference])

    return dg.Definitions(assets=[long_documents, granularity_task_bank])


def build_granularity_defs(config: ProjectConfig) -> dg.Definitions:
    """Every granularity asset (each part adds its own builder below and merges it here)."""
    return dg.Definitions.merge(
        build_task_bank_defs(config), build_task_scoring_defs(config), build_granularity_analysis_defs(config)
    )


# -- G2: task answers and scores, per language x model (same partitions as the responses) -------
class TaskInferenceConfig(dg.Config):
    budget_usd: float | None = None
    """Stop issuing calls before this Dagster run's spend would exceed it; partial results are kept.
    Shared by every paid op of the run (``inference._calls.run_budget``): responses, tasks, judges."""
    mode: Literal["online", "batch"] = "online"
    """batch submits through the provider's batch API (cheaper, slower; resumable)."""


def _partition(
    context: dg.AssetExecutionContext, partitions: dg.MultiPartitionsDefinition
) -> tuple[str, str]:
    # `dagster job launch` and some backfills hand the key over as text ("en|gpt-4o").
    key = partitions.get_partition_key_from_str(str(context.partition_key)).keys_by_dimension
    return key[LANGUAGE_DIMENSION], key[MODEL_DIMENSION]


def _progress(context: dg.AssetExecutionContext, what: str) -> Callable[[int, int], None]:
    logged = {"decile": -1}

    def progress(done: int, total: int) -> None:
        decile = done * 10 // max(total, 1)  # about every 10%
        if decile != logged["decile"]:
            logged["decile"] = decile
            context.log.info(f"{what}: {done}/{total} calls")

    return progress


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
    partitions = response_partitions(config.languages)

    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=partitions,
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
        gran = cfg.study.granularity
        language, model_id = _partition(context, partitions)
        where = f"{language} / {model_id}"
        if not gran.enabled:
            context.log.warning(f"task_predictions: {DISABLED}")
            yield dg.Output(
                _empty(PREDICTION_COLUMNS), output_name="task_predictions", metadata={"status": DISABLED}
            )
            yield dg.Output(
                _empty(TASK_CALL_COLUMNS), output_name="task_calls", metadata={"status": DISABLED}
            )
            yield task_predictions_check(_empty(PREDICTION_COLUMNS), where, 0.0, DISABLED)
            return
        reference = cfg.languages.reference
        names = {lang.iso: lang.name for lang in cfg.languages.languages}
        result = predict_tasks(
            model=cfg.models.get(model_id),
            language=language,
            paragraphs=partition_paragraphs(long_paragraphs, language, reference),
            tasks=granularity_tasks,
            settings=gran,
            cache_dir=study.cache_dir,
            reference=reference,
            language_name=names.get(language),
            study_budget_usd=cfg.study.budget_usd,
            progress=_progress(context, f"{model_id} / {language} tasks"),
            mode=config.mode,
            budget=run_budget(context.run_id, config.budget_usd),
            origin=call_origin(context.run.tags.get(CALLS_AHEAD_TAG), str(context.partition_key)),
        )
        predictions, calls = result.predictions, result.calls
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
        yield task_predictions_check(predictions, where, cfg.study.max_parse_failure_rate)

    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=partitions,
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
        gran = cfg.study.granularity
        language, model_id = _partition(context, partitions)
        where = f"{language} / {model_id}"
        if not gran.enabled or not len(task_predictions):
            why = DISABLED if not gran.enabled else None
            yield dg.Output(
                _empty(SCORE_COLUMNS), output_name="task_scores", metadata={"status": why or "empty"}
            )
            yield dg.Output(_empty(JUDGEMENT_COLUMNS), output_name="task_judgements")
            yield dg.Output(_empty(JUDGE_CALL_COLUMNS), output_name="task_judge_calls")
            yield task_scores_check(_empty(SCORE_COLUMNS), where, why)
            return
        reference = cfg.languages.reference
        paragraphs = long_paragraphs[long_paragraphs["language"].isin([language, reference])]
        scores = score_tasks(
            task_predictions, granularity_tasks, paragraphs, long_documents, reference=reference
        )
        judges = [cfg.models.get(j) for j in gran.judges]
        judgements, judge_calls = judge_tasks(
            task_predictions,
            granularity_tasks,
            paragraphs,
            judges,
            cache_dir=study.cache_dir,
            study_budget_usd=cfg.study.budget_usd,
            mode=config.mode,
            progress=_progress(context, f"judges of {model_id} / {language}"),
            budget=run_budget(context.run_id, config.budget_usd),
        )
        if not judges:
            context.log.warning(
                f"task_scores {where}: study.granularity.judges is empty: filling is not judged"
            )
        scores = attach_judges(scores, judgements, [j.id for j in judges])
        yield dg.Output(
            scores,
            output_name="task_scores",
            metadata={
                "statuses": dg.MetadataValue.json(_counts(scores["status"])),
                "judges": ", ".join(j.id for j in judges) or "none",
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
            judge_calls if len(judge_calls) else _empty(JUDGE_CALL_COLUMNS),
            output_name="task_judge_calls",
            metadata={"cost_usd": float(judge_calls["cost_usd"].sum()) if len(judge_calls) else 0.0},
        )
        yield task_scores_check(scores, where)

    return dg.Definitions(assets=[task_responses, task_scoring])


# G3 (issue 11): the granularity analysis over every stored task_scores partition.


def granularity_results_check(doc: dict[str, Any]) -> dg.AssetCheckResult:
    """WARN when the analysis is skipped or empty, or no interval could be given (too few documents)."""
    status = doc["status"]
    settings = doc.get("settings", {})
    few = status == "ok" and settings.get("documents", 0) < settings.get("min_documents", 0)
    if status != "ok":
        description = f"{status}: {doc['reason']}"
    else:
        description = f"{settings.get('rows', 0)} scored rows over {settings.get('documents', 0)} documents"
        if few:
            description += (
                f"; fewer than study.min_articles = {settings['min_documents']} documents: every interval is "
                "withheld (estimates are descriptive)"
            )
    return dg.AssetCheckResult(
        asset_key="granularity_results",
        check_name="granularity_analysed",
        passed=status == "ok" and not few,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "status": status,
            "caveats": dg.MetadataValue.md("\n".join(f"- {c}" for c in doc.get("caveats", []))),
        },
    )


def build_granularity_analysis_defs(config: ProjectConfig) -> dg.Definitions:
    """G3: scores, gaps, position curve, no-context drop and judge agreement of the task family."""
    from clcg_pipeline.granularity._analysis import analyse_granularity, human_fill_totals

    @dg.multi_asset(
        group_name=GROUP,
        ins={"long_documents": dg.AssetIn()},
        # Read from storage: every stored partition (language x model) at once.
        deps=[
            dg.AssetDep("task_scores"),
            dg.AssetDep("task_judgements"),
            dg.AssetDep("task_calls"),
            dg.AssetDep("task_judge_calls"),
            # issue 11: imported human paragraph-filling ratings (and the sample they cite), for
            # human_judge_correlation; both are upstream-free of this asset (no cycle).
            dg.AssetDep("human_annotations"),
            dg.AssetDep("annotation_sample"),
        ],
        outs={
            "granularity_estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every granularity estimand: score, paired gap, position contrasts, "
                "no-context drop.",
            ),
            "granularity_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="granularity_results.json (study_results key granularity).",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "granularity_analysed",
                asset="granularity_results",
                description="Warns when the family is disabled, nothing is scored, or intervals are "
                "withheld.",
            )
        ],
    )
    def granularity_analysis(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext, study: StudyResource, long_documents: pd.DataFrame
    ):
        """Accuracy/score by task x granularity x region x position x language x model, the paired
        cross-lingual gap, the position curve and the judges' agreement (STUDY.md section 8)."""
        cfg = study.load()
        evaluated = [m.id for m in cfg.models.evaluated]

        def stored(table: str, *, by_model: bool = True) -> pd.DataFrame:
            frame = read_all_partitions(study.data_dir, table)
            # Partitions of models or languages removed from the config stay on disk; leave them out.
            if len(frame) and "language" in frame.columns:
                keep = frame["language"].isin(cfg.languages.isos)
                if by_model and "model" in frame.columns:
                    keep &= frame["model"].isin(evaluated)
                frame = frame[keep]
            return frame.reset_index(drop=True)

        # A judge call's ``model`` is the judge (not an evaluated model): filtered by language only.
        calls = pd.concat(
            [stored("task_calls"), stored("task_judge_calls", by_model=False)], ignore_index=True
        )
        result = analyse_granularity(
            stored("task_scores"),
            cfg,
            documents=long_documents,
            judgements=stored("task_judgements"),
            calls=calls,
            human=human_fill_totals(
                read_all_partitions(study.data_dir, "human_annotations"),
                read_all_partitions(study.data_dir, "annotation_sample"),
            ),
        )
        doc = result.results
        if doc["status"] != "ok":
            context.log.warning(f"granularity analysis {doc['status']}: {doc['reason']}")
        context.log.info(f"granularity analysis: {doc['status']}; {len(result.estimates)} estimands")
        tables = checked_outputs(None, {"granularity_estimates": result.estimates})
        yield dg.Output(tables["granularity_estimates"], output_name="granularity_estimates")
        yield dg.Output(
            doc,
            output_name="granularity_results",
            metadata={"status": doc["status"], "reason": doc["reason"] or ""},
        )
        yield granularity_results_check(doc)

    return dg.Definitions(assets=[granularity_analysis])
