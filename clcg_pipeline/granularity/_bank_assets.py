"""G1 Dagster wrappers: long documents (every language, same pids) and the frozen task bank."""

from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CallOptions, budget_stop_line, op_budget
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.granularity._asset_parts import DISABLED, GROUP, empty, md
from clcg_pipeline.granularity._documents import (
    LONG_DOCUMENT_COLUMNS,
    LONG_PARAGRAPH_COLUMNS,
    DocumentError,
    LongDocuments,
    build_long_documents,
)
from clcg_pipeline.granularity._tasks import (
    TASK_COLUMNS,
    WORD_QUESTION_TEMPLATE,
    BoundWriter,
    TaskBank,
    build_tasks,
    freeze,
    judge_writer,
)
from clcg_pipeline.granularity._validate import REJECTION_COLUMNS
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import empty_frame, read_all_partitions, read_frame

# Whose calls task_writer_calls holds, as the budget's line names them.
_WRITERS = "the task bank's writers (cloze confusion writer, word-question writer)"
# Task kinds every document should get; a document without one of them is reported.
CORE_TASKS = ("word_single_qa", "word_multi_qa", "cloze", "paragraph_fill", "translation")


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
    every paid op of the run (``calls.op_budget``: the tightest any op of the run is given). Online
    only: see ``judge_writer``."""


def build_task_bank_defs(config: ProjectConfig) -> dg.Definitions:
    """G1: long documents (every language, same pids) and the task bank built from English."""
    return dg.Definitions(assets=[_long_documents_asset(), _task_bank_asset()])


def _long_documents_asset() -> dg.AssetsDefinition:
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
                empty(LONG_DOCUMENT_COLUMNS), output_name="long_documents", metadata={"status": DISABLED}
            )
            yield dg.Output(
                empty(LONG_PARAGRAPH_COLUMNS), output_name="long_paragraphs", metadata={"status": DISABLED}
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
                metadata={
                    "source": gran.source,
                    "language": getattr(exc, "language", None) or "",
                    "file": str(getattr(exc, "file", None) or ""),
                },
                allow_retries=False,
            ) from exc
        for note in result.notes:
            # What was left out (a paragraph missing in a version, a language outside the panel):
            # a warning, so it shows among the run's problems rather than its chatter.
            context.log.warning(f"long_documents: {note}")
        for problem in result.problems:
            context.log.warning(f"long_documents: {problem}")
        outputs = checked_outputs(
            None, {"long_documents": result.documents, "long_paragraphs": result.paragraphs}
        )
        reference = result.documents[result.documents["language"] == cfg.languages.reference]
        status = "ok" if not result.problems else "; ".join(result.problems)
        yield dg.Output(
            outputs["long_documents"],
            output_name="long_documents",
            metadata=_documents_metadata(result, reference, status, gran.source),
        )
        yield dg.Output(
            outputs["long_paragraphs"],
            output_name="long_paragraphs",
            metadata={"paragraphs": len(result.paragraphs), "status": status},
        )
        yield bucket_check(result)

    return long_documents


def _task_bank_asset() -> dg.AssetsDefinition:
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
            "task_writer_calls": dg.AssetOut(
                description="The writers' calls (cloze confusions, word questions): what each paid "
                "(the study's record of spend reads it).",
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
            tasks = empty(TASK_COLUMNS)
            yield dg.Output(tasks, output_name="granularity_tasks", metadata={"status": DISABLED})
            yield dg.Output(
                empty(REJECTION_COLUMNS), output_name="task_rejections", metadata={"status": DISABLED}
            )
            yield dg.Output(_stored_writer_calls(study), output_name="task_writer_calls")
            yield task_check(tasks, None)
            return
        writer_spec = cfg.models.get(gran.confusion_writer) if gran.confusion_writer else None
        # load_config has refused an id models.yaml lacks, before any asset ran.
        word_spec = cfg.models.get(gran.word_question_writer) if gran.word_question_writer else None
        # Online only (see judge_writer): the cache, the study's and this run's budgets.
        options = CallOptions(
            cache_dir=study.cache_dir,
            study_budget_usd=cfg.study.budget_usd,
            budget=op_budget(context.run_id, context.run.run_config, config.budget_usd),
        )
        writer = judge_writer(writer_spec, options) if writer_spec is not None else None
        word_writer = (
            BoundWriter(judge_writer(word_spec, options, WORD_QUESTION_TEMPLATE), word_spec.id)
            if word_spec is not None
            else None
        )
        bank: TaskBank = build_tasks(
            long_documents,
            long_paragraphs,
            gran,
            reference=cfg.languages.reference,
            tokenizer=cfg.study.fertility.tokenizer,
            writer=writer,
            writer_id=writer_spec.id if writer_spec is not None else None,
            word_writer=word_writer,
        )
        if stop := budget_stop_line(_WRITERS, bank.writer_calls, options):
            # The bank is frozen once written: stored without these tasks, they would stay lost.
            # Not written; what the writers paid is kept in their record.
            yield dg.Output(bank.writer_calls, output_name="task_writer_calls")
            raise dg.Failure(f"granularity_tasks: not written: {stop}", allow_retries=False)
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
        metadata = _bank_metadata(
            bank, tasks, provenance, [*bank.notes, *freeze_notes], gran.confusion_writer
        )
        metadata["word_question_writer"] = gran.word_question_writer or "none (rule-based gap questions)"
        metadata["by_task_and_role"] = md(_role_counts(tasks))
        context.log.info(f"granularity_tasks: {len(tasks)} tasks, {len(bank.rejections)} rejected candidates")
        yield dg.Output(outputs["granularity_tasks"], output_name="granularity_tasks", metadata=metadata)
        yield dg.Output(outputs["task_rejections"], output_name="task_rejections")
        writer_calls = bank.writer_calls if len(bank.writer_calls) else empty_frame("task_writer_calls")
        yield dg.Output(writer_calls, output_name="task_writer_calls", metadata={"calls": len(writer_calls)})
        yield task_check(tasks, long_documents[long_documents["language"] == cfg.languages.reference])

    return granularity_task_bank


def _stored_writer_calls(study: StudyResource) -> pd.DataFrame:
    """The stored ``task_writer_calls``: a disabled family makes no call, and the record of what
    its writers paid before stays (written empty, the study's spend would lose it)."""
    stored = UPath(study.path("task_writer_calls", "data.parquet"))
    return read_frame(stored) if stored.exists() else empty_frame("task_writer_calls")


def _role_counts(tasks: pd.DataFrame) -> pd.DataFrame:
    """Tasks per task kind x role (cloze and filling have a role; see docs/GRANULARITY.md)."""
    with_role = tasks[tasks["role"].notna()] if "role" in tasks.columns else tasks.iloc[0:0]
    return with_role.groupby(["task", "role"]).size().reset_index(name="tasks")


def _documents_metadata(
    result: LongDocuments, reference: pd.DataFrame, status: str, source: str
) -> dict[str, Any]:
    """``long_documents``' metadata: per bucket wanted and built, each document's assembly, notes."""
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
    assembly = "\n".join(
        f"- {d}: {a}" for d, a in zip(reference["doc_id"], reference["assembly"], strict=True)
    )
    return {
        "status": status,
        "source": "assembled from the study's aligned articles" if source == "assembled" else source,
        "documents": int(reference["doc_id"].nunique()),
        "languages": int(result.documents["language"].nunique()),
        "buckets": md(by_bucket),
        "assembly": dg.MetadataValue.md(assembly or "none"),
        "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in result.notes) or "none"),
    }


def _bank_metadata(
    bank: TaskBank, tasks: pd.DataFrame, provenance: str, notes: list[str], confusion_writer: str | None
) -> dict[str, Any]:
    """``granularity_tasks``' metadata: counts by task and rule, and the confusion writer's calls."""
    counts = tasks.groupby(["task", "region"], dropna=False).size().reset_index(name="tasks")
    rejected = bank.rejections.groupby(["task", "rule"]).size().reset_index(name="rejected")
    calls = bank.writer_calls
    fresh = ~calls["cached"].astype(bool) if len(calls) else None
    return {
        "provenance": provenance,
        "tasks": len(tasks),
        "documents": int(tasks["doc_id"].nunique()) if len(tasks) else 0,
        "by_task_and_region": md(counts),
        "rejected_by_rule": md(rejected),
        "confusion_writer": confusion_writer or "none (cloze skipped)",
        "writer_calls": len(calls),
        "writer_cost_usd": float(calls["cost_usd"].sum()) if len(calls) else 0.0,
        # This run's new calls, for the run's page (``clcg run`` counts task_writer_calls instead).
        "writer_new_calls": int(fresh.sum()) if fresh is not None else 0,
        "writer_new_cost_usd": float(calls.loc[fresh, "cost_usd"].sum()) if fresh is not None else 0.0,
        "notes": dg.MetadataValue.md("\n".join(f"- {n}" for n in notes) or "none"),
    }
