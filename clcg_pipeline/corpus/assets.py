"""Dagster wrappers of the corpus stage: languages, articles, paragraphs, audit, sample, fertility."""

import dagster as dg
import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.corpus import audit_corpus, load_source_cached, sample_articles, tokenizer_fertility
from clcg_pipeline.partitions import language_partitions
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import read_all_partitions

GROUP = "corpus"


def languages_frame(config: ProjectConfig) -> pd.DataFrame:
    rows = [
        {**lang.model_dump(exclude={"flores_code"}), "non_latin": lang.non_latin}
        for lang in config.languages.languages
    ]
    return pd.DataFrame(rows)


def alignment_coverage(audit: pd.DataFrame) -> dg.AssetCheckResult:
    """Warn (not fail) when a language version is below the completeness threshold."""
    incomplete = audit[~audit["complete"].astype(bool)] if len(audit) else audit
    return dg.AssetCheckResult(
        asset_key="corpus_audit",
        check_name="alignment_coverage",
        passed=len(incomplete) == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "versions": len(audit),
            "incomplete": len(incomplete),
            "incomplete_versions": dg.MetadataValue.md(
                incomplete.to_markdown(index=False) if len(incomplete) else "none"
            ),
        },
    )


def build_corpus_defs(config: ProjectConfig) -> dg.Definitions:
    by_language = language_partitions(config.languages)
    reference = config.languages.reference

    @dg.asset(group_name=GROUP, automation_condition=dg.AutomationCondition.eager())
    def languages(study: StudyResource) -> pd.DataFrame:
        """The language panel of ``languages.yaml`` (roles, scripts, Joshi classes)."""
        return languages_frame(study.load())

    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=by_language,
        outs={
            "articles": dg.AssetOut(description="One row per article in this language."),
            "paragraphs": dg.AssetOut(description="Body paragraphs, aligned across languages by pid."),
            "corpus_audit": dg.AssetOut(
                description="Completeness of each article's version against English."
            ),
            "item_translations": dg.AssetOut(
                description="Questions in the passage's own language where the source has them (Belebele)."
            ),
        },
        # Checked inside the asset: a standalone check on a partitioned asset would load every partition.
        check_specs=[
            dg.AssetCheckSpec(
                "alignment_coverage",
                asset="corpus_audit",
                description="Language versions below the completeness threshold (excluded from estimates).",
            )
        ],
    )
    def corpus(context: dg.AssetExecutionContext, study: StudyResource):  # type: ignore[no-untyped-def]
        """Load the primary source and keep this partition's language."""
        cfg = study.load()
        language = context.partition_key
        tables = load_source_cached(cfg.sources.primary, cfg.languages)
        audit = audit_corpus(
            tables.articles,
            tables.paragraphs,
            reference=cfg.languages.reference,
            threshold=cfg.study.completeness_threshold,
        )
        articles = tables.articles[tables.articles["language"] == language].reset_index(drop=True)
        paragraphs = tables.paragraphs[tables.paragraphs["language"] == language].reset_index(drop=True)
        audit = audit[audit["language"] == language].reset_index(drop=True)
        translations = tables.item_translations
        translations = translations[translations["language"] == language].reset_index(drop=True)
        context.log.info(f"{language}: {len(articles)} articles, {len(paragraphs)} paragraphs")
        yield dg.Output(articles, output_name="articles")
        yield dg.Output(paragraphs, output_name="paragraphs")
        yield dg.Output(audit, output_name="corpus_audit")
        yield dg.Output(translations, output_name="item_translations")
        yield alignment_coverage(audit)

    @dg.asset(
        group_name=GROUP,
        ins={"articles": dg.AssetIn(partition_mapping=dg.SpecificPartitionsPartitionMapping([reference]))},
    )
    def study_sample(
        context: dg.AssetExecutionContext, study: StudyResource, articles: pd.DataFrame
    ) -> pd.DataFrame:
        """The seeded article sample and its stability subsample (with repetitions per article)."""
        cfg = study.load()
        sample = sample_articles(
            articles, cfg.study.sampling, reference=cfg.languages.reference, repetitions=cfg.study.repetitions
        )
        context.add_output_metadata(
            {"articles": len(sample), "stability_articles": int(sample["in_stability"].sum())}
        )
        return sample

    @dg.asset(group_name=GROUP, deps=["paragraphs"])
    def tokenizer_fertility_by_language(study: StudyResource) -> pd.DataFrame:
        """Tokens in each language per token in English, over parallel paragraphs."""
        cfg = study.load()
        # Whatever languages are materialized (a run may cover part of the panel).
        paragraphs = read_all_partitions(study.data_dir, "paragraphs")
        fertility = cfg.study.fertility
        return tokenizer_fertility(
            paragraphs,
            reference=cfg.languages.reference,
            tokenizer=fertility.tokenizer,
            sample_size=fertility.sample_size,
            seed=fertility.seed,
        )

    return dg.Definitions(assets=[languages, corpus, study_sample, tokenizer_fertility_by_language])
