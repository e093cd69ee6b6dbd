"""Article-cluster bootstrap machinery.

Hand-written on purpose: no maintained library resamples clusters through per-cluster
sufficient statistics, and resampling 800k rows 2,000 times is far too slow. Rows are
reduced once to a dense ``articles x cells`` matrix of sums and counts; a replicate is a
vector of article multiplicities, so every replicate's sums and counts come from a single
matrix product and any estimand that is a function of cell means is evaluated on all
replicates at once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from clcg_pipeline.storage import finite

if TYPE_CHECKING:  # _context imports this module; the wrapper only calls the context's methods
    from clcg_pipeline.analysis._context import SuiteContext

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
    frame: pd.DataFrame,
    cell_cols: list[str],
    *,
    value_col: str = "y",
    cluster_col: str = "doc_id",
    presorted: bool = False,
) -> ClusterTable:
    """Reduce rows to per-article sums and counts for every combination of ``cell_cols``.

    Rows are sorted by (cell, value) before summing so that floating-point sums are
    independent of input row order (bit-for-bit reproducible from any file layout).
    ``presorted``: the rows already come in an order fixed by their content (the suite's
    canonical order, or any subset of it), so they are summed in that order without the sort.
    """
    if frame.empty:
        return _empty_table(cell_cols)
    values = frame[value_col].to_numpy(dtype=np.float64)
    flat, articles, cells = _cluster_codes(frame, cell_cols, cluster_col)
    # bincount adds each bin's rows in input order; visiting the rows by ascending value makes
    # every bin's sum the sum of its values in ascending order (the (cell, value) sort's order),
    # at the cost of one sort of the values. Equal values are interchangeable, so no stable sort.
    if not presorted:
        order = np.argsort(values)
        flat, values = flat[order], values[order]
    return _tables_of(flat, articles, cells, [values])[0]


def cluster_tables(
    frame: pd.DataFrame, cell_cols: list[str], values: Sequence[np.ndarray], *, cluster_col: str = "doc_id"
) -> list[ClusterTable]:
    """``cluster_table(presorted=True)`` of ``frame`` with each of ``values`` as ``y``, bit for bit:
    the rows are coded once for all (issue 37), and the tables share one ``counts`` array."""
    if frame.empty:
        return [_empty_table(cell_cols) for _ in values]
    flat, articles, cells = _cluster_codes(frame, cell_cols, cluster_col)
    return _tables_of(flat, articles, cells, [np.asarray(v, dtype=np.float64) for v in values])


def _empty_table(cell_cols: list[str]) -> ClusterTable:
    cells = pd.DataFrame({c: pd.Series([], dtype=object) for c in cell_cols})
    return ClusterTable(np.array([], dtype=object), cells, np.zeros((0, 0)), np.zeros((0, 0)))


def _cluster_codes(
    frame: pd.DataFrame, cell_cols: list[str], cluster_col: str
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """Each row's ``article * cells + cell`` code, the sorted article ids and the cells."""
    art_codes, articles = sorted_factorize(frame[cluster_col], narrow=True)
    if (art_codes < 0).any():
        _missing_error(frame, cluster_col, art_codes)
    if cell_cols:
        cell_codes, cell_index = _factorize_rows(frame, cell_cols)
    else:
        cell_codes = np.zeros(len(frame), dtype=np.int64)
        cell_index = pd.DataFrame(index=[0])
    # In place: one int64 array over the rows rather than three (the product, the sum).
    flat = art_codes.astype(np.int64)
    del art_codes
    flat *= len(cell_index)
    flat += cell_codes
    return flat, articles, cell_index.reset_index(drop=True)


def _tables_of(
    flat: np.ndarray, articles: np.ndarray, cells: pd.DataFrame, values: list[np.ndarray]
) -> list[ClusterTable]:
    """One table per value array over the row codes ``flat`` (counts computed once, shared)."""
    n_a, n_c = len(articles), len(cells)
    counts = np.bincount(flat, minlength=n_a * n_c).reshape(n_a, n_c).astype(np.float64)
    ids = np.asarray(articles, dtype=object)
    return [
        ClusterTable(ids, cells, np.bincount(flat, weights=v, minlength=n_a * n_c).reshape(n_a, n_c), counts)
        for v in values
    ]


def _missing_error(frame: pd.DataFrame, col: str, codes: np.ndarray) -> None:
    bad = np.flatnonzero(codes < 0)
    first = frame.iloc[int(bad[0])]
    ident = {k: str(first[k]) for k in ("model", "language", "doc_id", "item_id") if k in frame.columns}
    raise ValueError(
        f"column {col!r} is missing in {len(bad)} row(s); first at row {frame.index[int(bad[0])]} {ident}"
    )


def sorted_factorize(series: pd.Series, *, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Codes and uniques with uniques sorted by their string form.

    ``pd.factorize(sort=True)`` sorts a categorical by its category order, which for Arrow
    dictionaries is order of appearance; sorting the strings makes codes independent of how
    the column was stored. ``narrow``: a categorical's codes in the smallest signed integer
    type that holds them (int64 otherwise), for a caller that only folds them into its own
    int64 key: one int64 array over millions of rows less at the peak (issue 37).
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        return _sorted_categorical(series, narrow)
    codes, uniques = pd.factorize(series)
    uniq = np.asarray(uniques, dtype=object)
    order = np.argsort(uniq.astype(str), kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes >= 0, rank[np.maximum(codes, 0)], -1), uniq[order]


def _sorted_categorical(series: pd.Series, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sorted_factorize` of a categorical from its codes: no hashing of every row.

    The categories present (a count per category) sorted by their string form; a category
    without rows is left out, as factorizing the values leaves it out.
    """
    codes = series.cat.codes.to_numpy()
    categories = np.asarray(series.cat.categories, dtype=object)
    missing = codes < 0
    has_missing = bool(missing.any())
    present = np.flatnonzero(
        np.bincount(codes[~missing] if has_missing else codes, minlength=len(categories))
    )
    uniq = categories[present]
    order = np.argsort(uniq.astype(str), kind="stable")
    dtype = np.min_scalar_type(-len(categories) - 1) if narrow else np.int64
    if not has_missing and len(order) == len(categories) and (order == np.arange(len(order))).all():
        # Every category present and already in string order (e.g. ids written in order): the
        # codes are their own ranks, copied rather than looked up row by row (issue 37).
        return codes.astype(dtype), uniq
    rank = np.full(len(categories) + 1, -1, dtype=dtype)  # the last slot: a missing value
    rank[present[order]] = np.arange(len(order))
    return rank[np.where(missing, len(categories), codes) if has_missing else codes], uniq[order]


def _factorize_rows(frame: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Codes of each row's cell, cells sorted lexicographically by ``cols``."""
    # Folded one column at a time (most significant first), so only one column's row codes
    # exist beside the combined code: not one int64 array per column over millions of rows.
    combined = np.zeros(len(frame), dtype=np.int64)
    per_col: list[np.ndarray] = []
    for col in cols:
        codes, uniques = sorted_factorize(frame[col], narrow=True)
        if (codes < 0).any():
            _missing_error(frame, col, codes)
        combined *= len(uniques)
        combined += codes
        per_col.append(np.asarray(uniques, dtype=object))
        del codes
    sizes = [len(u) for u in per_col]
    used, cell_codes = dense_unique(combined, math.prod(sizes), narrow=True)
    del combined
    parts: dict[str, np.ndarray] = {}
    rest = used.copy()
    for col, uniques, size in reversed(list(zip(cols, per_col, sizes, strict=True))):
        parts[col] = uniques[rest % size]
        rest = rest // size
    # The codes as dense_unique gives them (int32 for a small code space): the caller adds
    # them into its own int64 key, so an int64 copy over every row is not needed.
    return cell_codes, pd.DataFrame({c: parts[c] for c in cols})


def dense_unique(codes: np.ndarray, space: int, *, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in ``range(space)``.

    When the code space is small (the cells of a table: models x languages x a few levels) the
    used codes are found by one counting pass instead of a sort of every row. ``narrow``: the
    inverse as int32 there (the values are the same; half the memory over every row).
    """
    if space > max(4 * len(codes), 1 << 20):
        used, inverse = np.unique(codes, return_inverse=True)
        return used, inverse.ravel()
    present = np.bincount(codes, minlength=space) > 0
    used = np.flatnonzero(present)
    rank = np.cumsum(present) - 1
    if narrow and space < 2**31:
        rank = rank.astype(np.int32)
    return used, rank[codes]


@dataclass(frozen=True)
class Replicates:
    """Point and replicate sums/counts per cell: row 0 of ``sums``/``counts`` is the full sample."""

    cells: pd.DataFrame
    sums: np.ndarray
    counts: np.ndarray

    @property
    def n_replicates(self) -> int:
        return self.sums.shape[0] - 1


def replicate(table: ClusterTable, weights: np.ndarray, *, counts: np.ndarray | None = None) -> Replicates:
    """Full-sample row plus one row per replicate, by one matrix product each for sums and counts.
    ``counts``: a table's over the same rows and ``weights``, taken instead of computed again."""
    point_s = table.sums.sum(axis=0, keepdims=True)
    if table.sums.size == 0:
        point_c = table.counts.sum(axis=0, keepdims=True)
        zeros = np.zeros((weights.shape[0], table.sums.shape[1]))
        return Replicates(table.cells, np.vstack([point_s, zeros]), np.vstack([point_c, zeros]))
    if counts is None:
        counts = _point_first(table.counts.sum(axis=0, keepdims=True), weights, table.counts)
    return Replicates(table.cells, _point_first(point_s, weights, table.sums), counts)


def _point_first(point: np.ndarray, weights: np.ndarray, per_article: np.ndarray) -> np.ndarray:
    """``vstack([point, weights @ per_article])`` written in place: the replicates' product is
    the largest array of a panel (replicates x cells), and stacking it copied it once more."""
    out = np.empty(
        (weights.shape[0] + 1, per_article.shape[1]), dtype=np.result_type(point, weights, per_article)
    )
    out[0] = point[0]
    np.matmul(weights, per_article, out=out[1:])
    return out


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
    kept = reps[np.isfinite(reps)]
    if kept.size == 0:
        return (float("nan"), float("nan"))
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(kept, [100 * alpha, 100 * (1 - alpha)])
    return (float(low), float(high))


def bootstrap_p(reps: np.ndarray, alternative: Alternative) -> float:
    """Bootstrap p for H0 ``theta = 0`` from the replicate distribution of the contrast.

    One-sided ``greater`` is the share of replicates at or below zero (with the usual +1
    correction so p is never exactly 0); ``two-sided`` doubles the smaller tail.
    """
    kept = reps[np.isfinite(reps)]
    b = kept.size
    if b == 0:
        return float("nan")
    low = (1 + np.count_nonzero(kept <= 0)) / (b + 1)
    high = (1 + np.count_nonzero(kept >= 0)) / (b + 1)
    if alternative == "greater":
        return float(min(1.0, low))
    if alternative == "less":
        return float(min(1.0, high))
    return float(min(1.0, 2 * min(low, high)))


def summarize(values: np.ndarray, confidence: float) -> dict[str, float | None]:
    """``{estimate, ci_low, ci_high}`` from a point-then-replicates vector; NaN becomes None."""
    low, high = percentile_ci(values[1:], confidence)
    return {"estimate": finite(values[0]), "ci_low": finite(low), "ci_high": finite(high)}


# --------------------------------------------------------------------------------------------
# One bootstrap per analysis, whatever its cluster unit
# --------------------------------------------------------------------------------------------


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator`` element-wise, NaN where the denominator is not positive."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator, 1.0), np.nan)


@dataclass(frozen=True)
class ClusterCells:
    """Per-cell sums and counts for the full sample (row 0) and every replicate.

    ``cluster_counts`` is the full sample's ``clusters x cells`` row counts, for the number
    of clusters (articles, documents...) behind any set of cells.
    """

    cells: pd.DataFrame
    sums: np.ndarray
    counts: np.ndarray
    cluster_counts: np.ndarray

    @property
    def means(self) -> np.ndarray:
        """Cell means, point then replicates (NaN where a replicate has no row in the cell)."""
        return ratio(self.sums, self.counts)

    @property
    def n(self) -> np.ndarray:
        """Full-sample rows per cell."""
        return self.cluster_counts.sum(axis=0)

    def sum_over(self, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """Point-then-replicate sum over the cells ``idx``."""
        return self.sums[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def count_over(self, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """Point-then-replicate row count over the cells ``idx``."""
        return self.counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def n_clusters(self, idx: Sequence[int] | np.ndarray) -> int:
        """Clusters with a row in any of the cells ``idx``."""
        if len(idx) == 0 or self.cluster_counts.size == 0:
            return 0
        return int((self.cluster_counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1) > 0).sum())

    def where(self, **match: object) -> np.ndarray:
        """Indices of the cells whose columns equal ``match`` (compared as strings)."""
        mask = np.ones(len(self.cells), dtype=bool)
        for column, value in match.items():
            mask &= (self.cells[column].astype(str) == str(value)).to_numpy()
        return np.flatnonzero(mask)

    def column(self, **match: object) -> int | None:
        """Index of the first cell matching ``match`` (None when there is none)."""
        hits = self.where(**match)
        return int(hits[0]) if len(hits) else None


def concat_cells(parts: Sequence[ClusterCells]) -> ClusterCells:
    """Side by side: cells over the same clusters and replicates (e.g. groups and targets)."""
    parts = [p for p in parts if len(p.cells)]
    if not parts:
        raise ValueError("concat_cells: nothing to concatenate")
    return ClusterCells(
        pd.concat([p.cells for p in parts], ignore_index=True),
        np.hstack([p.sums for p in parts]),
        np.hstack([p.counts for p in parts]),
        np.hstack([p.cluster_counts for p in parts]),
    )


@dataclass(frozen=True)
class FineTable:
    """A cluster table at the finest grain; :meth:`cells` sums its columns into coarser cells.

    One ``cluster_table`` pass over the rows (the costly part at study scale) serves every
    grouping: coarser cells are column sums of the ``clusters x cells`` matrices, which are
    small, so the sums and counts are those of a ``cluster_table`` over the coarser columns.
    """

    table: ClusterTable
    weights: np.ndarray
    boot: ClusterBootstrap

    def cells(
        self,
        keep: Sequence[str],
        *,
        where: Mapping[str, Sequence[Any]] | None = None,
        relabel: Mapping[str, Mapping[Any, Any]] | None = None,
        constant: Mapping[str, Any] | None = None,
    ) -> ClusterCells:
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
        if len(sel) == 0 or self.table.sums.size == 0:
            return self._empty([*keep, *(constant or {})])
        codes, cells = _group_codes(labels.iloc[sel].reset_index(drop=True), keep)
        for col, value in (constant or {}).items():
            cells[col] = value
        order = np.argsort(codes, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
        sums = np.add.reduceat(self.table.sums[:, sel[order]], starts, axis=1)
        counts = np.add.reduceat(self.table.counts[:, sel[order]], starts, axis=1)
        coarse = ClusterTable(self.table.articles, cells.reset_index(drop=True), sums, counts)
        rep = replicate(coarse, self.weights)
        return ClusterCells(rep.cells, rep.sums, rep.counts, counts)

    def _empty(self, columns: list[str]) -> ClusterCells:
        empty = pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
        none = np.zeros((self.boot.n_replicates + 1, 0))
        return ClusterCells(empty, none, none.copy(), np.zeros((len(self.table.articles), 0)))


def _group_codes(labels: pd.DataFrame, keep: Sequence[str]) -> tuple[np.ndarray, pd.DataFrame]:
    """Each label row's group code and the groups, sorted by ``keep`` (one group without keys)."""
    if not keep:
        return np.zeros(len(labels), dtype=np.int64), pd.DataFrame(index=[0])
    grouped = labels.groupby(list(keep), sort=True, dropna=False)
    return grouped.ngroup().to_numpy(), grouped.size().reset_index()[list(keep)]


class ClusterBootstrap:
    """One multiplicity matrix over the sorted cluster ids, shared by every table of one analysis.

    Every contrast is thus taken inside the same replicate, and every estimand is qualified by
    the suite's identifiability rule (``SuiteContext.qualify``). ``unit`` names the clusters in
    the results: ``"articles"`` (the study's own) keeps ``n_articles``; any other unit
    (``"documents"``) renames the count to ``n_<unit>``, placed last, and is passed to the rule
    (``withheld_reason(unit=)``), whose reason then says ``too few <unit>``.
    """

    def __init__(
        self,
        cluster_ids: Iterable[object],
        ctx: SuiteContext,
        *,
        unit: str = "articles",
        cluster_col: str = "doc_id",
    ) -> None:
        self.ctx = ctx
        self.unit = unit
        self.cluster_col = cluster_col
        self.clusters = np.array(sorted({str(c) for c in cluster_ids}), dtype=object)
        self.weights = draw_multiplicities(len(self.clusters), ctx.replicates, ctx.seed)

    @property
    def n_replicates(self) -> int:
        return int(self.weights.shape[0])

    def weights_for(self, table: ClusterTable) -> np.ndarray:
        """The multiplicity columns of ``table``'s clusters, so every table shares the same draws."""
        if table.sums.size == 0:
            return self.weights[:, :0]
        ids = table.articles.astype(str)
        # cluster_table sorts its ids by string, as self.clusters is: a table over a subset of
        # the clusters takes the matching columns.
        idx = np.searchsorted(self.clusters, ids)
        found = idx < len(self.clusters)
        if not found.all() or not (self.clusters[idx[found]] == ids[found]).all():
            unknown = sorted(set(ids) - set(self.clusters))
            raise ValueError(f"{self.cluster_col} not among the bootstrap's {self.unit}: {unknown[:5]}")
        return self.weights[:, idx]

    def cells(self, frame: pd.DataFrame, cell_cols: Sequence[str], value_col: str) -> ClusterCells:
        """Point-then-replicate sums and counts per cell of ``frame``, resampled by cluster."""
        table = cluster_table(frame, list(cell_cols), value_col=value_col, cluster_col=self.cluster_col)
        rep = replicate(table, self.weights_for(table))
        return ClusterCells(rep.cells, rep.sums, rep.counts, table.counts)

    def fine(self, frame: pd.DataFrame, dims: Sequence[str], value_col: str) -> FineTable:
        """Per-cluster sums at the finest grain ``dims``; every coarser table is derived from it."""
        table = cluster_table(frame, list(dims), value_col=value_col, cluster_col=self.cluster_col)
        return FineTable(table, self.weights_for(table), self)

    def summary(self, vec: np.ndarray, *, n: int, n_clusters: int) -> dict[str, Any]:
        """One qualified estimand from a point-then-replicates vector (``SuiteContext.summ``)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self._named(self.ctx.summ(vec, n=n, n_articles=n_clusters, sided=None, unit=self.unit))

    def summaries(
        self, vectors: np.ndarray, n: Sequence[int] | np.ndarray, n_clusters: Sequence[int] | np.ndarray
    ) -> list[dict[str, Any]]:
        """Qualified ``{estimate, ci_low, ci_high, n, n_<unit>, ...}`` per column of ``vectors``."""
        conf = self.ctx.confidence
        reps = vectors[1:]
        valid = np.isfinite(reps).sum(axis=0)
        lows, highs = _column_intervals(reps, valid, conf)
        out = []
        for j in range(vectors.shape[1]):
            entry: dict[str, Any] = {
                "estimate": finite(vectors[0, j]),
                "ci_low": finite(lows[j]),
                "ci_high": finite(highs[j]),
                "n": int(n[j]),
                "n_articles": int(n_clusters[j]),
                "valid_replicates": int(valid[j]),
            }
            out.append(self._named(self.ctx.qualify(entry, sided=None, unit=self.unit)))
        return out

    def table(self, cells: ClusterCells) -> pd.DataFrame:
        """One row per cell: the cell columns plus the qualified estimate."""
        if cells.cluster_counts.size:
            n_clusters = (cells.cluster_counts > 0).sum(axis=0)
        else:
            n_clusters = np.zeros(len(cells.cells))
        stats = self.summaries(cells.means, cells.n, n_clusters)
        return pd.concat([cells.cells.reset_index(drop=True), pd.DataFrame(stats)], axis=1)

    def _named(self, entry: dict[str, Any]) -> dict[str, Any]:
        """The count under this bootstrap's unit (``n_documents``); the rule, asked with ``unit=``,
        already named it in the reason."""
        if self.unit == "articles":
            return entry
        entry[f"n_{self.unit}"] = entry.pop("n_articles")
        return entry


def _column_intervals(
    reps: np.ndarray, valid: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of every column of ``reps`` over its finite replicates (NaN if none)."""
    lows = np.full(reps.shape[1], np.nan)
    highs = np.full(reps.shape[1], np.nan)
    # np.nanpercentile loops over columns in Python; columns without NaN (nearly all) go
    # through one vectorized np.percentile, the same interpolation as percentile_ci.
    whole = valid == reps.shape[0]
    if whole.any() and reps.shape[0]:
        q = [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2]
        lows[whole], highs[whole] = np.percentile(reps[:, whole], q, axis=0)
    for j in np.flatnonzero(~whole & (valid > 0)):
        lows[j], highs[j] = percentile_ci(reps[:, j], confidence)
    return lows, highs
