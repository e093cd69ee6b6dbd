"""The human-validation analysis from a data folder's tables: what the ``human_validation`` asset
runs, and what a re-derivation of ``study_results.json`` (``results.derive_study_results``) runs
on the same tables, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.validation.human._analysis import HumanValidationResult, run_human_validation

#: The stored tables the analysis reads beside its two inputs (every stored partition of each).
HUMAN_VALIDATION_TABLES = (
    "predictions",
    "scores",
    "error_judgements",
    "diagnostic_sample",
    "task_judgements",
)


def human_validation_from_tables(
    config: ProjectConfig,
    annotations: pd.DataFrame,
    sample: pd.DataFrame,
    stored: Mapping[str, pd.DataFrame],
) -> HumanValidationResult:
    """The analysis of the imported ``annotations`` against the annotation ``sample``, reading
    ``stored`` (``HUMAN_VALIDATION_TABLES`` -> every stored partition; an empty frame or a
    missing name counts as not stored)."""
    missing = [table for table in HUMAN_VALIDATION_TABLES if table not in stored]
    if missing:
        raise KeyError(f"human validation: stored table(s) not handed in: {', '.join(missing)}")
    tables = {name: frame if len(frame) else None for name, frame in stored.items()}
    # Fill ratings (issue 11) feed only the granularity judges' error overlap (issue 36) here.
    rated = without_fill(sample)
    return run_human_validation(
        config,
        without_fill(annotations),
        rated,
        predictions=_near_sample(tables["predictions"], rated),
        scores=_near_sample(tables["scores"], rated),
        judgements=tables["error_judgements"],
        diagnostic=tables["diagnostic_sample"],
        # No class CLCG here: study_results fills it in from the same run's estimates, which
        # are computed after this analysis (it feeds study_results).
        estimates=None,
        task_judgements=tables["task_judgements"],
        fill_ratings=annotations,
        fill_sample=sample,
    )


def without_fill(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without its paragraph-filling rows (kind ``fill``, the granularity analysis's)."""
    if len(frame) and "kind" in frame.columns:
        return frame[frame["kind"] != "fill"]
    return frame


def _near_sample(frame: pd.DataFrame | None, sample: pd.DataFrame) -> pd.DataFrame | None:
    """Only the rows of the sampled responses (a study's scores are ~800k rows; the sample ~700)."""
    if frame is None or sample.empty:
        return frame
    keys = ["model", "language", "doc_id", "item_id"]
    wanted = pd.MultiIndex.from_frame(sample[keys].dropna().astype(str))
    return frame[pd.MultiIndex.from_frame(frame[keys].astype(str)).isin(wanted)].reset_index(drop=True)
