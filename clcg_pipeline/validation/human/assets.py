"""Dagster wrappers of the human validation: the annotation round trip and the analysis."""

# No ``from __future__ import annotations`` here: Dagster reads the context and resource
# annotations of asset functions at definition time and rejects them as strings.
import datetime as dt
import functools
import hashlib
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

import dagster as dg
import pandas as pd
from upath import UPath

from clcg_pipeline.calls import CALL_COLUMNS
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import (
    empty_frame,
    partition_dir,
    read_all_partitions,
    read_frame,
    validate_document,
    write_bytes_atomic,
    write_frame,
)
from clcg_pipeline.validation._dagster import GROUP, JudgeRunConfig
from clcg_pipeline.validation.human._analysis import HumanValidationResult
from clcg_pipeline.validation.human._annotation_sample import build_annotation_sample
from clcg_pipeline.validation.human._annotators import AnnotatorMapError
from clcg_pipeline.validation.human._codebook import inbox_readme
from clcg_pipeline.validation.human._exchange_format import (
    ANNOTATOR_MAP_FILE,
    ARCHIVE_DIR,
    EXPORT_DIR,
    REFUSED_STATUSES,
)
from clcg_pipeline.validation.human._export import export_files, missing_passages_warning, passages_of
from clcg_pipeline.validation.human._from_tables import HUMAN_VALIDATION_TABLES, human_validation_from_tables
from clcg_pipeline.validation.human._import import (
    import_annotations,
    import_line,
    import_status,
    import_table,
)
from clcg_pipeline.validation.human._keypoints import KEYPOINT_COLUMNS, checklist_items, write_keypoints
from clcg_pipeline.validation.human.demo_annotations import simulated_inbox_files
from clcg_pipeline.validation.human.sensors import (
    INBOX_METADATA,
    archived_copy,
    build_annotation_inbox_sensor,
    create_inbox,
    data_path,
    inbox_cursor,
    read_annotator_map_file,
    read_inbox,
)
from clcg_pipeline.validation.taxonomy import load_taxonomy

#: Written by the import beside its outputs: every revision of every rating (issue 19).
REVISIONS_TABLE = "human_annotation_revisions"


def build_human_defs(config: ProjectConfig) -> dg.Definitions:
    """Every asset (and the inbox sensor) of the human validation."""
    return dg.Definitions.merge(build_annotation_defs(config), build_human_validation_defs(config))


class AnnotationSampleConfig(dg.Config):
    regenerate: bool = False
    """Draw the sample again. Off by default: frozen once drawn, since annotations cite its tasks."""


def _previous_shortfalls(context: dg.AssetExecutionContext) -> list[str]:
    """The shortfalls recorded when the (now frozen) sample was drawn."""
    event = context.instance.get_latest_materialization_event(context.asset_key)
    materialization = event.asset_materialization if event is not None else None
    value = materialization.metadata.get("shortfalls") if materialization is not None else None
    return [str(s) for s in value.value] if value is not None and isinstance(value.value, list) else []


def build_annotation_defs(config: ProjectConfig) -> dg.Definitions:
    """V3: the annotation sample, keypoint checklists, exports for annotators, and the import."""
    return dg.Definitions(
        assets=[
            _annotation_sample_asset(),
            _keypoint_checklists_asset(),
            _annotation_exports_asset(),
            _annotation_import_asset(),
        ],
        sensors=[build_annotation_inbox_sensor(config)],
    )


def _annotation_sample_asset() -> dg.AssetsDefinition:
    """The ``annotation_sample`` asset: tasks for annotators, frozen once drawn."""

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

    return annotation_sample


def _keypoint_checklists_asset() -> dg.AssetsDefinition:
    """The ``keypoints`` and ``keypoint_calls`` assets: checklists written once, before collection."""

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
            yield from _no_keypoint_writer(existing)
            return
        items = checklist_items(annotation_sample)
        keypoints, judgements, calls = write_keypoints(
            cfg.models.get(hv.keypoint_writer),
            items,
            config.call_options(context, study.cache_dir, cfg),
            existing=existing,
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

    return keypoint_checklists


def _annotation_exports_asset() -> dg.AssetsDefinition:
    """The ``annotation_exports`` asset: the files annotators' tools read."""

    @dg.asset(
        group_name=GROUP,
        ins={"annotation_sample": dg.AssetIn(), "keypoints": dg.AssetIn()},
        deps=[dg.AssetDep("paragraphs")],  # the passages shown (reference language)
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
        folder = data_path(study.data_dir, EXPORT_DIR)
        passages = _reference_passages(study, cfg.languages.reference)
        if warning := missing_passages_warning(annotation_sample, passages, cfg.languages.reference):
            context.log.warning(warning)
        files = export_files(
            annotation_sample,
            keypoints,
            load_taxonomy(cfg.study.error_taxonomy.taxonomy).collapsed_labels,
            passages,
        )
        rows = []
        for name, payload in files.items():
            write_bytes_atomic(folder / name, payload)
            rows.append({"file": name, "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
        simulated: list[str] = []
        inbox = data_path(study.data_dir, cfg.study.human_validation.inbox)
        create_inbox(inbox, inbox_readme(str(folder)))
        demo = simulated_inbox_files(
            cfg.sources.primary.kind,
            annotation_sample,
            keypoints,
            seed=cfg.study.human_validation.seed,
            present=lambda name: (inbox / name).exists(),
        )
        for name, payload in demo.items():
            if not (inbox / name).exists():  # never overwrite what is there (it may be imported)
                write_bytes_atomic(inbox / name, payload)
                simulated.append(name)
        if simulated:
            context.log.info(f"demo source: SIMULATED annotation files written to the inbox: {simulated}")
        metadata = {"folder": dg.MetadataValue.path(str(folder)), "inbox": dg.MetadataValue.path(str(inbox))}
        context.add_output_metadata({**metadata, "simulated_written": dg.MetadataValue.json(simulated)})
        return pd.DataFrame(rows)

    return annotation_exports


def _reference_passages(study: StudyResource, reference: str) -> dict[str, list[tuple[str, str]]]:
    """doc_id -> paragraphs of the reference language (the one the items were written from)."""
    path = UPath(partition_dir(study.data_dir, "paragraphs", {"language": reference}) / "data.parquet")
    return passages_of(read_frame(path)) if path.exists() else {}


def _annotation_import_asset() -> dg.AssetsDefinition:
    """The ``human_annotations`` and ``annotation_imports`` assets: the inbox imported."""

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
                description="One row per annotation file seen: sha256, format, its ratings imported / "
                "skipped (already imported) / revised / refused, status, error if refused.",
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
        inbox_dir = data_path(study.data_dir, hv.inbox)
        archive = data_path(study.data_dir, ARCHIVE_DIR)
        log_path = UPath(study.path("annotation_imports", "data.parquet"))
        previous = read_frame(log_path) if log_path.exists() else pd.DataFrame()

        inbox = read_inbox(inbox_dir)
        annotator_map = read_annotator_map_file(study.data_dir)
        try:
            result = import_annotations(
                inbox,
                previous,
                functools.partial(archived_copy, archive),
                annotation_sample,
                keypoints,
                load_taxonomy(cfg.study.error_taxonomy.taxonomy).collapsed_labels,
                imported_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                annotator_map=annotator_map,
            )
        except AnnotatorMapError as exc:
            # Before any file is read: nothing is imported, archived or stored.
            raise dg.Failure(
                description=f"{exc}; fix {ANNOTATOR_MAP_FILE} under the data folder (nothing was imported)",
                allow_retries=False,
            ) from exc
        imports, annotations = result.imports, result.annotations
        checked_outputs(
            None,
            {
                "human_annotations": annotations,
                "annotation_imports": imports,
                REVISIONS_TABLE: result.revisions,
            },
        )
        # Accepted files are archived (content-addressed) before the tables that cite them.
        for file in result.to_archive:
            write_bytes_atomic(archive / f"{file.sha256}{PurePosixPath(file.name).suffix}", file.data)
        write_frame(
            UPath(study.path(REVISIONS_TABLE, "data.parquet")), result.revisions, contract=REVISIONS_TABLE
        )
        for row in result.now.to_dict("records"):  # this run's files: refused ones with their reason
            log = context.log.warning if row["status"] in REFUSED_STATUSES else context.log.info
            log(f"annotation import: {import_line(row)}")
        passed, description = import_status(imports, annotations, str(inbox_dir), result.revisions)
        refused = result.rejected
        simulated = bool(annotations["simulated"].any()) if len(annotations) else False
        yield dg.Output(
            annotations,
            output_name="human_annotations",
            metadata={
                "status": description,
                "simulated": simulated,
                "annotators": int(annotations["annotator_id"].nunique()) if len(annotations) else 0,
            },
        )
        # What was in the inbox: `clcg run` re-runs the analysis only when that has changed.
        yield dg.Output(
            imports,
            output_name="annotation_imports",
            metadata={
                INBOX_METADATA: inbox_cursor(inbox, annotator_map),
                # What each file of this run did, refusals with their reason.
                "this_run": dg.MetadataValue.md(import_table(result.now)),
            },
        )
        yield dg.AssetCheckResult(
            asset_key="human_annotations",
            check_name="annotations_imported",
            passed=passed,
            severity=dg.AssetCheckSeverity.WARN,
            description=description,
            metadata={
                "files": len(imports),
                "refused": len(refused),
                "ratings": len(annotations),
                "revisions": len(result.revisions),
                # issue 36: ratings whose current revision is excluded (named in the description)
                "excluded": len(result.excluded),
            },
        )

    return annotation_import


def human_validation_check(doc: Mapping[str, Any]) -> dg.AssetCheckResult:
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
            dg.AssetDep("task_judgements"),  # issue 36: the granularity judges' error overlap
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
        """QC funnel, alpha, Spearman, class adequacy, preference, ceiling rule and the judges' checks."""
        # The same function re-derives the section from a data folder (results.derive_study_results).
        result = human_validation_from_tables(
            study.load(),
            human_annotations,
            annotation_sample,
            {table: read_all_partitions(study.data_dir, table) for table in HUMAN_VALIDATION_TABLES},
        )
        # Refused before it is written when it does not fit its shape (storage), naming the field.
        source = study.path("human_validation_results.json")
        validate_document(result.results, "human_validation", source=source)
        yield from _human_validation_outputs(context, result)

    return dg.Definitions(assets=[human_validation])


def _human_validation_outputs(
    context: dg.AssetExecutionContext, result: HumanValidationResult
) -> Iterator[Any]:
    """The three tables and the results document (status logged), then the check."""
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


def _no_keypoint_writer(existing: pd.DataFrame | None) -> Iterator[Any]:
    """The keypoint outputs when no writer is configured: what is stored stays, nothing is asked."""
    status = "skipped: human_validation.keypoint_writer is null (no checklist; keypoint recall not collected)"
    kept = existing if existing is not None else pd.DataFrame(columns=KEYPOINT_COLUMNS)
    yield dg.Output(kept, output_name="keypoints", metadata={"status": status})
    yield dg.Output(pd.DataFrame(columns=list(CALL_COLUMNS)), output_name="keypoint_calls")
    yield dg.AssetCheckResult(
        asset_key="keypoints",
        check_name="keypoints_written",
        passed=False,
        severity=dg.AssetCheckSeverity.WARN,
        description=status,
    )
