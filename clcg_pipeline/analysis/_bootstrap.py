"""Article-cluster bootstrap machinery (STUDY.md section 6).

Hand-written on purpose: no maintained library resamples clusters through per-cluster
sufficient statistics, and resampling 800k rows 2,000 times is far too slow. Rows are
reduced once to a dense ``articles x cells`` matrix of sums and counts; a replicate is a
vector of article multiplicities, so every replicate's sums and counts come from a single
matrix product and any estimand that is a function of cell means is evaluated on all
replicates at once.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

Alternative = Literal["greater", "less", "two-sided"]


def draw_multiplicities(n_clusters: int, replicates: int, seed: int) -> np.ndarray:
    """``replicates x n_clusters`` multiplicities: each row draws ``n_clusters`` ids with replacement.

    Drawn with ``default_rng(seed).integers`` and counted with one ``bincount``, so the same
    seed and cluster count give the same matrix on every run.
    """
    if n_clusters <= 0 or replicates <= 0:
        return np.zeros((max(replicates, 0), max(n_clusters, 0)), dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(replicates, n_clusters))
    offsets = (np.arange(replicates, dtype=np.int64) * n_clusters)[:, None]
    counts = np.bincount((draws + offsets).ravel(), minlength=replicates * n_clusters)
    return counts.reshape(replicates, n_clusters).astype(np.float64)


@dataclass(frozen=True)
class ClusterTable:
    """Per-article sufficient statistics of one analysis subset.

    ``sums`` and ``counts`` are ``articles x cells``; ``cells`` names each column (one row per
    cell, with the grouping columns used to build it). ``articles`` is sorted, so the table
    does not depend on input row order.
    """

    articles: np.ndarray
    cells: pd.DataFrame
    sums: np.ndarray
    counts: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.counts.sum())


def cluster_table(
    frame: pd.DataFrame, cell_cols: list[str], *, value_col: str = "y", cluster_col: str = "doc_id"
) -> ClusterTable:
    """Reduce rows to per-article sums and counts for every combination of ``cell_cols``.

    Rows are sorted by (cell, value) before summing so that floating-point sums are
    independent of input row order (bit-for-bit reproducible from any file layout).
    """
    if frame.empty:
        cells = pd.DataFrame({c: pd.Series([], dtype=object) for c in cell_cols})
        return ClusterTable(np.array([], dtype=object), cells, np.zeros((0, 0)), np.zeros((0, 0)))
    art_codes, articles = sorted_factorize(frame[cluster_col])
    if (art_codes < 0).any():
        _missing_error(frame, cluster_col, art_codes)
    if cell_cols:
        cell_codes, cell_index = _factorize_rows(frame, cell_cols)
    else:
        cell_codes = np.zeros(len(frame), dtype=np.int64)
        cell_index = pd.DataFrame(index=[0])
    n_a, n_c = len(articles), len(cell_index)
    flat = art_codes.astype(np.int64) * n_c + cell_codes
    values = frame[value_col].to_numpy(dtype=np.float64)
    order = np.lexsort((values, flat))
    flat, values = flat[order], values[order]
    sums = np.bincount(flat, weights=values, minlength=n_a * n_c).reshape(n_a, n_c)
    counts = np.bincount(flat, minlength=n_a * n_c).reshape(n_a, n_c).astype(np.float64)
    return ClusterTable(np.asarray(articles, dtype=object), cell_index.reset_index(drop=True), sums, counts)


def _missing_error(frame: pd.DataFrame, col: str, codes: np.ndarray) -> None:
    bad = np.flatnonzero(codes < 0)
    first = frame.iloc[int(bad[0])]
    ident = {k: str(first[k]) for k in ("model", "language", "doc_id", "item_id") if k in frame.columns}
    raise ValueError(
        f"column {col!r} is missing in {len(bad)} row(s); first at row {frame.index[int(bad[0])]} {ident}"
    )


def sorted_factorize(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes and uniques with uniques sorted by their string form.

    ``pd.factorize(sort=True)`` sorts a categorical by its category order, which for Arrow
    dictionaries is order of appearance; sorting the strings makes codes independent of how
    the column was stored.
    """
    codes, uniques = pd.factorize(series)
    uniq = np.asarray(uniques, dtype=object)
    order = np.argsort(uniq.astype(str), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes >= 0, rank[np.maximum(codes, 0)], -1), uniq[order]


def _factorize_rows(frame: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Codes of each row's cell, cells sorted lexicographically by ``cols``."""
    per_col = [sorted_factorize(frame[c]) for c in cols]
    for col, (codes, _) in zip(cols, per_col, strict=True):
        if (codes < 0).any():
            _missing_error(frame, col, codes)
    sizes = [len(u) for _, u in per_col]
    combined = np.zeros(len(frame), dtype=np.int64)
    for (codes, _), size in zip(per_col, sizes, strict=True):
        combined = combined * size + codes
    used, cell_codes = np.unique(combined, return_inverse=True)
    parts: dict[str, np.ndarray] = {}
    rest = used.copy()
    for col, (_, uniques), size in reversed(list(zip(cols, per_col, sizes, strict=True))):
        parts[col] = np.asarray(uniques, dtype=object)[rest % size]
        rest = rest // size
    return cell_codes.astype(np.int64), pd.DataFrame({c: parts[c] for c in cols})


@dataclass(frozen=True)
class Replicates:
    """Point and replicate sums/counts per cell: row 0 of ``sums``/``counts`` is the full sample."""

    cells: pd.DataFrame
    sums: np.ndarray
    counts: np.ndarray

    @property
    def n_replicates(self) -> int:
        return self.sums.shape[0] - 1


def replicate(table: ClusterTable, weights: np.ndarray) -> Replicates:
    """Full-sample row plus one row per replicate, by one matrix product each for sums and counts."""
    point_s = table.sums.sum(axis=0, keepdims=True)
    point_c = table.counts.sum(axis=0, keepdims=True)
    if table.sums.size == 0:
        zeros = np.zeros((weights.shape[0], table.sums.shape[1]))
        return Replicates(table.cells, np.vstack([point_s, zeros]), np.vstack([point_c, zeros]))
    return Replicates(
        table.cells,
        np.vstack([point_s, weights @ table.sums]),
        np.vstack([point_c, weights @ table.counts]),
    )


def pooled_mean(rep: Replicates, mask: np.ndarray) -> np.ndarray:
    """Mean over the cells in ``mask`` for the point estimate and every replicate (NaN if empty)."""
    s = rep.sums[:, mask].sum(axis=1)
    c = rep.counts[:, mask].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c > 0, s / np.where(c > 0, c, 1.0), np.nan)


def nanmean_rows(stack: list[np.ndarray]) -> np.ndarray:
    """Row-wise mean over the finite entries of several estimand vectors (NaN where none)."""
    if not stack:
        return np.array([np.nan])
    arr = np.column_stack(stack)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(arr, axis=1)


def fixed_mean_rows(stack: list[np.ndarray]) -> np.ndarray:
    """Row-wise mean of several estimand vectors; NaN in a row where any of them is NaN.

    The set being averaged is fixed by the full sample: a replicate that lacks one member is
    undefined (and dropped by :func:`percentile_ci` and :func:`bootstrap_p`), rather than
    averaged over a different set.
    """
    if not stack:
        return np.array([np.nan])
    return np.column_stack(stack).mean(axis=1)


def valid_replicates(values: np.ndarray) -> int:
    """Replicates (``values[1:]``) with a finite value: the ones intervals and p use."""
    return int(np.isfinite(values[1:]).sum())


def percentile_ci(reps: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile interval over the finite replicates (NaN, NaN when none are finite)."""
    finite = reps[np.isfinite(reps)]
    if finite.size == 0:
        return (float("nan"), float("nan"))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    return (float(low), float(high))


def bootstrap_p(reps: np.ndarray, alternative: Alternative) -> float:
    """Bootstrap p for H0 ``theta = 0`` from the replicate distribution of the contrast.

    One-sided ``greater`` is the share of replicates at or below zero (with the usual +1
    correction so p is never exactly 0); ``two-sided`` doubles the smaller tail.
    """
    finite = reps[np.isfinite(reps)]
    b = finite.size
    if b == 0:
        return float("nan")
    low = (1 + np.count_nonzero(finite <= 0)) / (b + 1)
    high = (1 + np.count_nonzero(finite >= 0)) / (b + 1)
    if alternative == "greater":
        return float(min(1.0, low))
    if alternative == "less":
        return float(min(1.0, high))
    return float(min(1.0, 2 * min(low, high)))


def summarize(values: np.ndarray, confidence: float) -> dict[str, float | None]:
    """``{estimate, ci_low, ci_high}`` from a point-then-replicates vector; NaN becomes None."""
    low, high = percentile_ci(values[1:], confidence)
    return {"estimate": _num(values[0]), "ci_low": _num(low), "ci_high": _num(high)}


def _num(x: float) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None
