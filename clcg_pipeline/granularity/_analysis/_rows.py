"""Analysis rows: the task_scores contract, language groups, and the within-task pairings.

Parse-failure rule A and the pairing rules are described in the package docstring. Rows
without a reference in their language (status ``no_reference``) are not failures: they have no
score, so they leave every mean and are counted instead (:func:`no_reference_counts`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from clcg_pipeline.config import ProjectConfig

#: Columns the analysis needs from ``task_scores``.
SCORE_COLUMNS = (
    "model",
    "language",
    "doc_id",
    "task_id",
    "task",
    "context",
    "rep",
    "granularity",
    "region",
    "position",
    "metric",
    "score",
    "status",
)
#: Optional ``task_scores`` columns carried into the rows when present (the new dimensions:
#: length bucket, a sentence's position in its paragraph, a key sentence's role); empty as ``-``.
OPTIONAL_DIMS = ("bucket", "sentence_position", "role")
#: Secondary metric columns of ``task_scores`` reported beside the primary ``score`` when filled.
EXTRA_METRICS = ("rouge_l", "bleu", "chrf", "judge_total")
#: The paragraph judge's five 0-20 dimensions (their sum is the 0-100 total).
GRANULARITY_ORDER = ("word", "sentence", "paragraph", "document")
POSITIONS = ("begin", "middle", "end")
ALL = "all"
#: Region/position label of tasks that have none (document level).
NO_POSITION = "-"
#: Language groups by Joshi class (the study's six resource classes, coarsened so every group has
#: several languages); unclassified languages enter no group, as in H1's primary mapping.
LANGUAGE_GROUPS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("high", (4, 5)),
    ("mid", (2, 3)),
    ("low", (0, 1)),
)
TARGETS = "targets"
REFERENCE_GROUP = "reference"
#: ``task_scores`` status of a row whose language has no reference (e.g. no summary of its own).
NO_REFERENCE = "no_reference"


def check_frame(frame: pd.DataFrame, table: str, columns: Sequence[str]) -> None:
    """One clear error naming the table and the missing columns."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{table}: missing column(s) {missing}; has {sorted(map(str, frame.columns))}")


def language_group(config: ProjectConfig, iso: str) -> str | None:
    """``reference`` for English, else the Joshi-class group (None when unclassified)."""
    lang = config.languages.get(iso)
    if lang.role == "reference":
        return REFERENCE_GROUP
    if lang.joshi_class is None:
        return None
    for name, classes in LANGUAGE_GROUPS:
        if int(lang.joshi_class) in classes:
            return name
    return None


def analysis_rows(scores: pd.DataFrame, config: ProjectConfig) -> pd.DataFrame:
    """Long rows with ``y``: the primary ``score`` plus every filled secondary metric.

    Parse-failure rule A (the study's primary rule): a prediction whose status is not ``ok``
    scores 0 on every metric; an ``ok`` row without a value for a metric is dropped for that
    metric. A ``no_reference`` row is left out on every metric: nothing could be compared, so it
    is not a 0 (it would pull the language's mean, its gaps and the no-context drop toward 0).
    ``primary`` marks the row's own metric (the one gaps are taken on).
    """
    check_frame(scores, "task_scores", SCORE_COLUMNS)
    scored = scores.loc[(scores["status"].astype(str) != NO_REFERENCE).to_numpy()]
    optional = [c for c in OPTIONAL_DIMS if c in scored.columns]
    base = scored.loc[
        :, [c for c in scored.columns if c in (*SCORE_COLUMNS, *EXTRA_METRICS, *optional)]
    ].copy()
    for col in ("model", "language", "doc_id", "task_id", "task", "context", "granularity", "metric"):
        if base[col].isna().any():
            bad = base.index[base[col].isna().to_numpy()][0]
            row = scores.loc[bad]
            raise ValueError(
                f"task_scores: column {col!r} is empty at row {bad} "
                f"(model={row['model']}, language={row['language']}, task_id={row['task_id']})"
            )
        base[col] = base[col].astype(str)
    for col in ("region", "position", *optional):
        base[col] = base[col].astype(object).where(base[col].notna(), NO_POSITION).astype(str)
    failed = (base["status"].astype(str) != "ok").to_numpy()
    frames = []
    for metric_col, primary in (("score", True), *((m, False) for m in EXTRA_METRICS)):
        if metric_col not in base.columns:
            continue
        values = pd.to_numeric(base[metric_col], errors="coerce").to_numpy(dtype=np.float64)
        y = np.where(failed, 0.0, values)
        keep = np.isfinite(y)
        if not primary:
            # A secondary metric is reported only where it differs from the row's own metric
            # and was computed for the row (failed rows count 0 only where the task has it).
            keep &= (base["metric"] != metric_col).to_numpy()
            has_metric = base.assign(_v=np.isfinite(values)).groupby("task")["_v"].transform("any")
            keep &= has_metric.to_numpy()
        part = base.loc[keep, [*(c for c in SCORE_COLUMNS if c != "score"), *optional]].copy()
        if not primary:
            part["metric"] = metric_col
        part["y"] = y[keep]
        part["primary"] = primary
        frames.append(part)
    rows = pd.concat(frames, ignore_index=True) if frames else base.iloc[0:0]
    groups = {iso: language_group(config, iso) for iso in config.languages.isos}
    rows["language_group"] = rows["language"].map(groups)
    return rows.reset_index(drop=True)


def no_reference_counts(scores: pd.DataFrame) -> pd.DataFrame:
    """``no_reference`` rows by task, language, model and context: ``n_no_reference`` and the
    documents they come from (what :func:`analysis_rows` left out of the means)."""
    cols = ["task", "language", "model", "context", "n_no_reference", "n_documents"]
    rows = scores.loc[(scores["status"].astype(str) == NO_REFERENCE).to_numpy()]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    keys = ["task", "language", "model", "context"]
    table = (
        rows.astype({k: str for k in keys})
        .groupby(keys, sort=True)
        .agg(n_no_reference=("task_id", "size"), n_documents=("doc_id", "nunique"))
        .reset_index()
    )
    return table[cols]


def no_reference_cells(scores: pd.DataFrame) -> dict[tuple[str, str, str, str, str], int]:
    """Full-context ``no_reference`` rows per score cell (task, region, position, language, model),
    and per cell pooled over the regions (``all``, ``all``), as the score tables pool them."""
    rows = scores.loc[
        (scores["status"].astype(str) == NO_REFERENCE).to_numpy() & (scores["context"] == "full").to_numpy()
    ]
    out: dict[tuple[str, str, str, str, str], int] = {}
    for task, region, position, language, model in rows[
        ["task", "region", "position", "language", "model"]
    ].itertuples(index=False):
        region = NO_POSITION if pd.isna(region) else str(region)
        position = NO_POSITION if pd.isna(position) else str(position)
        keys = [(str(task), region, position, str(language), str(model))]
        if region != NO_POSITION:
            keys.append((str(task), ALL, ALL, str(language), str(model)))
        for key in keys:
            out[key] = out.get(key, 0) + 1
    return out


def categorical(frame: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """String columns as categoricals: cluster_table factorizes them many times, fast on codes."""
    return frame.assign(**{c: frame[c].astype("category") for c in cols if c in frame.columns})


def paired_gap_rows(rows: pd.DataFrame, reference: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Non-reference rows with ``d = mean English score of the task - row score``, and the unpaired.

    Pairing is within task, model and metric, on the full-context primary rows. Returns the
    paired rows and a count of the unpaired ones by task and language (no English row).
    """
    keys = ["model", "task_id", "metric"]
    prim = rows.loc[rows["primary"].to_numpy() & (rows["context"] == "full").to_numpy()]
    en = (
        prim.loc[prim["language"] == reference]
        .groupby(keys, sort=False, observed=True)["y"]
        .mean()
        .rename("en_mean")
    )
    other = prim.loc[prim["language"] != reference]
    merged = other.join(en, on=keys)
    paired = merged.loc[merged["en_mean"].notna()].copy()
    paired["d"] = paired["en_mean"] - paired["y"]
    unpaired = (
        merged.loc[merged["en_mean"].isna()]
        .groupby(["task", "language"], sort=True, observed=True)
        .size()
        .rename("rows")
        .reset_index()
    )
    return paired.reset_index(drop=True), unpaired


def paired_context_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Full-context primary rows with the same task's no-context mean (same model, language, metric)."""
    keys = ["model", "language", "task_id", "metric"]
    prim = rows.loc[rows["primary"].to_numpy()]
    none = (
        prim.loc[prim["context"] == "none"]
        .groupby(keys, sort=False, observed=True)["y"]
        .mean()
        .rename("none_mean")
    )
    full = prim.loc[prim["context"] == "full"].join(none, on=keys)
    full = full.loc[full["none_mean"].notna()].copy()
    full["d"] = full["y"] - full["none_mean"]
    return full.reset_index(drop=True)
