"""Dagster wrappers of the corpus stage: languages, articles, paragraphs, audit, sample, fertility."""

from collections.abc import Iterator, Sequence
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa

from clcg_pipeline.config import ProjectConfig, SourceSpec
from clcg_pipeline.corpus import (
    CorpusError,
    CorpusTables,
    audit_corpus,
    load_source_cached,
    sample_articles,
    study_coverage,
    tokenizer_fertility,
)
from clcg_pipeline.partitions import each_partition, language_partitions, single_run_policy
from clcg_pipeline.resources import StudyResource
from clcg_pipeline.storage import TABLES, ContractError, conform, read_all_partitions

GROUP = "corpus"
# How many undecodable-field locations a partition's metadata lists (the log has them all).
_SHOWN_LOCATIONS = 20


def load_corpus(source: SourceSpec, config: ProjectConfig) -> CorpusTables:
    """The primary source, or a ``dg.Failure`` that names the bad language, file, line and field.

    The source is parsed once for every language, so whichever partition runs first meets a
    bad file of any language: the message says which language's file it is, and that nothing
    was stored. ``dg.Failure`` shows it in the UI as a sentence with metadata, not a traceback;
    the CorpusError stays its cause, which is what ``clcg run`` prints (one ``error:`` line).
    """
    try:
        return load_source_cached(source, config.languages)
    except CorpusError as exc:
        bad = f" (language {exc.language!r})" if exc.language else ""
        raise dg.Failure(
            description=f"corpus source {source.name!r} ({source.kind}) could not be read{bad}, so "
            f"nothing was stored for any language: {exc}",
            metadata={
                "source": source.name,
                "language": exc.language or "",
                "file": exc.file or "",
            },
            allow_retries=False,
        ) from exc


def checked_outputs(language: str | None, outputs: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``outputs`` once every one of them converts to Arrow as the IO manager will store it.

    The multi-asset's outputs are written one by one as they are yielded; checking all of them
    first means a table that cannot be stored fails the step before any table of the partition
    is overwritten, so a failed load leaves the stored partition as it was.
    """
    for name, frame in outputs.items():
        try:
            if name in TABLES:
                conform(name, frame)
            else:
                pa.Table.from_pandas(frame, preserve_index=False)
        except (ContractError, pa.ArrowException, TypeError, ValueError, UnicodeError) as exc:
            of = f" of language {language!r}" if language else ""
            message = (
                f"table {name!r}{of} cannot be stored ({exc}); none of {sorted(outputs)}{of} was written"
            )
            raise dg.Failure(
                description=message, metadata={"table": name, "language": language or ""}, allow_retries=False
            ) from CorpusError(message, language=language)
    return outputs


def languages_frame(config: ProjectConfig) -> pd.DataFrame:
    rows = [
        {**lang.model_dump(exclude={"flores_code"}), "non_latin": lang.non_latin}
        for lang in config.languages.languages
    ]
    return pd.DataFrame(rows)


def no_articles(language: str | None) -> str:
    return f"{language or 'this language'}: the primary source has no articles in this language"


def alignment_coverage(audit: pd.DataFrame, language: str | None = None) -> dg.AssetCheckResult:
    """Warn (not fail) when a language version is below the completeness threshold.

    A language with no version at all warns too, naming it: an empty partition is not green.
    """
    incomplete = audit[~audit["complete"].astype(bool)] if len(audit) else audit
    if len(audit) == 0:
        description = no_articles(language)
    elif len(incomplete):
        description = (
            f"{language}: {len(incomplete)} of {len(audit)} versions below the completeness threshold"
        )
    else:
        description = None
    return dg.AssetCheckResult(
        asset_key="corpus_audit",
        check_name="alignment_coverage",
        passed=len(audit) > 0 and len(incomplete) == 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "versions": len(audit),
            "incomplete": len(incomplete),
            "incomplete_versions": dg.MetadataValue.md(
                incomplete.to_markdown(index=False) if len(incomplete) else "none"
            ),
        },
    )


def language_has_paragraphs(paragraphs: pd.DataFrame, language: str | None = None) -> dg.AssetCheckResult:
    """Warn when the partition's language has no paragraph: the source does not cover it."""
    return dg.AssetCheckResult(
        asset_key="paragraphs",
        check_name="language_has_paragraphs",
        passed=len(paragraphs) > 0,
        severity=dg.AssetCheckSeverity.WARN,
        description=None if len(paragraphs) else no_articles(language),
        metadata={"paragraphs": len(paragraphs), "language": language or ""},
    )


def _languages_asset() -> dg.AssetsDefinition:
    @dg.asset(
        group_name=GROUP,
        kinds={"parquet"},
        owners=["team:clcg"],
    )
    def languages(study: StudyResource) -> pd.DataFrame:
        """The language panel of languages.yaml (roles, scripts, Joshi classes)."""
        return languages_frame(study.load())

    return languages


def _corpus_outs() -> dict[str, dg.AssetOut]:
    return {
        "articles": dg.AssetOut(
            description="One row per article in this language.", kinds={"parquet"}, owners=["team:clcg"]
        ),
        "paragraphs": dg.AssetOut(
            description="Body paragraphs, aligned across languages by pid.",
            kinds={"parquet"},
            owners=["team:clcg"],
        ),
        "corpus_audit": dg.AssetOut(
            kinds={"parquet"},
            owners=["team:clcg"],
            description="Completeness of each article's version against English.",
        ),
        "item_translations": dg.AssetOut(
            kinds={"parquet"},
            owners=["team:clcg"],
            description="Questions in the passage's own language where the source has them (Belebele).",
        ),
    }


def _corpus_check_specs(by_language: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    # Checked inside the asset: a standalone check on a partitioned asset would load every partition.
    return [
        dg.AssetCheckSpec(
            "alignment_coverage",
            asset="corpus_audit",
            description="Language versions below the completeness threshold (excluded from estimates).",
            # Results per language: a later pass on one language must not hide a failure in another.
            partitions_def=by_language,
        ),
        dg.AssetCheckSpec(
            "language_has_paragraphs",
            asset="paragraphs",
            description="Warns when the primary source has no article in this language.",
            partitions_def=by_language,
        ),
    ]


def _language_tables(
    tables: CorpusTables, cfg: ProjectConfig, languages: Sequence[str]
) -> dict[str, dict[str, pd.DataFrame]]:
    """The corpus multi-asset's outputs for each of ``languages`` (one audit over every language)."""
    audit = audit_corpus(
        tables.articles,
        tables.paragraphs,
        reference=cfg.languages.reference,
        threshold=cfg.study.completeness_threshold,
    )
    by_table = {
        "articles": tables.articles,
        "paragraphs": tables.paragraphs,
        "corpus_audit": audit,
        "item_translations": tables.item_translations,
    }
    return {
        language: {
            name: frame[frame["language"] == language].reset_index(drop=True)
            for name, frame in by_table.items()
        }
        for language in languages
    }


def _warn_invalid_utf8(log: dg.DagsterLogManager, language: str, invalid: list[str]) -> None:
    if not invalid:
        return
    more = f" (and {len(invalid) - _SHOWN_LOCATIONS} more)" if len(invalid) > _SHOWN_LOCATIONS else ""
    log.warning(
        f"{language}: {len(invalid)} field(s) were not valid UTF-8 and were stored with U+FFFD "
        "(paragraphs so affected count against the version in corpus_audit): "
        + "; ".join(invalid[:_SHOWN_LOCATIONS])
        + more
    )


def _utf8_metadata(invalid: list[str]) -> dict[str, Any]:
    return {
        "invalid_utf8_fields": len(invalid),
        "invalid_utf8_locations": dg.MetadataValue.md(
            "\n".join(f"- `{loc}`" for loc in invalid[:_SHOWN_LOCATIONS])
            + (
                f"\n- ... and {len(invalid) - _SHOWN_LOCATIONS} more"
                if len(invalid) > _SHOWN_LOCATIONS
                else ""
            )
            if invalid
            else "none"
        ),
    }


def _refuse_unpartitioned(tables: CorpusTables, partitions: Sequence[str], source: SourceSpec) -> None:
    """Refuse records of a panel language that got no partition (``study_coverage`` reads names).

    Coverage trusts file names only when they are language names; a file named for one
    language holding another's records would otherwise drop those records without a word.
    """
    found = sorted(set(tables.articles["language"]) - set(partitions)) if len(tables.articles) else []
    if found:
        raise dg.Failure(
            description=f"source {source.name!r} has records in {', '.join(found)} but no file named "
            "for those languages, so they have no partition: give each language its own file, named "
            "by its code (articles/<iso>.jsonl, or the FLORES code)"
        )


def _language_events(
    log: dg.DagsterLogManager,
    tables: CorpusTables,
    all_tables: dict[str, dict[str, pd.DataFrame]],
    language: str,
) -> Iterator[dg.Output | dg.AssetCheckResult]:
    """What the partition of ``language`` yields: its four tables, then its two checks."""
    outputs = checked_outputs(language, all_tables[language])
    log.info(f"{language}: {len(outputs['articles'])} articles, {len(outputs['paragraphs'])} paragraphs")
    invalid = tables.invalid_utf8_for(language)
    _warn_invalid_utf8(log, language, invalid)
    utf8_metadata = _utf8_metadata(invalid)
    for name, frame in outputs.items():
        yield dg.Output(frame, output_name=name, metadata=utf8_metadata if name == "corpus_audit" else None)
    yield alignment_coverage(outputs["corpus_audit"], language)
    yield language_has_paragraphs(outputs["paragraphs"], language)


def _corpus_asset(by_language: dg.PartitionsDefinition) -> dg.AssetsDefinition:
    @dg.multi_asset(
        group_name=GROUP,
        partitions_def=by_language,
        # A backfill (the UI's) or ``clcg run`` of several languages is ONE run over their range,
        # parsing the source once, not one run per language each parsing it all (issue 32); each
        # language is still written, recorded and checked as its own partition. The daemon's
        # corpus_automation_sensor emits backfills, so its fresh corpus is one run too.
        backfill_policy=single_run_policy(),
        outs=_corpus_outs(),
        check_specs=_corpus_check_specs(by_language),
    )
    def corpus(context: dg.AssetExecutionContext, study: StudyResource):  # type: ignore[no-untyped-def]
        """Load the primary source once and keep each language of the run's partitions."""
        cfg = study.load()
        tables = load_corpus(cfg.sources.primary, cfg)
        _refuse_unpartitioned(tables, by_language.get_partition_keys(), cfg.sources.primary)
        languages = [str(key) for key in context.partition_keys]
        # A range run gathers every language's events (``checked_outputs`` included) before it
        # yields any: a table that cannot be stored fails the run before any partition is written.
        all_tables = _language_tables(tables, cfg, languages)
        yield from each_partition(
            context, lambda language: _language_events(context.log, tables, all_tables, language)
        )

    return corpus


def _study_sample_asset(reference: str) -> dg.AssetsDefinition:
    @dg.asset(
        group_name=GROUP,
        kinds={"parquet"},
        owners=["team:clcg"],
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

    return study_sample


def _tokenizer_fertility_asset() -> dg.AssetsDefinition:
    @dg.asset(group_name=GROUP, kinds={"parquet"}, owners=["team:clcg"], deps=["paragraphs"])
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

    return tokenizer_fertility_by_language


def build_corpus_defs(config: ProjectConfig) -> dg.Definitions:
    # One partitions definition shared by the multi-asset and its checks.
    by_language = language_partitions(study_coverage(config).covered)
    return dg.Definitions(
        assets=[
            _languages_asset(),
            _corpus_asset(by_language),
            _study_sample_asset(config.languages.reference),
            _tokenizer_fertility_asset(),
        ]
    )
