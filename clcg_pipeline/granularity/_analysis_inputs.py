"""The granularity analysis from a data folder's tables: what the ``granularity_analysis`` asset
runs, and what a re-derivation of ``study_results.json`` (``results.derive_study_results``) runs
on the same tables, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis import GranularityAnalysis, analyse_granularity, human_fill_totals

#: The stored tables the analysis reads beside ``long_documents`` (every stored partition of each).
GRANULARITY_TABLES = (
    "task_scores",
    "task_judgements",
    "task_calls",
    "task_judge_calls",
    "human_annotations",
    "annotation_sample",
)


def current_rows(frame: pd.DataFrame, config: ProjectConfig, *, by_model: bool = True) -> pd.DataFrame:
    """The rows of the config's panel languages (and evaluated models, with ``by_model``).

    Partitions of models or languages removed from the config stay on disk; they are left out."""
    if len(frame) and "language" in frame.columns:
        keep = frame["language"].isin(config.languages.isos)
        if by_model and "model" in frame.columns:
            keep &= frame["model"].isin([m.id for m in config.models.evaluated])
        frame = frame[keep]
    return frame.reset_index(drop=True)


def granularity_from_tables(
    config: ProjectConfig, long_documents: pd.DataFrame, stored: Mapping[str, pd.DataFrame]
) -> GranularityAnalysis:
    """Scores, gaps, position curve and judge agreement of the task family from ``stored``
    (``GRANULARITY_TABLES`` -> every stored partition of that table)."""
    missing = [table for table in GRANULARITY_TABLES if table not in stored]
    if missing:
        raise KeyError(f"granularity analysis: stored table(s) not handed in: {', '.join(missing)}")
    # A judge call's ``model`` is the judge (not an evaluated model): filtered by language only.
    calls = pd.concat(
        [
            current_rows(stored["task_calls"], config),
            current_rows(stored["task_judge_calls"], config, by_model=False),
        ],
        ignore_index=True,
    )
    return analyse_granularity(
        current_rows(stored["task_scores"], config),
        config,
        documents=long_documents,
        judgements=current_rows(stored["task_judgements"], config),
        calls=calls,
        human=human_fill_totals(stored["human_annotations"], stored["annotation_sample"]),
    )
