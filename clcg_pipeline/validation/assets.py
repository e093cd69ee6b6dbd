"""Dagster wrappers of the validation studies: error taxonomy and human validation."""

# No ``from __future__ import annotations`` here: Dagster reads the context and resource
# annotations of asset functions at definition time and rejects them as strings.
import datetime as dt
import hashlib
from pathlib import PurePosixPath
from typing import Any, Literal

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CALL_COLUMNS, run_budget
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import empty_frame, read_all_partitions, read_frame, write_bytes_atomic
from clcg_pipeline.validation._annotation_sample import build_annotation_sample
from clcg_pipeline.validation._diagnostic import candidate_pairs
from clcg_pipeline.validation._diagnostic import diagnostic_sample as draw_diagnostic_sample
from clcg_pipeline.validation._error_judging import judge_sample
from clcg_pipeline.validation._exchange import (
    ARCHIVE_DIR,
    EXPORT_DIR,
    export_files,
    import_annotations,
    import_status,
)
from clcg_pipeline.validation._human_analysis import run_human_validation
from clcg_pipeline.validation._keypoints import KEYPOINT_COLUMNS, checklist_items, write_keypoints
from clcg_pipeline.validation._taxonomy import load_taxonomy
from clcg_pipeline.validation._taxonomy_analysis import run_error_taxonomy_analysis
from clcg_pipeline.validation.demo_annotations import simulated_inbox_files
from clcg_pipeline.validation.sensors import build_annotation_inbox_sensor, read_inbox

GROUP = "validation"


def build_validation_defs(config: ProjectConfig) -> dg.Definitions:
    """Every validation asset (each study adds its own builder below and merges it here)."""
    return dg.Definitions.merge(
        build_error_judging_defs(config),
        build_error_taxonomy_analysis_defs(config),
        build_annotation_defs(config),
        build_human_validation_defs(config),
    )


# --------------------------------------------------------------------------- V1: the judges


DISABLED_JUDGES = "skipped: study.error_taxonomy.judges is empty (the error-taxonomy study is off)"


class JudgeRunConfig(dg.Config):
    budget_usd: float | None = None
    """Most USD this Dagster run's new model calls may cost, shared by every paid op of the run
    (``inference._calls.run_budget``; study.budget_usd bounds the whole study)."""
    mode: Literal["online", "batch"] = "online"
    """online: the async runner; batch: the provider's batch API (half price, slower)."""


def _md_counts(counts: dict[str, int]) -> dg.MetadataValue:
    return dg.MetadataValue.json(counts)


def sample_check(summary: dict[str, Any]) -> dg.AssetCheckResult:
    """WARN when the diagnostic sample is skipped, empty or short of its size."""
    return dg.AssetCheckResult(
        asset_key="diagnostic_sample",
        check_name="diagnostic_sample_complete",
        passed=summary["status"] == "ok",
        severity=dg.AssetCheckSeverity.WARN,
        description=summary["reason"] or f"{summary['pairs']} pairs",
        metadata={
            "status": summary["status"],
            "pairs": summary["pairs"],
            "candidate_loss_share_realised": summary.get("candidate_loss_share_realised"),
        },
    )


def judgements_check(summary: dict[str, Any], limit: float) -> dg.AssetCheckResult:
    """WARN when no judge is configured, nothing was judged, or too many judgements are unparseable."""
    share = summary.get("unparseable_share")
    if summary.get("status") == "skipped":
        passed, description = False, summary["reason"]
    elif not summary.get("sides"):
        passed, description = False, "empty: the diagnostic sample has no pairs (see its check)"
    elif share is not None and share > limit:
        passed = False
        description = (
            f"{share:.1%} of judgements unparseable, above study.error_taxonomy.max_unparseable_share"
        )
    else:
        passed = True
        description = f"{summary['sides']} sides x {len(summary['judges'])} judge(s); unparseable {share:.1%}"
    statuses = summary.get("statuses", {})
    not_ok = sum(v for k, v in statuses.items() if k != "ok")
    if passed and not_ok:
        description += f"; {not_ok} judgement(s) not ok ({statuses})"
    return dg.AssetCheckResult(
        asset_key="error_judgements",
        check_name="judgements_usable",
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={"status": summary.get("status", "ok"), "statuses": _md_counts(statuses)},
    )


def build_error_judging_defs(config: ProjectConfig) -> dg.Definitions:
    """V1: the diagnostic sample and every judge's labels of both sides of each pair."""

    @dg.asset(
        group_name=GROUP,
        deps=[dg.AssetDep("scores"), dg.AssetDep("predictions")],
        kinds={"parquet"},
        owners=["team:clcg"],
        check_specs=[
            dg.AssetCheckSpec(
                "diagnostic_sample_complete",
                asset="diagnostic_sample",
                description="Warns when the sample is skipped, empty or smaller than configured.",
            )
        ],
    )
    def diagnostic_sample(context: dg.AssetExecutionContext, study: StudyResource):  # type: ignore[no-untyped-def]
        """English/target response pairs (same model, item, rep and scope); candidate losses oversampled."""
        cfg = study.load()
        et = cfg.study.error_taxonomy
        if not et.judges:
            summary = {"status": "skipped", "reason": DISABLED_JUDGES, "pairs": 0}
            context.log.warning(f"diagnostic_sample: {DISABLED_JUDGES}")
            yield dg.Output(empty_frame("diagnostic_sample"), metadata={"status": "skipped"})
            yield sample_check(summary)
            return
        langs = cfg.languages
        # The study's target strata: neither the reference (en) nor the baseline (pt).
        targets = [iso for iso in langs.isos if iso not in (langs.reference, langs.baseline)]
        candidates = candidate_pairs(
            read_all_partitions(study.data_dir, "predictions"),
            read_all_partitions(study.data_dir, "scores"),
            reference=langs.reference,
            targets=targets,
            metric=cfg.study.band.metric,
            context_scopes=(cfg.study.band.context_scope,),
            models=[m.id for m in cfg.models.evaluated],
            min_en_score=et.candidate_loss_min_en_score,
            margin=et.candidate_loss_margin,
        )
        drawn = draw_diagnostic_sample(
            candidates,
            pairs=et.pairs,
            seed=et.seed,
            max_per_article=et.max_pairs_per_article,
            candidate_loss_share=et.candidate_loss_share,
            min_en_score=et.candidate_loss_min_en_score,
            margin=et.candidate_loss_margin,
        )
        summary = drawn.summary
        if summary["status"] != "ok":
            context.log.warning(f"diagnostic_sample {summary['status']}: {summary['reason']}")
        context.log.info(
            f"diagnostic_sample: {summary['pairs']} pairs from {summary['candidates']} candidates; candidate "
            f"losses {summary['candidate_loss_share_realised']} realised vs {et.candidate_loss_share} sought"
        )
        yield dg.Output(
            drawn.pairs,
            metadata={
                **{
                    k: v
                    for k, v in summary.items()
                    if isinstance(v, int | float | str) and not isinstance(v, bool)
                },
                "languages": dg.MetadataValue.json(summary["languages"]),
            },
        )
        yield sample_check(summary)

    @dg.multi_asset(
        group_name=GROUP,
        ins={"diagnostic_sample": dg.AssetIn()},
        deps=[dg.AssetDep("items"), dg.AssetDep("paragraphs")],
        outs={
            "error_judgements": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="One clcg-error-v1 label per response side per judge (error-judge-v1), with "
                "collapsed label, semantic-error flag, evidence quote and parse status.",
            ),
            "order_bias_judgements": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="A subsample of pairs shown side by side both ways round (error-judge-pair-v1).",
            ),
            "judge_calls": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every judge call (cached, budgeted like the responses), one row per request.",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "judgements_usable",
                asset="error_judgements",
                description="Warns when no judge is configured or too many judgements are unparseable.",
            )
        ],
    )
    def error_judging(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: JudgeRunConfig,
        study: StudyResource,
        diagnostic_sample: pd.DataFrame,
    ):
        """Every judge labels both sides of every pair, then judges a subsample of pairs both ways round."""
        cfg = study.load()
        et = cfg.study.error_taxonomy
        if not et.judges:
            context.log.warning(f"error judging: {DISABLED_JUDGES}")
            for name in ("error_judgements", "order_bias_judgements", "judge_calls"):
                yield dg.Output(empty_frame(name), output_name=name, metadata={"status": "skipped"})
            yield judgements_check({"status": "skipped", "reason": DISABLED_JUDGES}, et.max_unparseable_share)
            return
        logged: dict[str, int] = {}

        def progress(what: str, done: int, total: int) -> None:
            decile = done * 10 // max(total, 1)
            if logged.get(what) != decile:
                logged[what] = decile
                context.log.info(f"{what}: {done}/{total} judge calls")

        items = read_all_partitions(study.data_dir, "items")
        paragraphs = read_all_partitions(study.data_dir, "paragraphs")
        sample = diagnostic_sample
        if len(sample) and len(paragraphs) and len(items):
            paragraphs = paragraphs[paragraphs["doc_id"].isin(sample["doc_id"])]
            items = items[items["item_id"].isin(sample["item_id"])]
        result = judge_sample(
            sample,
            paragraphs=paragraphs,
            items=items,
            judges=[cfg.models.get(j) for j in et.judges],
            reference=cfg.languages.reference,
            taxonomy_id=et.taxonomy,
            order_bias_n=et.order_bias_pairs,
            seed=et.seed,
            cache_dir=study.cache_dir,
            study_budget_usd=cfg.study.budget_usd,
            mode=config.mode,
            progress=progress,
            budget=run_budget(context.run_id, config.budget_usd),
        )
        summary = result.summary
        calls = result.judge_calls
        outputs = checked_outputs(
            None,
            {
                "error_judgements": result.error_judgements,
                "order_bias_judgements": result.order_bias_judgements,
                "judge_calls": calls if len(calls) else empty_frame("judge_calls"),
            },
        )
        yield dg.Output(
            outputs["error_judgements"],
            output_name="error_judgements",
            metadata={
                "judgements": len(result.error_judgements),
                "statuses": _md_counts(summary["statuses"]),
                "template_hashes": dg.MetadataValue.json(summary["template_hashes"]),
            },
        )
        yield dg.Output(
            outputs["order_bias_judgements"],
            output_name="order_bias_judgements",
            metadata={
                "pairs": summary["order_bias_pairs"],
                "statuses": _md_counts(summary["order_bias_statuses"]),
            },
        )
        new = ~calls["cached"].astype(bool) if len(calls) else pd.Series(dtype=bool)
        yield dg.Output(
            outputs["judge_calls"],
            output_name="judge_calls",
            metadata={
                "calls": len(calls),
                "new_cost_usd": float(calls.loc[new, "cost_usd"].sum()) if len(calls) else 0.0,
                "cached": int(calls["cached"].sum()) if len(calls) else 0,
                "outcomes": _md_counts(
                    {str(k): int(v) for k, v in calls["outcome"].value_counts().items()} if len(calls) else {}
                ),
            },
        )
        yield judgements_check(summary, et.max_unparseable_share)

    return dg.Definitions(assets=[diagnostic_sample, error_judging])


def build_error_taxonomy_analysis_defs(config: ProjectConfig) -> dg.Definitions:
    """The error-taxonomy analysis (V2): ``error_taxonomy_estimates`` and ``error_taxonomy_results``."""

    @dg.multi_asset(
        group_name=GROUP,
        # Read from storage (every stored partition), like the analysis reads scores.
        deps=[
            dg.AssetDep("diagnostic_sample"),
            dg.AssetDep("error_judgements"),
            dg.AssetDep("order_bias_judgements"),
        ],
        outs={
            "error_taxonomy_estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every estimand of the error-taxonomy analysis, with article-cluster bootstrap "
                "intervals (withheld below study.min_articles).",
            ),
            "error_taxonomy_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="error_taxonomy_results.json: label frequencies, transitions, crosslingual_loss, "
                "judge agreement, delta contributions, order bias, self-preference (study_results key "
                "error_taxonomy).",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "error_taxonomy_estimated",
                asset="error_taxonomy_results",
                description="Warns when the study is skipped or its intervals are not identifiable.",
            )
        ],
    )
    def error_taxonomy_analysis(context: dg.AssetExecutionContext, study: StudyResource):  # type: ignore[no-untyped-def]
        """Label frequencies, transitions, crosslingual_loss, agreement, contributions (STUDY.md 7)."""
        cfg = study.load()
        result = run_error_taxonomy_analysis(
            cfg,
            read_all_partitions(study.data_dir, "diagnostic_sample"),
            read_all_partitions(study.data_dir, "error_judgements"),
            read_all_partitions(study.data_dir, "order_bias_judgements"),
        )
        doc = result.results
        context.log.info(
            f"error taxonomy: {doc['status']}; {doc['pairs']} pairs; {len(result.estimates)} estimands"
        )
        if doc["status"] != "ok":
            context.log.warning(f"error taxonomy {doc['status']}: {doc['reason']}")
        yield dg.Output(result.estimates, output_name="error_taxonomy_estimates")
        yield dg.Output(
            doc,
            output_name="error_taxonomy_results",
            metadata={"status": doc["status"], "pairs": doc["pairs"], "reason": doc["reason"] or ""},
        )
        yield dg.AssetCheckResult(
            asset_key="error_taxonomy_results",
            check_name="error_taxonomy_estimated",
            passed=doc["status"] == "ok",
            severity=dg.AssetCheckSeverity.WARN,
            description=doc["reason"],
            metadata={
                "status": doc["status"],
                "caveats": dg.MetadataValue.md("\n".join(f"- {c}" for c in doc["caveats"])),
            },
        )

    return dg.Definitions(assets=[error_taxonomy_analysis])


# --------------------------------------------------------------- V3: the annotation round trip


class AnnotationSampleConfig(dg.Config):
    regenerate: bool = False
    """Draw the sample again. Off by default: frozen once drawn, since annotations cite its tasks."""


def _data_path(study: StudyResource, relative: str) -> UPath:
    return UPath(study.data_dir).joinpath(*PurePosixPath(relative).parts)


def _previous_shortfalls(context: dg.AssetExecutionContext) -> list[str]:
    """The shortfalls recorded when the (now frozen) sample was drawn."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event is not None else None
    value = materialization.metadata.get("shortfalls") if materialization is not None else None
    return [str(s) for s in value.value] if value is not None and isinstance(value.value, list) else []


def build_annotation_defs(config: ProjectConfig) -> dg.Definitions:
    """V3: the annotation sample, keypoint checklists, exports for annotators, and the import."""

    @dg.asset(
        group_name=GROUP,
        deps=[
            dg.AssetDep("scores"),
            dg.AssetDep("predictions"),
            dg.AssetDep("items"),
            # issue 11: the paragraph-filling arm reads the granularity answers and their context.
            dg.AssetDep("task_predictions"),
            dg.AssetDep("granularity_tasks"),
            dg.AssetDep("long_paragraphs"),
        ],
        ins={"languages": dg.AssetIn()},
        kinds={"parquet"},
        owners=["team:clcg"],
        check_specs=[
            dg.AssetCheckSpec(
                "annotation_sample_filled",
                asset="annotation_sample",
                description="Warns when the data cannot fill the configured responses, pairs or bins.",
            )
        ],
    )
    def annotation_sample(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: AnnotationSampleConfig,
        study: StudyResource,
        languages: pd.DataFrame,
    ):
        """Tasks for annotators: stratified singles (weak responses oversampled), contrastive pairs,
        planted attention checks, three annotators each (frozen once drawn)."""
        cfg = study.load()
        hv = cfg.study.human_validation
        stored = UPath(study.path("annotation_sample", "data.parquet"))
        if stored.exists() and not config.regenerate:
            sample = read_frame(stored)
            shortfalls = _previous_shortfalls(context)
            provenance = "frozen: the stored sample is kept (set regenerate to draw it again)"
        else:
            drawn = build_annotation_sample(
                read_all_partitions(study.data_dir, "predictions"),
                read_all_partitions(study.data_dir, "scores"),
                read_all_partitions(study.data_dir, "items"),
                languages,
                hv,
                models=[m.id for m in cfg.models.evaluated],
                task_predictions=read_all_partitions(study.data_dir, "task_predictions"),
                granularity_tasks=read_all_partitions(study.data_dir, "granularity_tasks"),
                long_paragraphs=read_all_partitions(study.data_dir, "long_paragraphs"),
            )
            sample, shortfalls = drawn.sample, drawn.shortfalls
            provenance = f"drawn with seed {hv.seed}"
        counts = sample["kind"].value_counts().to_dict() if len(sample) else {}
        for line in shortfalls:
            context.log.warning(f"annotation_sample: {line}")
        n_annotators = len({a for anns in sample["annotators"] for a in anns}) if len(sample) else 0
        yield dg.Output(
            sample,
            metadata={
                "provenance": provenance,
                "tasks": dg.MetadataValue.json({k: int(v) for k, v in counts.items()}),
                "annotators": n_annotators,
                "shortfalls": dg.MetadataValue.json(shortfalls),
            },
        )
        yield dg.AssetCheckResult(
            asset_key="annotation_sample",
            check_name="annotation_sample_filled",
            passed=not shortfalls and len(sample) > 0,
            severity=dg.AssetCheckSeverity.WARN,
            description="; ".join(shortfalls) or (f"{len(sample)} tasks" if len(sample) else "empty sample"),
            metadata={"singles": int(counts.get("single", 0)), "pairs": int(counts.get("pair", 0))},
        )

    @dg.multi_asset(
        group_name=GROUP,
        ins={"annotation_sample": dg.AssetIn()},
        outs={
            "keypoints": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Frozen atomic-fact checklists of multi-fact gold answers (keypoint_writer).",
            ),
            "keypoint_calls": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="The keypoint writer's calls (calls shape).",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "keypoints_written",
                asset="keypoints",
                description="Warns when no writer is configured or some checklists could not be written.",
            )
        ],
    )
    def keypoint_checklists(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        config: JudgeRunConfig,
        study: StudyResource,
        annotation_sample: pd.DataFrame,
    ):
        """Atomic facts of each sampled multi-fact gold answer, written once before collection."""
        cfg = study.load()
        hv = cfg.study.human_validation
        stored = UPath(study.path("keypoints", "data.parquet"))
        existing = read_frame(stored) if stored.exists() else None
        if hv.keypoint_writer is None:
            status = (
                "skipped: human_validation.keypoint_writer is null "
                "(no checklist; keypoint recall not collected)"
            )
            kept = existing if existing is not None else pd.DataFrame(columns=KEYPOINT_COLUMNS)
            yield dg.Output(kept, output_name="keypoints", metadata={"status": status})
            yield dg.Output(pd.DataFrame(columns=list(CALL_COLUMNS)), output_name="keypoint_calls")
            yield dg.AssetCheckResult(
                asset_key="keypoints", check_name="keypoints_written", passed=False,
                severity=dg.AssetCheckSeverity.WARN, description=status,
            )  # fmt: skip
            return
        items = checklist_items(annotation_sample)
        keypoints, judgements, calls = write_keypoints(
            cfg.models.get(hv.keypoint_writer),
            items,
            cache_dir=study.cache_dir,
            study_budget_usd=cfg.study.budget_usd,
            existing=existing,
            mode=config.mode,
            budget=run_budget(context.run_id, config.budget_usd),
        )
        failed = judgements[judgements["status"] != "ok"] if len(judgements) else judgements
        statuses = judgements["status"].value_counts().to_dict() if len(judgements) else {}
        with_list = keypoints["item_id"].nunique() if len(keypoints) else 0
        description = (
            f"{with_list} of {len(items)} items have a checklist (the rest are single-fact); "
            f"{len(judgements)} asked now {statuses or ''}"
        )
        if len(failed):
            description = (
                f"{len(failed)} checklist(s) not written ({failed['error'].iloc[0]}); " + description
            )
            context.log.warning(f"keypoints: {description}")
        yield dg.Output(
            keypoints,
            output_name="keypoints",
            metadata={"status": description, "writer": hv.keypoint_writer, "items_with_checklist": with_list},
        )
        yield dg.Output(
            calls if len(calls) else pd.DataFrame(columns=list(CALL_COLUMNS)), output_name="keypoint_calls"
        )
        yield dg.AssetCheckResult(
            asset_key="keypoints",
            check_name="keypoints_written",
            passed=not len(failed),
            severity=dg.AssetCheckSeverity.WARN,
            description=description,
        )

    @dg.asset(
        group_name=GROUP,
        ins={"annotation_sample": dg.AssetIn(), "keypoints": dg.AssetIn()},
        kinds={"json", "csv"},
        owners=["team:clcg"],
    )
    def annotation_exports(
        context: dg.AssetExecutionContext,
        study: StudyResource,
        annotation_sample: pd.DataFrame,
        keypoints: pd.DataFrame,
    ) -> pd.DataFrame:
        """Files for annotators under <data>/annotations/export/: Label Studio tasks + configs, and a CSV.

        For the bundled demo source only, SIMULATED answers are generated into the inbox too."""
        cfg = study.load()
        folder = _data_path(study, EXPORT_DIR)
        files = export_files(
            annotation_sample, keypoints, load_taxonomy(cfg.study.error_taxonomy.taxonomy).collapsed_labels
        )
        rows = []
        for name, payload in files.items():
            write_bytes_atomic(folder / name, payload)
            rows.append({"file": name, "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
        simulated: list[str] = []
        inbox = _data_path(study, cfg.study.human_validation.inbox)
        demo = simulated_inbox_files(
            cfg.sources.primary.kind, annotation_sample, keypoints, seed=cfg.study.human_validation.seed
        )
        for name, payload in demo.items():
            if not (inbox / name).exists():  # never overwrite what is there (it may be imported)
                write_bytes_atomic(inbox / name, payload)
                simulated.append(name)
        if simulated:
            context.log.info(f"demo source: SIMULATED annotation files written to the inbox: {simulated}")
        context.add_output_metadata(
            {
                "folder": dg.MetadataValue.path(str(folder)),
                "simulated_written": dg.MetadataValue.json(simulated),
            }
        )
        return pd.DataFrame(rows)

    @dg.multi_asset(
        group_name=GROUP,
        deps=[dg.AssetDep("annotation_exports")],
        ins={"annotation_sample": dg.AssetIn(), "keypoints": dg.AssetIn()},
        outs={
            "human_annotations": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every accepted rating from the annotation inbox (simulated: the demo's).",
            ),
            "annotation_imports": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="One row per annotation file seen: sha256, records, status, error if refused.",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "annotations_imported",
                asset="human_annotations",
                description="Warns while the inbox is empty (awaiting annotations) or a file was refused.",
            )
        ],
    )
    def annotation_import(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        study: StudyResource,
        annotation_sample: pd.DataFrame,
        keypoints: pd.DataFrame,
    ):
        """Import Label Studio exports and filled CSVs from the inbox; accepted files are archived."""
        cfg = study.load()
        hv = cfg.study.human_validation
        inbox_dir = _data_path(study, hv.inbox)
        archive = _data_path(study, ARCHIVE_DIR)
        log_path = UPath(study.path("annotation_imports", "data.parquet"))
        previous = read_frame(log_path) if log_path.exists() else pd.DataFrame()

        def archived(sha: str) -> bytes | None:
            hits = list(archive.glob(f"{sha}.*")) if archive.exists() else []
            return hits[0].read_bytes() if hits else None

        result = import_annotations(
            read_inbox(inbox_dir),
            previous,
            archived,
            annotation_sample,
            keypoints,
            load_taxonomy(cfg.study.error_taxonomy.taxonomy).collapsed_labels,
            imported_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        )
        # Accepted files are archived (content-addressed) before the tables that cite them.
        for file in result.to_archive:
            write_bytes_atomic(archive / f"{file.sha256}{PurePosixPath(file.name).suffix}", file.data)
        imports, annotations = result.imports, result.annotations
        refused = imports[imports["status"] != "accepted"]
        for row in refused.to_dict("records"):
            context.log.warning(f"annotation import: {row['status']}: {row['error']}")
        passed, description = import_status(imports, annotations, str(inbox_dir))
        simulated = bool(annotations["simulated"].any()) if len(annotations) else False
        checked_outputs(None, {"human_annotations": annotations, "annotation_imports": imports})
        yield dg.Output(
            annotations,
            output_name="human_annotations",
            metadata={
                "status": description,
                "simulated": simulated,
                "annotators": int(annotations["annotator_id"].nunique()) if len(annotations) else 0,
            },
        )
        yield dg.Output(imports, output_name="annotation_imports")
        yield dg.AssetCheckResult(
            asset_key="human_annotations",
            check_name="annotations_imported",
            passed=passed,
            severity=dg.AssetCheckSeverity.WARN,
            description=description,
            metadata={"files": len(imports), "refused": len(refused), "ratings": len(annotations)},
        )

    return dg.Definitions(
        assets=[annotation_sample, keypoint_checklists, annotation_exports, annotation_import],
        sensors=[build_annotation_inbox_sensor(config)],
    )


# --------------------------------------------------------------------------- V4: human-validation analysis


def _stored(study: StudyResource, table: str) -> pd.DataFrame | None:
    """Every stored partition of ``table``, or None when nothing is stored (optional inputs)."""
    frame = read_all_partitions(study.data_dir, table)
    return frame if len(frame) else None


def _near_sample(frame: pd.DataFrame | None, sample: pd.DataFrame) -> pd.DataFrame | None:
    """Only the rows of the sampled responses (a study's scores are ~800k rows; the sample ~700)."""
    if frame is None or sample.empty:
        return frame
    keys = ["model", "language", "doc_id", "item_id"]
    wanted = pd.MultiIndex.from_frame(sample[keys].dropna().astype(str))
    return frame[pd.MultiIndex.from_frame(frame[keys].astype(str)).isin(wanted)].reset_index(drop=True)


def human_validation_check(doc: dict[str, Any]) -> dg.AssetCheckResult:
    """WARN while awaiting annotations, when skipped or empty, and when the set is simulated."""
    status = doc["status"]
    simulated = bool(doc.get("simulated"))
    if status != "ok":
        description = f"{status}: {doc['reason']}"
    else:
        description = f"{doc['ratings']} ratings by {doc['annotators']} annotators on {doc['items']} items"
        if simulated:
            description += " (SIMULATED demo annotations: no human rated these responses)"
    return dg.AssetCheckResult(
        asset_key="human_validation_results",
        check_name="human_validation_analysed",
        passed=status == "ok" and not simulated,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "status": status,
            "simulated": simulated,
            "caveats": dg.MetadataValue.md("\n".join(f"- {c}" for c in doc.get("caveats", []))),
        },
    )


def build_human_validation_defs(config: ProjectConfig) -> dg.Definitions:
    """V4: the QC funnel, agreement, preference, ceiling rule and the joins, from the imported ratings."""

    @dg.multi_asset(
        group_name=GROUP,
        ins={"human_annotations": dg.AssetIn(), "annotation_sample": dg.AssetIn()},
        # Read from storage (every stored partition / whatever the judges and the analysis wrote).
        deps=[
            dg.AssetDep("predictions"),
            dg.AssetDep("scores"),
            dg.AssetDep("diagnostic_sample"),
            dg.AssetDep("error_judgements"),
        ],
        outs={
            "human_qc": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="The QC funnel: annotators and ratings excluded and remaining at each step.",
            ),
            "human_validation_joins": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Every imported rating (with its QC verdict) beside its prediction, scores and "
                "each judge's label, by model, language, doc_id, item_id, rep (one row per rating x judge).",
            ),
            "human_validation_estimates": dg.AssetOut(
                kinds={"parquet"},
                owners=["team:clcg"],
                description="Alpha per dimension, Spearman, class adequacy, preference, human-judge kappa.",
            ),
            "human_validation_results": dg.AssetOut(
                kinds={"json"},
                owners=["team:clcg"],
                description="human_validation_results.json (study_results key human_validation).",
            ),
        },
        check_specs=[
            dg.AssetCheckSpec(
                "human_validation_analysed",
                asset="human_validation_results",
                description="Warns while awaiting annotations, when empty, and when ratings are simulated.",
            )
        ],
    )
    def human_validation(  # type: ignore[no-untyped-def]
        context: dg.AssetExecutionContext,
        study: StudyResource,
        human_annotations: pd.DataFrame,
        annotation_sample: pd.DataFrame,
    ):
        """QC funnel, Krippendorff's alpha, Spearman, class adequacy, paired preference, ceiling rule and
        human-vs-judge agreement (STUDY.md section 7)."""
        cfg = study.load()
        # Paragraph-filling ratings (kind fill, issue 11) are the granularity analysis's
        # (granularity_results.human_judge_correlation); this study's QC and statistics are
        # defined on the single/pair/attention arms only.
        if len(human_annotations) and "kind" in human_annotations.columns:
            human_annotations = human_annotations[human_annotations["kind"] != "fill"]
        if len(annotation_sample) and "kind" in annotation_sample.columns:
            annotation_sample = annotation_sample[annotation_sample["kind"] != "fill"]
        result = run_human_validation(
            cfg,
            human_annotations,
            annotation_sample,
            predictions=_near_sample(_stored(study, "predictions"), annotation_sample),
            scores=_near_sample(_stored(study, "scores"), annotation_sample),
            judgements=_stored(study, "error_judgements"),
            diagnostic=_stored(study, "diagnostic_sample"),
            # No class CLCG here: study_results fills it in from the same run's estimates, which
            # are computed after this asset (it feeds study_results).
            estimates=None,
        )
        doc = result.results
        if doc["status"] != "ok":
            context.log.warning(f"human validation {doc['status']}: {doc['reason']}")
        elif doc["simulated"]:
            context.log.warning("human validation ran on SIMULATED annotations (the demo's shipped set)")
        context.log.info(
            f"human validation: {doc['status']}; {doc.get('ratings', 0)} ratings analysed; "
            f"{len(result.estimates)} estimands"
        )
        tables = checked_outputs(
            None,
            {
                "human_qc": result.qc if len(result.qc) else empty_frame("human_qc"),
                "human_validation_joins": result.joins,
                "human_validation_estimates": result.estimates,
            },
        )
        for name, frame in tables.items():
            yield dg.Output(frame, output_name=name)
        yield dg.Output(
            doc,
            output_name="human_validation_results",
            metadata={
                "status": doc["status"],
                "simulated": bool(doc["simulated"]),
                "reason": doc["reason"] or "",
            },
        )
        yield human_validation_check(doc)

    return dg.Definitions(assets=[human_validation])
