"""The granularity analysis: scores, cross-lingual gaps and the position curve (STUDY.md section 8).

Documents play the articles' role: every interval is the study's article-cluster bootstrap
(``analysis/_bootstrap.py``; one multiplicity matrix over the sorted document ids, so every
contrast is taken inside the same replicate) and every estimate goes through the suite's
identifiability rule (``SuiteContext.qualify`` with ``study.min_articles``).

The gap is H1's estimator family, paired within task: every non-English row of a task is
compared with the mean English score of the same task (same model and metric), and a cell's
gap is the micro mean of those differences over its rows. On a balanced design (every task
answered equally often in English and the language) it equals mean_en - mean_l; tasks with no
English row (e.g. translation into the language) are left out of the gaps and counted.

Metrics differ across granularities (accuracy, ROUGE-L, BLEU/chrF): raw levels are not
comparable across granularities, only trends and gaps within one metric (MGAL's caveat).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import (
    ClusterTable,
    SuiteContext,
    cluster_table,
    draw_multiplicities,
    num,
    percentile_ci,
    roles_of,
)
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
#: Secondary metric columns of ``task_scores`` reported beside the primary ``score`` when filled.
EXTRA_METRICS = ("rouge_l", "bleu", "chrf", "judge_total")
#: The paragraph judge's five 0-20 dimensions (their sum is the 0-100 total).
DIMENSIONS = (
    "topic_fidelity",
    "local_coherence",
    "entity_consistency",
    "instruction_following",
    "format_compliance",
)
GRANULARITY_ORDER = ("word", "sentence", "paragraph", "document")
POSITIONS = ("begin", "middle", "end")
ALL = "all"
#: Region/position label of tasks that have none (document level).
NO_POSITION = "-"
#: Language groups by Joshi class (STUDY.md section 6 classes, coarsened so every group has
#: several languages); unclassified languages enter no group, as in H1's primary mapping.
LANGUAGE_GROUPS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("high", (4, 5)),
    ("mid", (2, 3)),
    ("low", (0, 1)),
)
TARGETS = "targets"
REFERENCE_GROUP = "reference"
NO_HUMAN_RATINGS = "no human ratings imported"

ESTIMATE_COLUMNS = (
    "estimand",
    "group",
    "task",
    "granularity",
    "metric",
    "region",
    "position",
    "language",
    "model",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "n_documents",
    "valid_replicates",
    "identifiable",
    "status",
    "flags",
)
_DIMS = ("task", "granularity", "metric", "region", "position", "language", "model")


@dataclass(frozen=True)
class GranularityAnalysis:
    """The ``granularity_results`` document and the long ``granularity_estimates`` table."""

    results: dict[str, Any]
    estimates: pd.DataFrame


def empty_results(status: str, reason: str) -> dict[str, Any]:
    """A results document with every contract key present and nothing estimated."""
    return {
        "status": status,
        "reason": reason,
        "documents": [],
        "scores": [],
        "gaps": [],
        "position_curve": [],
        "middle_vs_edges": [],
        "heatmap": [],
        "no_context": [],
        "cloze_errors": [],
        "judge_agreement": None,
        "human_judge_correlation": None,
        "human_judge_correlation_reason": reason,
        "prompt_tokens_by_task": [],
        "unpaired": [],
        "caveats": [reason],
    }


def empty_estimates() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in ESTIMATE_COLUMNS})


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


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
    metric. ``primary`` marks the row's own metric (the one gaps are taken on).
    """
    check_frame(scores, "task_scores", SCORE_COLUMNS)
    base = scores.loc[:, [c for c in scores.columns if c in (*SCORE_COLUMNS, *EXTRA_METRICS)]].copy()
    for col in ("model", "language", "doc_id", "task_id", "task", "context", "granularity", "metric"):
        if base[col].isna().any():
            bad = base.index[base[col].isna().to_numpy()][0]
            row = scores.loc[bad]
            raise ValueError(
                f"task_scores: column {col!r} is empty at row {bad} "
                f"(model={row['model']}, language={row['language']}, task_id={row['task_id']})"
            )
        base[col] = base[col].astype(str)
    for col in ("region", "position"):
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
        part = base.loc[keep, [c for c in SCORE_COLUMNS if c not in ("score",)]].copy()
        if not primary:
            part["metric"] = metric_col
        part["y"] = y[keep]
        part["primary"] = primary
        frames.append(part)
    rows = pd.concat(frames, ignore_index=True) if frames else base.iloc[0:0]
    groups = {iso: language_group(config, iso) for iso in config.languages.isos}
    rows["language_group"] = rows["language"].map(groups)
    return rows.reset_index(drop=True)


def _categorical(frame: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """String columns as categoricals: cluster_table factorizes them many times, fast on codes."""
    return frame.assign(**{c: frame[c].astype("category") for c in cols if c in frame.columns})


# --------------------------------------------------------------------------------------------
# Bootstrap over documents
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cells:
    """Cell means for the full sample (row 0) and every replicate, with counts per cell."""

    cells: pd.DataFrame
    means: np.ndarray
    n: np.ndarray
    doc_counts: np.ndarray

    def column(self, **where: str) -> int | None:
        """Index of the first cell matching every ``column=value`` (None when there is none)."""
        mask = np.ones(len(self.cells), dtype=bool)
        for col, value in where.items():
            mask &= (self.cells[col] == value).to_numpy()
        hits = np.flatnonzero(mask)
        return int(hits[0]) if len(hits) else None

    def n_documents(self, cols: Sequence[int]) -> int:
        if not len(cols) or self.doc_counts.size == 0:
            return 0
        return int((self.doc_counts[:, list(cols)].sum(axis=1) > 0).sum())


def concat_cells(parts: Sequence[Cells]) -> Cells:
    """Side by side: cells of the same fine table (same document rows), e.g. groups and targets."""
    parts = [p for p in parts if len(p.cells)]
    if not parts:
        raise ValueError("concat_cells: nothing to concatenate")
    return Cells(
        pd.concat([p.cells for p in parts], ignore_index=True),
        np.hstack([p.means for p in parts]),
        np.concatenate([p.n for p in parts]),
        np.hstack([p.doc_counts for p in parts]),
    )


@dataclass(frozen=True)
class FineTable:
    """A cluster table at the finest grain; :meth:`cells` sums its columns into coarser cells.

    One ``cluster_table`` pass over the rows (the costly part at study scale) serves every
    grouping: coarser cells are column sums of the ``documents x cells`` matrices, which are
    small, so the sums and counts are the same as a ``cluster_table`` over the coarser columns.
    """

    table: ClusterTable
    weights: np.ndarray
    boot: DocumentBootstrap

    def cells(
        self,
        keep: Sequence[str],
        *,
        where: Mapping[str, Sequence[Any]] | None = None,
        relabel: Mapping[str, Mapping[Any, Any]] | None = None,
        constant: Mapping[str, Any] | None = None,
    ) -> Cells:
        """Cells by ``keep`` over the fine cells matching ``where`` (column -> allowed values).

        ``relabel`` maps a column's values to new labels first (None drops the cell);
        ``constant`` adds label columns with one value (e.g. ``language="targets"``).
        """
        fine = self.table.cells
        mask = np.ones(len(fine), dtype=bool)
        labels = fine.loc[:, list(keep)].copy() if keep else pd.DataFrame(index=fine.index)
        for col, mapping in (relabel or {}).items():
            mapped = fine[col].map(mapping)
            mask &= mapped.notna().to_numpy()
            if col in labels.columns:
                labels[col] = mapped
        for col, allowed in (where or {}).items():
            mask &= fine[col].isin(list(allowed)).to_numpy()
        sel = np.flatnonzero(mask)
        reps = self.boot.ctx.replicates
        if len(sel) == 0 or self.table.sums.size == 0:
            empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in [*keep, *(constant or {})]})
            return Cells(empty, np.zeros((reps + 1, 0)), np.zeros(0), np.zeros((len(self.table.articles), 0)))
        sub = labels.iloc[sel].reset_index(drop=True)
        if keep:
            grouped = sub.groupby(list(keep), sort=True, dropna=False)
            codes = grouped.ngroup().to_numpy()
            cells = grouped.size().reset_index()[list(keep)]
        else:
            codes = np.zeros(len(sub), dtype=np.int64)
            cells = pd.DataFrame(index=[0])
        for col, value in (constant or {}).items():
            cells[col] = value
        order = np.argsort(codes, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
        sums = np.add.reduceat(self.table.sums[:, sel[order]], starts, axis=1)
        counts = np.add.reduceat(self.table.counts[:, sel[order]], starts, axis=1)
        rep_sums = np.vstack([sums.sum(axis=0, keepdims=True), self.weights @ sums])
        rep_counts = np.vstack([counts.sum(axis=0, keepdims=True), self.weights @ counts])
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(rep_counts > 0, rep_sums / np.where(rep_counts > 0, rep_counts, 1.0), np.nan)
        return Cells(cells.reset_index(drop=True), means, counts.sum(axis=0), counts)


class DocumentBootstrap:
    """Document-cluster bootstrap with one multiplicity matrix for every table of one analysis."""

    def __init__(self, doc_ids: Sequence[str], ctx: SuiteContext) -> None:
        self.ctx = ctx
        self.docs = np.array(sorted({str(d) for d in doc_ids}), dtype=object)
        self.weights = draw_multiplicities(len(self.docs), ctx.replicates, ctx.seed)

    def _weights_for(self, table: ClusterTable) -> np.ndarray:
        # cluster_table sorts its ids by string, as self.docs is: a table over a subset of the
        # documents takes the matching columns, so every table shares the same draws.
        idx = np.searchsorted(self.docs, table.articles.astype(str))
        return self.weights[:, idx]

    def fine(self, frame: pd.DataFrame, dims: Sequence[str], value_col: str) -> FineTable:
        """Per-document sums at the finest grain ``dims``; every coarser table is derived from it."""
        table = cluster_table(frame, list(dims), value_col=value_col, cluster_col="doc_id")
        return FineTable(table, self._weights_for(table) if table.sums.size else self.weights[:, :0], self)

    def summarise_vectors(self, vectors: np.ndarray, n: Sequence[int], n_docs: Sequence[int]) -> list[dict]:
        """Qualified ``{estimate, ci_low, ci_high, n, n_documents, ...}`` per column of ``vectors``."""
        conf = self.ctx.confidence
        reps = vectors[1:]
        valid = np.isfinite(reps).sum(axis=0)
        q = [100 * (1 - conf) / 2, 100 * (1 + conf) / 2]
        lows = np.full(vectors.shape[1], np.nan)
        highs = np.full(vectors.shape[1], np.nan)
        # np.nanpercentile loops over columns in Python; columns without NaN (nearly all) go
        # through one vectorized np.percentile, the same interpolation as percentile_ci.
        whole = valid == reps.shape[0]
        if whole.any() and reps.shape[0]:
            lows[whole], highs[whole] = np.percentile(reps[:, whole], q, axis=0)
        for j in np.flatnonzero(~whole & (valid > 0)):
            lows[j], highs[j] = percentile_ci(reps[:, j], conf)
        out = []
        for j in range(vectors.shape[1]):
            entry: dict[str, Any] = {
                "estimate": num(vectors[0, j]),
                "ci_low": num(lows[j]),
                "ci_high": num(highs[j]),
                "n": int(n[j]),
                "n_articles": int(n_docs[j]),
                "valid_replicates": int(valid[j]),
            }
            entry = self.ctx.qualify(entry, sided=None)
            entry["n_documents"] = entry.pop("n_articles")
            if entry["reason"]:  # documents are this family's clusters (the rule's "articles")
                entry["reason"] = entry["reason"].replace("too few articles", "too few documents")
            out.append(entry)
        return out

    def summarise(self, cells: Cells) -> pd.DataFrame:
        """One row per cell: the cell columns plus the qualified estimate."""
        n_docs = (cells.doc_counts > 0).sum(axis=0) if cells.doc_counts.size else np.zeros(len(cells.cells))
        stats = self.summarise_vectors(cells.means, cells.n, n_docs)
        return pd.concat([cells.cells.reset_index(drop=True), pd.DataFrame(stats)], axis=1)


# --------------------------------------------------------------------------------------------
# Pairing
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# The analysis
# --------------------------------------------------------------------------------------------


class _Estimates:
    """Collects the long ``granularity_estimates`` rows."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add_frame(self, estimand: str, frame: pd.DataFrame, fixed: Mapping[str, str] | None = None) -> None:
        fixed = dict(fixed or {})
        for rec in frame.to_dict(orient="records"):
            self.add(estimand, rec, {**fixed, **{d: rec[d] for d in _DIMS if d in rec}})

    def add(self, estimand: str, stats: Mapping[str, Any], dims: Mapping[str, Any]) -> None:
        dims = {d: (None if dims.get(d) is None else str(dims[d])) for d in _DIMS}
        ident = stats.get("identifiable", True)
        self.rows.append(
            {
                "estimand": estimand,
                "group": "|".join(f"{d}={v}" for d, v in dims.items() if v is not None),
                **dims,
                "estimate": stats.get("estimate"),
                "ci_low": stats.get("ci_low"),
                "ci_high": stats.get("ci_high"),
                "n": stats.get("n"),
                "n_documents": stats.get("n_documents"),
                "valid_replicates": stats.get("valid_replicates"),
                "identifiable": ident,
                "status": "estimated" if ident else f"not identifiable: {stats.get('reason')}",
                "flags": "; ".join(stats.get("flags", [])) or None,
            }
        )

    def frame(self) -> pd.DataFrame:
        if not self.rows:
            return empty_estimates()
        return pd.DataFrame(self.rows, columns=list(ESTIMATE_COLUMNS))


def _records(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict(orient="records"):
        out.append({c: _plain(rec.get(c)) for c in columns})
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return num(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_STAT_KEYS = ("ci_low", "ci_high", "n", "n_documents", "identifiable", "reason", "flags")


SCORE_DIMS = ["task", "granularity", "metric", "region", "position", "language", "model"]


def _score_tables(fine: FineTable, est: _Estimates) -> list[dict[str, Any]]:
    """Score by task x granularity x region x position x language x model, and pooled over position."""
    tables = [fine.boot.summarise(fine.cells(SCORE_DIMS))]
    regions = [r for r in set(fine.table.cells["region"]) if r != NO_POSITION]
    pooled_cells = fine.cells(
        [d for d in SCORE_DIMS if d not in ("region", "position")],
        where={"region": regions},
        constant={"region": ALL, "position": ALL},
    )
    if len(pooled_cells.cells):
        tables.append(fine.boot.summarise(pooled_cells))
    table = pd.concat(tables, ignore_index=True)
    est.add_frame("score", table)
    return _records(table, [*SCORE_DIMS, "estimate", *_STAT_KEYS])


_POSITION_MODES: tuple[tuple[str, ...], ...] = ((), ("region",), ("position",), ("region", "position"))


def _language_modes(
    config: ProjectConfig, *, reference_group: bool = False
) -> dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """Language modes as (where, relabel, constant) for :meth:`FineTable.cells` on ``language``.

    ``language``: each non-reference language; ``group``: the Joshi-class groups (the reference
    as its own group when ``reference_group``); ``targets``: the pooled targets (H1's micro).
    """
    roles = roles_of(config.languages)
    groups = {iso: language_group(config, iso) for iso in config.languages.isos}
    if not reference_group:
        groups[roles.reference] = None
    return {
        "language": ({}, {}, {}),
        "group": ({}, {"language": groups}, {}),
        TARGETS: ({"language": list(roles.targets)}, {}, {"language": TARGETS}),
    }


def _gap_tables(
    fine: FineTable, config: ProjectConfig, tasks: pd.Series, est: _Estimates
) -> dict[tuple[str, str, tuple[str, ...]], pd.DataFrame]:
    """Paired gaps per granularity (and metric) x position mode x language mode x model mode."""
    out: dict[tuple[str, str, tuple[str, ...]], pd.DataFrame] = {}
    for lang_mode, (where, relabel, constant) in _language_modes(config).items():
        for model_mode in ("model", ALL):
            for pos in _POSITION_MODES:
                keep = ["granularity", "metric", *pos]
                keep += [] if constant else ["language"]
                keep += ["model"] if model_mode == "model" else []
                fixed = dict(constant)
                fixed |= {"model": ALL} if model_mode == ALL else {}
                fixed |= {c: ALL for c in ("region", "position") if c not in pos}
                cells = fine.cells(keep, where=where, relabel=relabel, constant=fixed)
                if not len(cells.cells):
                    continue
                table = fine.boot.summarise(cells)
                table["tasks"] = [
                    tasks.get((g, m), []) for g, m in zip(table["granularity"], table["metric"], strict=True)
                ]
                out[(lang_mode, model_mode, pos)] = table
                est.add_frame("gap", table)
    return out


def _joshi(config: ProjectConfig, label: str) -> Any:
    if label in config.languages.isos:
        return config.languages.get(label).joshi_class
    return None if label == TARGETS else label


def _gap_records(tables: Mapping[Any, pd.DataFrame], config: ProjectConfig) -> list[dict[str, Any]]:
    cols = ["granularity", "metric", "tasks", "region", "position", "language", "model", "gap", *_STAT_KEYS]
    out: list[dict[str, Any]] = []
    for table in tables.values():
        for rec in _records(table.rename(columns={"estimate": "gap"}), cols):
            rec["joshi_class"] = _joshi(config, rec["language"])
            out.append(rec)
    return out


def _contrast(cells: Cells, axis: str, **where: str) -> tuple[np.ndarray, list[int]] | None:
    """``middle - (begin + end) / 2`` along the cells' ``axis`` column (None when a position is absent)."""
    cols = [cells.column(**where, **{axis: p}) for p in POSITIONS]
    found = [c for c in cols if c is not None]
    if len(found) < len(POSITIONS):
        return None
    b, m, e = (cells.means[:, c] for c in found)
    return m - (b + e) / 2.0, found


def _position_curve(
    sfine: FineTable, gfine: FineTable | None, config: ProjectConfig, est: _Estimates
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score and gap by region x paragraph position per language group, and the middle contrasts."""
    regions = [r for r in set(sfine.table.cells["region"]) if r != NO_POSITION]
    if not regions:
        return [], []
    modes = _language_modes(config, reference_group=True)

    def grouped(fine: FineTable, keep: list[str], extra: Mapping[str, Sequence[Any]]) -> Cells:
        # Joshi-class groups (and the reference) plus the pooled targets, side by side.
        parts = []
        for mode in ("group", TARGETS):
            where, relabel, constant = modes[mode]
            cells_keep = keep if not constant else [k for k in keep if k != "language"]
            parts.append(
                fine.cells(
                    cells_keep,
                    where={**where, **extra, "region": regions},
                    relabel=relabel,
                    constant=constant,
                )
            )
        parts = [p for p in parts if len(p.cells)]
        out = concat_cells(parts) if parts else fine.cells(keep, where={"region": []})
        return Cells(out.cells.rename(columns={"language": "lgroup"}), out.means, out.n, out.doc_counts)

    curve_dims = ["granularity", "metric", "region", "position", "language"]
    s_cells = grouped(sfine, curve_dims, {"primary": [True]})
    g_cells = grouped(gfine, curve_dims, {}) if gfine is not None else None
    s_tab = sfine.boot.summarise(s_cells)
    keys = ["granularity", "metric", "region", "position", "lgroup"]
    if g_cells is not None and len(g_cells.cells):
        g_tab = sfine.boot.summarise(g_cells)
    else:
        g_tab = pd.DataFrame(columns=[*keys, "estimate", *_STAT_KEYS])
    merged = s_tab[[*keys, "estimate"]].rename(columns={"estimate": "score"})
    merged = merged.merge(
        g_tab.rename(columns={"estimate": "gap"})[[*keys, "gap", *_STAT_KEYS]], on=keys, how="left"
    )
    curve = []
    for rec in merged.to_dict(orient="records"):
        row = {"language_group": rec.pop("lgroup"), **{k: _plain(v) for k, v in rec.items()}}
        for key in ("n", "n_documents"):
            if row.get(key) is not None:
                row[key] = int(row[key])
        if row.get("gap") is None:
            row.update(ci_low=None, ci_high=None, identifiable=False, flags=[])
            row["reason"] = "no gap: the reference group, or no paired rows"
        curve.append(row)
    for rec in g_tab.to_dict(orient="records"):
        dims = {k: rec[k] for k in ("granularity", "metric", "region", "position")}
        est.add("position_curve_gap", rec, {**dims, "language": rec["lgroup"], "model": ALL})

    contrasts: list[dict[str, Any]] = []
    pairs = sorted(
        set(zip(s_tab["granularity"], s_tab["metric"], strict=True)), key=lambda gm: _gran_key(tuple(gm))
    )
    for axis, other in (("region", "position"), ("position", "region")):
        keep = ["granularity", "metric", axis, "language"]
        sc = grouped(sfine, keep, {"primary": [True]})
        gc = grouped(gfine, keep, {}) if gfine is not None else None
        for g, m in pairs:
            groups = sorted(set(sc.cells["lgroup"]), key=_group_key)
            gap_vec: dict[str, tuple[np.ndarray, list[int]]] = {}
            for grp in groups:
                entry: dict[str, Any] = {
                    "granularity": g,
                    "metric": m,
                    "axis": axis,
                    "pooled_over": other,
                    "language_group": grp,
                    "score_contrast": _stats_of(
                        sfine.boot, sc, _contrast(sc, axis, granularity=g, metric=m, lgroup=grp)
                    ),
                    "gap_contrast": None,
                }
                if gc is not None and len(gc.cells) and grp != REFERENCE_GROUP:
                    found = _contrast(gc, axis, granularity=g, metric=m, lgroup=grp)
                    entry["gap_contrast"] = _stats_of(sfine.boot, gc, found)
                    if found is not None:
                        gap_vec[grp] = found
                contrasts.append(entry)
                where = {"granularity": g, "metric": m, axis: "middle-edges", "language": grp, "model": ALL}
                est.add("middle_minus_edges_score", entry["score_contrast"], where)
                if entry["gap_contrast"] is not None:
                    est.add("middle_minus_edges_gap", entry["gap_contrast"], where)
            if gc is not None and "low" in gap_vec and "high" in gap_vec:
                vec = gap_vec["low"][0] - gap_vec["high"][0]
                cols = sorted(set(gap_vec["low"][1]) | set(gap_vec["high"][1]))
                (stats,) = sfine.boot.summarise_vectors(
                    vec[:, None], [int(gc.n[cols].sum())], [gc.n_documents(cols)]
                )
                contrasts.append(
                    {
                        "granularity": g,
                        "metric": m,
                        "axis": axis,
                        "pooled_over": other,
                        "language_group": "low minus high",
                        "score_contrast": None,
                        "gap_contrast": stats,
                    }
                )
                where = {
                    "granularity": g,
                    "metric": m,
                    axis: "middle-edges",
                    "language": "low-high",
                    "model": ALL,
                }
                est.add("middle_excess_low_minus_high", stats, where)
    return curve, contrasts


def _stats_of(boot: DocumentBootstrap, cells: Cells, found: tuple[np.ndarray, list[int]] | None) -> dict:
    if found is None:
        return {
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "identifiable": False,
            "reason": "not identifiable: begin, middle and end are not all present",
            "flags": [],
        }
    vec, cols = found
    (stats,) = boot.summarise_vectors(vec[:, None], [int(cells.n[cols].sum())], [cells.n_documents(cols)])
    return stats


def _gran_key(item: tuple[str, ...]) -> tuple[int, str]:
    g = item[0]
    return (GRANULARITY_ORDER.index(g) if g in GRANULARITY_ORDER else len(GRANULARITY_ORDER), "|".join(item))


def _group_key(name: str) -> tuple[int, str]:
    order = [REFERENCE_GROUP, *(n for n, _ in LANGUAGE_GROUPS), TARGETS]
    return (order.index(name) if name in order else len(order), name)


def _heatmap(gaps: Mapping[Any, pd.DataFrame]) -> list[dict[str, Any]]:
    """Gap by language group x granularity x region (all models), for the report's heat map."""
    out: list[dict[str, Any]] = []
    for lang_mode in ("group", TARGETS):
        table = gaps.get((lang_mode, ALL, ("region",)))
        if table is None:
            continue
        table = table.loc[table["region"] != NO_POSITION]
        for rec in _records(
            table.rename(columns={"language": "language_group", "estimate": "gap"}),
            ["language_group", "granularity", "metric", "region", "gap", *_STAT_KEYS],
        ):
            out.append(rec)
    return out


def _no_context(boot: DocumentBootstrap, rows: pd.DataFrame, est: _Estimates) -> list[dict[str, Any]]:
    """With minus without context, paired within task (same model, language, metric)."""
    pairs = paired_context_rows(rows)
    if pairs.empty:
        return []
    dims = ["task", "metric", "language", "model"]
    fine = boot.fine(pairs, dims, "d")
    with_fine = boot.fine(pairs, dims, "y")
    without_fine = boot.fine(pairs, dims, "none_mean")
    out: list[dict[str, Any]] = []
    for keep in (dims, ["task", "metric", "model"], ["task", "metric", "language"], ["task", "metric"]):
        fixed = {c: ALL for c in ("language", "model") if c not in keep}
        table = boot.summarise(fine.cells(keep, constant=fixed))
        table["with_context"] = with_fine.cells(keep, constant=fixed).means[0]
        table["without_context"] = without_fine.cells(keep, constant=fixed).means[0]
        est.add_frame("no_context_drop", table)
        out += _records(
            table.rename(columns={"estimate": "drop"}),
            ["task", "metric", "language", "model", "with_context", "without_context", "drop", *_STAT_KEYS],
        )
    return out


# --------------------------------------------------------------------------------------------
# Judgements, calls, documents
# --------------------------------------------------------------------------------------------


def _tags(value: Any) -> list[str]:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return []
    if isinstance(value, str):
        return [t.strip() for t in value.replace(";", ",").split(",") if t.strip()]
    return [str(t) for t in value]


def cloze_error_shares(judgements: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Share of each main label (M1-M3) and secondary tag (S1-S8) among a judge's labelled cloze errors.

    Rows with a ``label`` and status ``ok`` count; a tag's share is over the same errors (a
    case may carry several tags, so tag shares need not sum to one).
    """
    if judgements is None or judgements.empty or "label" not in judgements.columns:
        return []
    check_frame(judgements, "task_judgements", ["judge", "label"])
    rows = judgements.loc[judgements["label"].notna()]
    if "status" in rows.columns:
        rows = rows.loc[rows["status"].astype(str) == "ok"]
    out: list[dict[str, Any]] = []
    for judge, grp in rows.groupby(rows["judge"].astype(str), sort=True):
        total = len(grp)
        for label, n in grp["label"].astype(str).value_counts().sort_index().items():
            out.append({"judge": judge, "kind": "main", "label": label, "n": int(n), "share": n / total})
        if "tags" in grp.columns:
            counts: dict[str, int] = {}
            for tags in grp["tags"]:
                for tag in set(_tags(tags)):
                    counts[tag] = counts.get(tag, 0) + 1
            for tag in sorted(counts):
                out.append(
                    {
                        "judge": judge,
                        "kind": "tag",
                        "label": tag,
                        "n": counts[tag],
                        "share": counts[tag] / total,
                    }
                )
    return out


_UNIT_KEYS = ("model", "language", "doc_id", "task_id", "context", "rep")


def _fill_rows(judgements: pd.DataFrame | None) -> pd.DataFrame:
    """Paragraph-filling judgements with a total (status ok), with the total derived if absent."""
    if judgements is None or judgements.empty:
        return pd.DataFrame()
    frame = judgements
    if "total" not in frame.columns and all(d in frame.columns for d in DIMENSIONS):
        frame = frame.assign(total=frame[list(DIMENSIONS)].sum(axis=1, min_count=len(DIMENSIONS)))
    if "total" not in frame.columns:
        return pd.DataFrame()
    frame = frame.loc[pd.to_numeric(frame["total"], errors="coerce").notna()]
    if "status" in frame.columns:
        frame = frame.loc[frame["status"].astype(str) == "ok"]
    check_frame(frame, "task_judgements", ["judge", "task_id"])
    return frame


def ordinal_alpha(ratings: np.ndarray) -> float | None:
    """Krippendorff's ordinal alpha of a ``units x judges`` matrix (NaN = not rated).

    Hand-written on purpose, with the ``krippendorff`` package as its reference in the tests:
    the package builds a ``units x values x values`` tensor, 2 GB for 27k answers rated 0-100
    at study scale. The coincidence matrix is summed here pair by pair of judges instead; the
    ordinal distance and the expected coincidences are the package's (Krippendorff 2011).
    """
    ratings = np.asarray(ratings, dtype=np.float64)
    present = np.isfinite(ratings)
    m = present.sum(axis=1)
    ratings, present, m = ratings[m >= 2], present[m >= 2], m[m >= 2]
    if len(ratings) == 0:
        return None
    domain = np.unique(ratings[present])
    if len(domain) < 2:
        return None
    idx = np.searchsorted(domain, np.where(present, ratings, domain[0]))
    v = len(domain)
    o = np.zeros((v, v))
    weight = 1.0 / (m - 1)
    for a in range(ratings.shape[1]):
        for b in range(ratings.shape[1]):
            if a == b:
                continue
            both = present[:, a] & present[:, b]
            np.add.at(o, (idx[both, a], idx[both, b]), weight[both])
    n_v = o.sum(axis=0)
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n_v.sum() - 1)
    cum = np.cumsum(n_v)
    lo, hi = np.minimum.outer(np.arange(v), np.arange(v)), np.maximum.outer(np.arange(v), np.arange(v))
    between = cum[hi] - cum[lo] + n_v[lo]
    d = (between - (n_v[lo] + n_v[hi]) / 2.0) ** 2
    return num(1.0 - (o * d).sum() / (e * d).sum())


def judge_agreement(judgements: pd.DataFrame | None) -> dict[str, Any] | None:
    """Ordinal Krippendorff alpha of the paragraph judges on the 0-100 totals (and per dimension).

    Units are the judged answers (model x language x task x rep); ``spread_mean`` is the mean
    over units of the judges' max - min total. ICC is left null: no maintained ICC
    implementation is installed (pingouin is not a dependency) and it is not hand-written.
    """
    fill = _fill_rows(judgements)
    if fill.empty:
        return None
    keys = [k for k in _UNIT_KEYS if k in fill.columns]
    judges = sorted(set(fill["judge"].astype(str)))
    fill = fill.assign(judge=fill["judge"].astype(str), unit=fill[keys].astype(str).agg("|".join, axis=1))

    def wide(col: str) -> pd.DataFrame:
        return fill.pivot_table(index="unit", columns="judge", values=col, aggfunc="mean")

    totals = wide("total")
    multi = totals.loc[totals.notna().sum(axis=1) >= 2]
    spread = (multi.max(axis=1) - multi.min(axis=1)).mean() if len(multi) else None
    return {
        "alpha_ordinal": ordinal_alpha(totals.to_numpy()),
        "alpha_ordinal_by_dimension": {
            d: ordinal_alpha(wide(d).to_numpy())
            for d in DIMENSIONS
            if d in fill.columns and fill[d].notna().any()
        },
        "icc": None,
        "icc_reason": "no maintained ICC implementation installed (pingouin is not a dependency)",
        "n": len(multi),
        "judges": judges,
        "spread_mean": num(spread) if spread is not None else None,
        "spread_rule": "mean over answers rated by two or more judges of the max - min judge total (0-100)",
    }


def human_fill_totals(annotations: pd.DataFrame | None, sample: pd.DataFrame | None) -> pd.DataFrame | None:
    """Human paragraph-filling ratings (``human_annotations`` kind ``fill``) as the unit keys of
    the rated answer (from ``annotation_sample``) + ``total`` (0-100) + ``simulated``.

    None when there are no imported fill ratings (the correlation then says so).
    """
    if annotations is None or annotations.empty or "fill_total" not in annotations.columns:
        return None
    rated = annotations[(annotations["kind"].astype(str) == "fill") & annotations["fill_total"].notna()]
    if rated.empty:
        return None
    if sample is None or sample.empty or "gran_task_id" not in sample.columns:
        raise ValueError(
            "human_annotations holds paragraph-filling ratings but annotation_sample has no fill tasks "
            "(column gran_task_id): the sample they were rated against is missing"
        )
    units = sample.loc[
        sample["kind"].astype(str) == "fill", ["task_id", "model", "language", "doc_id"]
    ].assign(unit_task_id=sample["gran_task_id"], context=sample["context"], rep=sample["rep"])
    frame = rated[["task_id", "annotator_id", "fill_total", "simulated"]].merge(
        units, on="task_id", how="inner"
    )
    if len(frame) < len(rated):
        raise ValueError(
            f"human_annotations: {len(rated) - len(frame)} fill rating(s) cite task ids not among the "
            "annotation_sample's fill tasks"
        )
    out = frame.drop(columns=["task_id"]).rename(columns={"unit_task_id": "task_id", "fill_total": "total"})
    for col in ("model", "language", "doc_id", "task_id", "context"):
        out[col] = out[col].astype(str)
    out["rep"] = out["rep"].astype("int64")
    out["total"] = out["total"].astype(float)
    out["simulated"] = out["simulated"].fillna(False).astype(bool)
    return out.reset_index(drop=True)


def human_judge_correlation(
    judgements: pd.DataFrame | None, human: pd.DataFrame | None
) -> tuple[dict[str, Any] | None, str | None]:
    """Pearson and Spearman correlation of the human and the mean judge total per answer.

    ``human`` has the unit keys and ``total`` (0-100, the judges' scale). Returns (None, reason)
    when no human ratings of paragraph filling exist.
    """
    if human is None or human.empty:
        return None, NO_HUMAN_RATINGS
    from scipy import stats  # imported here: slow to import, and only needed with human ratings

    check_frame(human, "human ratings of paragraph filling", ["task_id", "total"])
    fill = _fill_rows(judgements)
    if fill.empty:
        return None, "no paragraph-filling judgements to compare with"
    keys = [k for k in _UNIT_KEYS if k in human.columns and k in fill.columns]
    # Same key dtypes on both sides (stored ids are strings, rep an integer) so the join matches.
    fill = fill.assign(**{k: fill[k].astype("int64") if k == "rep" else fill[k].astype(str) for k in keys})
    human = human.assign(
        **{k: human[k].astype("int64") if k == "rep" else human[k].astype(str) for k in keys}
    )
    judged = fill.groupby(keys)["total"].mean().rename("judge_total")
    rated = human.groupby(keys)["total"].mean().rename("human_total")
    both = pd.concat([judged, rated], axis=1, join="inner").dropna()
    if len(both) < 3:
        return None, f"only {len(both)} answer(s) rated by both humans and judges (need 3)"
    pr = stats.pearsonr(both["human_total"], both["judge_total"])
    sr = stats.spearmanr(both["human_total"], both["judge_total"])
    return {
        "pearson_r": num(pr.statistic),
        "pearson_p": num(pr.pvalue),
        "spearman_rho": num(sr.statistic),
        "spearman_p": num(sr.pvalue),
        "n": len(both),
        "n_ratings": int(human.set_index(keys).index.isin(both.index).sum()),
        "unit": "per answer: mean human total (0-100) vs mean judge total over judges",
        "simulated": bool(human["simulated"].any()) if "simulated" in human.columns else False,
    }, None


def _family(prompt_version: Any) -> str:
    text = str(prompt_version)
    head, _, tail = text.rpartition("-v")
    return head if head and tail.isdigit() else text


def prompt_tokens_by_task(
    calls: pd.DataFrame | None, predictions: pd.DataFrame | None
) -> list[dict[str, Any]]:
    """Input tokens, calls and cost per task (judge calls under their prompt family)."""
    if calls is None or calls.empty:
        return []
    check_frame(calls, "task_calls", ["call_id", "prompt_version", "input_tokens"])
    frame = calls.drop_duplicates("call_id")
    if "task" not in frame.columns:
        task_of: pd.Series = pd.Series(dtype=object)
        if predictions is not None and len(predictions) and {"call_id", "task"} <= set(predictions.columns):
            task_of = predictions.drop_duplicates("call_id").set_index("call_id")["task"]
        frame = frame.assign(task=frame["call_id"].map(task_of))
    frame = frame.assign(
        task=frame["task"].where(frame["task"].notna(), frame["prompt_version"].map(_family))
    )
    agg = {"calls": ("call_id", "size"), "prompt_tokens_total": ("input_tokens", "sum")}
    agg |= {"prompt_tokens_mean": ("input_tokens", "mean"), "prompt_tokens_max": ("input_tokens", "max")}
    if "output_tokens" in frame.columns:
        agg["output_tokens_total"] = ("output_tokens", "sum")
    if "cost_usd" in frame.columns:
        agg["cost_usd"] = ("cost_usd", "sum")
    table = frame.groupby("task", sort=True).agg(**agg).reset_index()
    return [{k: _plain(v) for k, v in rec.items()} for rec in table.to_dict(orient="records")]


def documents_summary(documents: pd.DataFrame | None) -> list[dict[str, Any]]:
    if documents is None or documents.empty:
        return []
    check_frame(documents, "long_documents", ["doc_id", "language", "bucket"])
    out = []
    for bucket, grp in documents.groupby(documents["bucket"].astype(str), sort=True):
        out.append(
            {
                "bucket": bucket,
                "n_documents": int(grp["doc_id"].nunique()),
                "languages": sorted(set(grp["language"].astype(str))),
            }
        )
    return out


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def analyse_granularity(
    scores: pd.DataFrame,
    config: ProjectConfig,
    *,
    documents: pd.DataFrame | None = None,
    judgements: pd.DataFrame | None = None,
    calls: pd.DataFrame | None = None,
    predictions: pd.DataFrame | None = None,
    human: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
) -> GranularityAnalysis:
    """Every granularity result; ``scores`` should hold only evaluated models and panel languages."""
    study = config.study
    if not study.granularity.enabled:
        reason = "study.granularity.enabled is false: the granularity task family is off"
        return GranularityAnalysis(empty_results("skipped", reason), empty_estimates())
    if scores is None or len(scores) == 0:
        reason = "no task_scores rows for the evaluated models and configured languages (nothing scored yet)"
        out = empty_results("empty", reason)
        out["documents"] = documents_summary(documents)
        out["prompt_tokens_by_task"] = prompt_tokens_by_task(calls, predictions)
        return GranularityAnalysis(out, empty_estimates())

    ctx = SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=int(replicates if replicates is not None else study.bootstrap_replicates),
        seed=int(seed if seed is not None else study.seed),
        confidence=study.confidence,
        min_articles=study.min_articles,
    )
    rows = _categorical(
        analysis_rows(scores, config),
        [
            "model",
            "language",
            "doc_id",
            "task",
            "granularity",
            "metric",
            "region",
            "position",
            "language_group",
        ],
    )
    boot = DocumentBootstrap(rows["doc_id"].unique(), ctx)
    est = _Estimates()
    full = rows.loc[rows["context"] == "full"]
    paired, unpaired = paired_gap_rows(rows, ctx.roles.reference)

    sfine = boot.fine(full, [*SCORE_DIMS, "primary"], "y")
    score_records = _score_tables(sfine, est)
    gfine = boot.fine(paired, ["granularity", "metric", "region", "position", "language", "model"], "d")
    tasks = paired.groupby(["granularity", "metric"], observed=True)["task"].agg(lambda t: sorted(set(t)))
    gap_tables = _gap_tables(gfine, config, tasks, est) if len(paired) else {}
    curve, contrasts = _position_curve(sfine, gfine if len(paired) else None, config, est)
    no_context = _no_context(boot, rows, est)
    agreement = judge_agreement(judgements)
    if agreement is not None:
        est.add(
            "judge_alpha_ordinal",
            {"estimate": agreement["alpha_ordinal"], "n": agreement["n"], "identifiable": True},
            {"task": "paragraph_fill", "granularity": "paragraph", "metric": "judge_total"},
        )
    correlation, corr_reason = human_judge_correlation(judgements, human)

    n_docs = len(boot.docs)
    caveats = [
        "metrics differ across granularities (accuracy, ROUGE-L, BLEU/chrF, judge total): compare trends "
        "and gaps within a metric, never raw levels across granularities (MGAL's caveat)",
        "gap = English minus language, paired within task (same model and metric), micro mean over the "
        "language's rows; language groups pool their languages' rows (Joshi 4-5 high, 2-3 mid, 0-1 low; "
        "unclassified languages in no group); 'targets' pools the targets as H1's micro (baseline excluded)",
        "middle_vs_edges: middle - mean(begin, end) inside each bootstrap replicate; a negative score "
        "contrast means the middle scores lowest, a positive gap contrast that the cross-lingual gap is "
        "largest in the middle; 'low minus high' compares that gap contrast between language groups",
        "parse-failure rule A: a prediction that is not ok scores 0",
    ]
    if n_docs < ctx.min_articles:
        caveats.append(
            f"only {n_docs} document(s) < study.min_articles = {ctx.min_articles}: every interval is "
            "withheld and the estimates are descriptive (not identifiable)"
        )
    if len(unpaired):
        tasks = ", ".join(
            f"{t} ({int(n)} rows)" for t, n in unpaired.groupby("task", observed=True)["rows"].sum().items()
        )
        caveats.append(
            f"rows without an English counterpart of their task are in scores but not in gaps: {tasks}"
        )
    if agreement is None:
        caveats.append("judge agreement: no paragraph-filling judgements with a total")
    else:
        caveats.append(f"ICC not computed: {agreement['icc_reason']}")
    if corr_reason:
        caveats.append(f"human-vs-judge correlation: {corr_reason}")
    elif correlation is not None and correlation["simulated"]:
        caveats.append(
            "human-vs-judge correlation: computed on SIMULATED ratings (the demo's simulated annotator, "
            "validation/demo_annotations), not human judgments"
        )
    results: dict[str, Any] = {
        "status": "ok",
        "reason": None,
        "documents": documents_summary(documents),
        "scores": score_records,
        "gaps": _gap_records(gap_tables, config),
        "position_curve": curve,
        "middle_vs_edges": contrasts,
        "heatmap": _heatmap(gap_tables),
        "no_context": no_context,
        "cloze_errors": cloze_error_shares(judgements),
        "judge_agreement": agreement,
        "human_judge_correlation": correlation,
        "human_judge_correlation_reason": corr_reason,
        "prompt_tokens_by_task": prompt_tokens_by_task(calls, predictions),
        "unpaired": _records(unpaired, ["task", "language", "rows"]),
        "settings": {
            "replicates": ctx.replicates,
            "seed": ctx.seed,
            "confidence": ctx.confidence,
            "min_documents": ctx.min_articles,
            "documents": n_docs,
            "reference": ctx.roles.reference,
            "language_groups": {name: list(classes) for name, classes in LANGUAGE_GROUPS},
            "rows": len(full),
        },
        "caveats": caveats,
    }
    return GranularityAnalysis(results, est.frame())


# --------------------------------------------------------------------------------------------
# Synthetic task scores (tests and bench/bench_granularity.py)
# --------------------------------------------------------------------------------------------


def synthetic_task_scores(
    languages: Sequence[str],
    *,
    reference: str = "en",
    models: Sequence[str] = ("m1",),
    n_documents: int = 12,
    gaps: Mapping[str, float] | None = None,
    middle_penalty: Mapping[str, float] | None = None,
    base: float = 0.7,
    no_context_drop: float = 0.3,
    noise: float = 0.0,
    per_position: int = 1,
    seed: int = 0,
) -> pd.DataFrame:
    """A ``task_scores``-shaped frame with known effects, one row per task x language x model x context.

    Per document: ``per_position`` word_single_qa, word_multi_qa and cloze tasks at every region x
    position (accuracy; 54 tasks with ``per_position=2``), two
    paragraph_fill tasks per region (rouge_l, judge_total), one summary (rouge_l) and one
    translation (bleu, no English row). A row's score is ``base - gaps[language] -
    middle_penalty[language] (region middle) - no_context_drop (context none) + noise``, clipped
    to [0, 1]; with ``noise=0`` every estimate is known exactly.
    """
    gaps = dict(gaps or {})
    middle_penalty = dict(middle_penalty or {})
    rng = np.random.default_rng(seed)
    tasks: list[tuple[str, str, str | None, str | None, str]] = []
    for region in POSITIONS:
        for position in POSITIONS:
            for _ in range(per_position):
                tasks.append(("word_single_qa", "word", region, position, "accuracy"))
                tasks.append(("word_multi_qa", "word", region, position, "accuracy"))
                tasks.append(("cloze", "sentence", region, position, "accuracy"))
        for position in ("begin", "end"):
            tasks.append(("paragraph_fill", "paragraph", region, position, "rouge_l"))
    tasks.append(("summary", "document", None, None, "rouge_l"))
    tasks.append(("translation", "document", None, None, "bleu"))
    task_frame = pd.DataFrame(tasks, columns=["task", "granularity", "region", "position", "metric"])
    task_frame["t"] = np.arange(len(task_frame))
    # One cross join (documents x tasks x languages x models x contexts) instead of a Python
    # loop, so the benchmark's study-scale frame is built in about a second.
    parts = [
        pd.DataFrame({"doc_id": [f"doc{d:03d}" for d in range(n_documents)]}),
        task_frame,
        pd.DataFrame({"language": list(languages)}),
        pd.DataFrame({"model": list(models)}),
        pd.DataFrame({"context": ["full", "none"]}),
    ]
    frame = parts[0]
    for part in parts[1:]:
        frame = frame.merge(part, how="cross")
    frame = frame.loc[~((frame["task"] == "translation") & (frame["language"] == reference))]
    frame = frame.reset_index(drop=True)
    t = frame.pop("t").map("{:02d}".format)
    frame["task_id"] = frame["doc_id"] + "-t" + t
    frame["group_id"] = frame["doc_id"] + "-g" + t
    frame["rep"] = 0
    value = base - frame["language"].map(lambda iso: gaps.get(iso, 0.0)).to_numpy(dtype=np.float64)
    middle = frame["language"].map(lambda iso: middle_penalty.get(iso, 0.0)).to_numpy(dtype=np.float64)
    value = value - np.where((frame["region"] == "middle").to_numpy(), middle, 0.0)
    value = value - np.where((frame["context"] == "none").to_numpy(), no_context_drop, 0.0)
    if noise:
        value = value + rng.normal(0, noise, size=len(frame))
    frame["score"] = np.clip(value, 0.0, 1.0)
    frame["status"] = "ok"
    order = [
        "model", "language", "doc_id", "task_id", "group_id", "task", "context", "rep", "granularity",
        "region", "position", "metric", "score", "status",
    ]  # fmt: skip
    frame = frame[order]
    for metric in EXTRA_METRICS:
        frame[metric] = np.where(frame["metric"] == metric, frame["score"], np.nan)
    fill = (frame["task"] == "paragraph_fill").to_numpy()
    frame["judge_total"] = np.where(fill, 100.0 * frame["score"], np.nan)
    return frame
