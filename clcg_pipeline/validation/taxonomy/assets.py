"""Dagster wrappers of the error-taxonomy study: the diagnostic sample, the judges, the analysis."""

# No ``from __future__ import annotations`` here: Dagster reads the context and resource
# annotations of asset functions at definition time and rejects them as strings.
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus.assets import checked_outputs
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import empty_frame, read_all_partitions, validate_document
from clcg_pipeline.validation._dagster import GROUP, JudgeRunConfig, md_counts
from clcg_pipeline.validation.taxonomy._diagnostic import candidate_pairs
from clcg_pipeline.validation.taxonomy._diagnostic import diagnostic_sample as draw_diagnostic_sample
from clcg_pipeline.validation.taxonomy._from_tables import TAXONOMY_TABLES, error_taxonomy_from_tables
from clcg_pipeline.validation.taxonomy._judging import JudgingResult, judge_sample


def build_taxonomy_defs(config: ProjectConfig) -> dg.Definitions:
    """Every asset of the error-taxonomy study."""
    return dg.Definitions.merge(build_error_judging_defs(config), build_error_taxonomy_analysis_defs(config))


DISABLED_JUDGES = "skipped: study.error_taxonomy.judges is empty (the error-taxonomy study is off)"


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
        metadata={"status": summary.get("status", "ok"), "statuses": md_counts(statuses)},
    )


def build_error_judging_defs(config: ProjectConfig) -> dg.Definitions:
    """V1: the diagnostic sample and every judge's labels of both sides of each pair."""
    return dg.Definitions(assets=[_diagnostic_sample_asset(), _error_judging_asset()])


def _diagnostic_sample_asset() -> dg.AssetsDefinition:
    """The ``diagnostic_sample`` asset: English/target pairs for the judges."""

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
            summary: dict[str, Any] = {"status": "skipped", "reason": DISABLED_JUDGES, "pairs": 0}
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

    return diagnostic_sample


def _error_judging_asset() -> dg.AssetsDefinition:
    """The judges' assets: ``error_judgements``, ``order_bias_judgements``, ``judge_calls``."""

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
            options=config.call_options(context, study.cache_dir, cfg),
            progress=progress,
        )
        yield from _judging_outputs(result, et.max_unparseable_share)

    return error_judging


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
        """Label frequencies, transitions, crosslingual_loss, agreement, contributions."""
        # The same function re-derives the section from a data folder (results.derive_study_results).
        result = error_taxonomy_from_tables(
            study.load(), {table: read_all_partitions(study.data_dir, table) for table in TAXONOMY_TABLES}
        )
        doc = result.results
        # Refused before it is written when it does not fit its shape (storage), naming the field.
        validate_document(doc, "error_taxonomy", source=study.path("error_taxonomy_results.json"))
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


def _judging_outputs(result: JudgingResult, max_unparseable_share: float) -> Iterator[Any]:
    """The three judged tables with their metadata, then the judgements check."""
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
            "statuses": md_counts(summary["statuses"]),
            "template_hashes": dg.MetadataValue.json(summary["template_hashes"]),
        },
    )
    yield dg.Output(
        outputs["order_bias_judgements"],
        output_name="order_bias_judgements",
        metadata={
            "pairs": summary["order_bias_pairs"],
            "statuses": md_counts(summary["order_bias_statuses"]),
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
            "outcomes": md_counts(
                {str(k): int(v) for k, v in calls["outcome"].value_counts().items()} if len(calls) else {}
            ),
        },
    )
    yield judgements_check(summary, max_unparseable_share)
