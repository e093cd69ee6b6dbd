"""study_results.json assembled from a data folder: the one function the ``analysis`` asset and a
re-derivation (``derive_study_results``, ``clcg estimate --full`` on a data folder,
``clcg reconstruct --verify``) both call.

The estimator suite runs on the folder's kept scores; the panel (languages, versions left out,
the reason each language without data has none, the drill-down) is described from the folder's
tables; the three studies' documents (error taxonomy, human validation, granularity) are merged
in by ``merge_study_sections``. The asset hands its Dagster inputs in; a re-derivation reads the
same inputs from the folder, where the IO manager wrote them, and recomputes each study's
document with the function its asset runs. A section whose inputs the folder lacks (a release
drops the annotators' timing) is taken from the folder's document instead, and
``sections_from_documents`` says which and why (docs/RELEASE.md, "A rebuild that matches").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from clcg_pipeline.analysis import PairStore, StudyResults, drilldown, run_suite
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity import GRANULARITY_TABLES, granularity_from_tables
from clcg_pipeline.results._identifiability import withhold_unidentifiable
from clcg_pipeline.results._inputs import current_scores, explain_missing_languages, read_replication_scores
from clcg_pipeline.results._merge import (
    STUDY_SECTIONS,
    index_without_models,
    merge_study_sections,
    split_model_pairs,
)
from clcg_pipeline.results._new_model import new_model_block, newest_model
from clcg_pipeline.storage import partition_dir, read_all_partitions, read_frame, read_json
from clcg_pipeline.validation.human import HUMAN_VALIDATION_TABLES, human_validation_from_tables
from clcg_pipeline.validation.taxonomy import TAXONOMY_TABLES, error_taxonomy_from_tables

#: Leaves of study_results.json that say when and from which checkout it was computed, not what:
#: they differ between two computations of the same study (docs/RELEASE.md, "A rebuild that matches").
RUN_METADATA = ("settings.generated_at", "settings.code_version")

_FERTILITY = "tokenizer_fertility_by_language"


@dataclass(frozen=True)
class AssembledResults:
    """The suite's result with the panel described and the studies merged in, and the row counts."""

    study: StudyResults
    rows: int  # scored rows estimated over
    excluded: int  # article x language versions left out as incomplete
    # Every model pair, one row per pair and gap: written beside the document as the model_pairs
    # table (``write_model_pairs``), which keeps only the pairs a reader needs.
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)


def assemble_study_results(
    cfg: ProjectConfig,
    data_dir: str,
    *,
    articles: pd.DataFrame,
    fertility: pd.DataFrame,
    sections: Mapping[str, dict[str, Any]],
    calls: pd.DataFrame,
    analysed_at: Sequence[pd.Timestamp],
    pair_store: PairStore | None = None,
) -> AssembledResults:
    """study_results.json and the estimates table of the study in ``data_dir``.

    ``sections``: study_results key -> that study's document (``STUDY_SECTIONS``);
    ``analysed_at``: when this folder's earlier analyses were written (decides ``new_model``);
    ``pair_store``: the last analysis's model pairs, reused for unchanged models (``run_suite``).
    """
    scores, audit, excluded = current_scores(data_dir, cfg)
    result = _estimate(scores, cfg, articles=articles, fertility=fertility, pair_store=pair_store)
    # The panel's sections are written key by key, by name, into the typed document.
    _describe_panel(cast(dict[str, Any], result.results), cfg, data_dir, scores, audit, excluded)
    merge_study_sections(result.results, result.estimates, dict(sections))
    if len(excluded):
        result.results.setdefault("warnings", []).append(
            f"{len(excluded)} article x language version(s) below the completeness threshold "
            "were excluded from every estimate (see excluded_versions)"
        )
    newest = newest_model(calls, [m.id for m in cfg.models.evaluated], analysed_at=analysed_at)
    if newest is not None:  # said where it matters: first in the report and the terminal
        result.results["new_model"] = new_model_block(result.results, newest)
    # The estimates table's identifiability decides every section's intervals and p values.
    result.results = withhold_unidentifiable(result.results)
    # Last, on the withheld values: the pairs grow with the square of the models; the document
    # keeps those a reader needs and names the tables that hold them all (issue 37).
    pairs = split_model_pairs(result.results)
    index_without_models(result.results, len(result.estimates))
    return AssembledResults(result, len(scores), len(excluded), pairs)


def derive_study_results(
    data_dir: str,
    cfg: ProjectConfig,
    *,
    analysed_at: Sequence[pd.Timestamp] = (),
    articles: pd.DataFrame | None = None,
    fertility: pd.DataFrame | None = None,
    pair_store: PairStore | None = None,
) -> StudyResults:
    """study_results.json re-derived from a data folder alone (a finished study's, or one rebuilt
    by ``clcg reconstruct``), reading what the asset is handed from where the IO manager wrote it
    and recomputing every study's section from its tables (``sections_from_documents`` names the
    ones the folder cannot give, taken from its documents instead).

    ``new_model`` needs the times of the folder's earlier analyses, which the Dagster instance
    holds, not the folder: without them no model is named new. ``articles`` (doc_id, published)
    and ``fertility`` stand in for the folder's tables of the same name when given; ``pair_store``
    (the folder's, ``analysis.read_pair_store``) spares recomputing its unchanged model pairs.
    """
    reference = cfg.languages.reference
    return assemble_study_results(
        cfg,
        data_dir,
        articles=_stored_table(data_dir, "articles", {"language": reference})
        if articles is None
        else articles,
        fertility=_stored_table(data_dir, _FERTILITY, None) if fertility is None else fertility,
        sections=derive_sections(data_dir, cfg),
        calls=read_all_partitions(data_dir, "calls"),
        analysed_at=analysed_at,
        pair_store=pair_store,
    ).study


def sections_from_documents(data_dir: str) -> dict[str, str]:
    """The studies' sections a re-derivation takes from the folder's own documents, each with the
    reason the folder's tables cannot give it; empty for a study's own data folder."""
    annotations = _stored_table(data_dir, "human_annotations", None)
    taken: dict[str, str] = {}
    # The speed rule of the QC (a step of the funnel every statistic is computed after) reads
    # each rating's seconds; `clcg release` drops them (study.yaml release.drop), so a rebuilt
    # folder's ratings cannot be put through the same QC.
    if len(annotations) and "seconds" not in annotations.columns:
        taken["human_validation"] = (
            "human_annotations.seconds (the annotators' timing) is not in the folder (the release drops "
            "it: study.yaml release.drop), and the QC's speed rule needs it"
        )
    return taken


def derive_sections(data_dir: str, cfg: ProjectConfig) -> dict[str, dict[str, Any]]:
    """Each study's document (``STUDY_SECTIONS``) recomputed from the folder's tables by the
    function its asset runs, or the folder's document where ``sections_from_documents`` says so."""

    def stored(tables: Sequence[str]) -> dict[str, pd.DataFrame]:
        return {table: read_all_partitions(data_dir, table) for table in tables}

    taken = sections_from_documents(data_dir)
    sections: dict[str, dict[str, Any]] = {}
    if "error_taxonomy" not in taken:
        sections["error_taxonomy"] = dict(error_taxonomy_from_tables(cfg, stored(TAXONOMY_TABLES)).results)
    if "human_validation" not in taken:
        sections["human_validation"] = dict(
            human_validation_from_tables(
                cfg,
                _stored_table(data_dir, "human_annotations", None),
                _stored_table(data_dir, "annotation_sample", None),
                stored(HUMAN_VALIDATION_TABLES),
            ).results
        )
    if "granularity" not in taken:
        sections["granularity"] = dict(
            granularity_from_tables(
                cfg, _stored_table(data_dir, "long_documents", None), stored(GRANULARITY_TABLES)
            ).results
        )
    for key in taken:
        sections[key] = _stored_document(data_dir, STUDY_SECTIONS[key])
    # In the order the asset merges them (the order of their warnings in the document).
    return {key: as_written(sections[key]) for key in STUDY_SECTIONS}


def _stored_table(data_dir: str, table: str, partition: dict[str, str] | None) -> pd.DataFrame:
    path = partition_dir(data_dir, table, partition) / "data.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path}: not found - the study's {table} table is needed to re-derive it")
    return read_frame(path)


def _stored_document(data_dir: str, asset: str) -> dict[str, Any]:
    """A study's document as the IO manager wrote it: ``<data>/<asset>.json``."""
    path = partition_dir(data_dir, asset, None).parent / f"{asset}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path}: not found - the {asset} document is merged into study_results")
    document = read_json(path)
    if not isinstance(document, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(document).__name__}")
    return document


def _estimate(
    scores: pd.DataFrame,
    cfg: ProjectConfig,
    *,
    articles: pd.DataFrame,
    fertility: pd.DataFrame,
    pair_store: PairStore | None = None,
) -> StudyResults:
    """The estimator suite (docs/ESTIMANDS.md) over the kept scores (and the replication run's, if set)."""
    return run_suite(
        scores,
        cfg,
        articles=articles[["doc_id", "published"]],
        fertility=fertility,
        replication_scores=(
            read_replication_scores(cfg.study.replication_scores) if cfg.study.replication_scores else None
        ),
        pair_store=pair_store,
    )


def _describe_panel(
    results: dict[str, Any],
    cfg: ProjectConfig,
    data_dir: str,
    scores: pd.DataFrame,
    audit: pd.DataFrame,
    excluded: pd.DataFrame,
) -> None:
    """The panel's languages, the versions left out and why, and the item-level drilldown."""
    # The report and the CLI label languages from here, so the results document stands alone.
    results.setdefault(
        "languages",
        [
            {"iso": lang.iso, "name": lang.name, "joshi_class": lang.joshi_class, "role": lang.role}
            for lang in cfg.languages.languages
        ],
    )
    results["excluded_versions"] = excluded.to_dict(orient="records")
    items = read_all_partitions(data_dir, "items")
    # The one owner of the reason a language has no data (the suite says only "no scored rows").
    explain_missing_languages(results, audit, excluded, items)
    # Item-level evidence for the report: where English and each language disagree most.
    results["drilldown"] = drilldown(
        scores,
        read_all_partitions(data_dir, "predictions"),
        items,
        reference=cfg.languages.reference,
        metric=cfg.study.band.metric,
        levels=cfg.study.band.levels,
        item_source=cfg.study.band.item_source,
        context_scope=cfg.study.band.context_scope,
        languages=cfg.languages.isos,
    )


def as_written(document: Mapping[str, Any]) -> Any:
    """A results document as the IO manager writes it to JSON and a reader loads it back."""
    return json.loads(json.dumps(document, sort_keys=True, ensure_ascii=False, allow_nan=False))


def leaf_differences(
    original: Any, derived: Any, *, ignore: Sequence[str] = RUN_METADATA, path: str = ""
) -> list[str]:
    """Every leaf where two JSON documents differ, by dotted path (``a.b[3].c``); ``ignore``
    names the paths (a whole subtree each) that may differ."""
    if path in ignore:
        return []
    if isinstance(original, dict) and isinstance(derived, dict):
        out: list[str] = []
        for key in sorted(set(original) | set(derived), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in derived or key not in original:
                if where not in ignore:
                    out.append(f"{where}: only in the {'original' if key in original else 're-derived'}")
                continue
            out += leaf_differences(original[key], derived[key], ignore=ignore, path=where)
        return out
    if isinstance(original, list) and isinstance(derived, list):
        out = [] if len(original) == len(derived) else [f"{path}: {len(original)} vs {len(derived)} entries"]
        for index, (a, b) in enumerate(zip(original, derived, strict=False)):
            out += leaf_differences(a, b, ignore=ignore, path=f"{path}[{index}]")
        return out
    # A leaf: equal values of the same JSON type (1 and 1.0, or 1 and True, are not the same).
    same = type(original) is type(derived) and original == derived
    return [] if same else [f"{path}: {original!r} vs {derived!r}"]
