"""The two bootstrap wrappers ClusterBootstrap replaced, as they were at commit 0afb915.

Kept verbatim (imports aside) as the reference the ClusterBootstrap tests compare against:
the error-taxonomy analysis's ``_Boot``/``_Cells`` (articles) and the granularity analysis's
``DocumentBootstrap``/``FineTable``/``Cells`` (documents). Not used by the product.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import (
    ClusterTable,
    Replicates,
    SuiteContext,
    cluster_table,
    draw_multiplicities,
    percentile_ci,
    replicate,
)
from clcg_pipeline.storage import finite as num

# --------------------------------------------------------------------------- taxonomy (articles)


class _Boot:
    """One set of article multiplicities shared by every estimand, plus the suite's qualify rule."""

    def __init__(self, articles: np.ndarray, inputs: Any, ctx: SuiteContext) -> None:
        self.position = {str(a): i for i, a in enumerate(articles)}
        self.weights = draw_multiplicities(len(articles), inputs.replicates, inputs.seed)
        self.ctx = ctx

    def cells(self, frame: pd.DataFrame, cell_cols: list[str], value_col: str) -> _Cells:
        """Point-then-replicate sums and counts per cell of ``frame``, resampled by article."""
        table = cluster_table(frame, cell_cols, value_col=value_col, cluster_col="doc_id")
        cols = np.array([self.position[str(a)] for a in table.articles], dtype=np.int64)
        weights = self.weights[:, cols] if len(cols) else np.zeros((self.weights.shape[0], 0))
        return _Cells(replicate(table, weights), table.counts)

    def summ(self, vec: np.ndarray, *, n: int, n_articles: int) -> dict[str, Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return self.ctx.summ(vec, n=n, n_articles=n_articles, sided=None)


@dataclass(frozen=True)
class _Cells:
    rep: Replicates
    article_counts: np.ndarray  # articles x cells, full sample

    @property
    def cells(self) -> pd.DataFrame:
        return self.rep.cells

    def sums(self, idx: np.ndarray | list[int]) -> np.ndarray:
        return self.rep.sums[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def counts(self, idx: np.ndarray | list[int]) -> np.ndarray:
        return self.rep.counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1)

    def n_articles(self, idx: np.ndarray | list[int]) -> int:
        """Articles with a row in any of the cells ``idx``."""
        if self.article_counts.size == 0:
            return 0
        return int((self.article_counts[:, np.asarray(idx, dtype=np.int64)].sum(axis=1) > 0).sum())

    def where(self, **match: object) -> np.ndarray:
        mask = np.ones(len(self.cells), dtype=bool)
        for column, value in match.items():
            mask &= (self.cells[column].astype(str) == str(value)).to_numpy()
        return np.flatnonzero(mask)


# --------------------------------------------------------------------------- granularity (documents)


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
