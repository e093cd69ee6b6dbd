"""CLCG contrasts as vectorized functions of bootstrapped cell sums.

Every method returns a vector whose element 0 is the full-sample estimate and whose other
elements are the bootstrap replicates, all computed from the same article draws, so
identities such as ``net = raw - PT gap`` hold replicate by replicate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._bootstrap import (
    Replicates,
    cluster_table,
    cluster_tables,
    draw_multiplicities,
    fixed_mean_rows,
    pooled_mean,
    replicate,
)


@dataclass(frozen=True)
class Roles:
    """Which languages play which part in the contrasts."""

    reference: str
    baseline: str
    targets: tuple[str, ...]


class GapPanel:
    """Cell sums (cells carry at least ``model`` and ``language``) with the gap estimands."""

    def __init__(self, rep: Replicates, roles: Roles, article_counts: np.ndarray | None = None) -> None:
        self.rep = rep
        self.roles = roles
        # ``articles x cells`` full-sample row counts, for the article count of an estimand.
        self.article_counts = article_counts
        self._cols = {c: rep.cells[c].to_numpy() for c in rep.cells.columns}
        self._width = rep.sums.shape[1]
        # Sections ask for the same filters and means over and over (every model, pair and
        # level repeats the reference's): each is computed once per panel.
        self._masks: dict[tuple[str, object], np.ndarray] = {}
        self._means: dict[bytes, np.ndarray] = {}

    @property
    def size(self) -> int:
        return self.rep.sums.shape[0]

    def mask(self, **where: object) -> np.ndarray:
        """Cells matching every ``column=value`` (a value may be a list/tuple/set of values)."""
        m = np.ones(self._width, dtype=bool)
        for col, value in where.items():
            if value is None:
                continue
            m &= self._column_mask(col, value)
        return m

    def _column_mask(self, col: str, value: object) -> np.ndarray:
        """Cells whose ``col`` is ``value`` (or one of its values), cached; never written to."""
        many = isinstance(value, list | tuple | set | frozenset)
        try:
            key = (col, ("in", frozenset(cast(Iterable[object], value))) if many else value)
            hash(key)
        except TypeError:  # an unhashable value: computed every time
            return self._compute_mask(col, value, many)
        cached = self._masks.get(key)
        if cached is None:
            cached = self._masks[key] = self._compute_mask(col, value, many)
        return cached

    def _compute_mask(self, col: str, value: object, many: bool) -> np.ndarray:
        values = self._cols[col]
        if many and isinstance(value, list | tuple | set | frozenset):
            return np.isin(values, list(value))
        return np.asarray(values == value)

    def n(self, **where: object) -> int:
        """Rows (full sample) in the matching cells."""
        return int(self.rep.counts[0, self.mask(**where)].sum())

    def n_articles(self, **where: object) -> int:
        """Articles with at least one row (full sample) in the matching cells."""
        if self.article_counts is None or self.article_counts.size == 0:
            return 0
        return int((self.article_counts[:, self.mask(**where)].sum(axis=1) > 0).sum())

    def mean(self, language: str | list[str] | tuple[str, ...], **where: object) -> np.ndarray:
        """:func:`pooled_mean` over the matching cells (a fresh array: callers may write to it)."""
        mask = self.mask(language=language, **where)
        key = np.packbits(mask).tobytes() + self._width.to_bytes(8, "little")
        cached = self._means.get(key)
        if cached is None:
            cached = self._means[key] = pooled_mean(self.rep, mask)
        return cached.copy()

    def clcg(self, language: str, **where: object) -> np.ndarray:
        """``mean_en - mean_l``."""
        return self.mean(self.roles.reference, **where) - self.mean(language, **where)

    def micro(self, **where: object) -> np.ndarray:
        """English mean minus the mean of all pooled target rows (baseline excluded)."""
        return self.mean(self.roles.reference, **where) - self.mean(self.roles.targets, **where)

    def pt_gap(self, **where: object) -> np.ndarray:
        return self.clcg(self.roles.baseline, **where)

    def present_targets(self, **where: object) -> list[str]:
        """Targets with at least one full-sample row under ``where``, in panel order."""
        return [t for t in self.roles.targets if self.n(language=t, **where) > 0]

    def macro(self, targets: list[str] | None = None, **where: object) -> np.ndarray:
        """Average of the target CLCG_l over the targets present (or the ones given).

        The language set is fixed by the full sample; a replicate in which one of them has no
        row is undefined (NaN) and dropped, the suite's one rule for every contrast.
        """
        chosen = self.present_targets(**where) if targets is None else targets
        if not chosen:
            return np.full(self.size, np.nan)
        en = self.mean(self.roles.reference, **where)
        return fixed_mean_rows([en - self.mean(t, **where) for t in chosen])


def build_panel(
    rows: pd.DataFrame,
    roles: Roles,
    *,
    cell_cols: list[str],
    replicates: int,
    seed: int,
    weights: np.ndarray | None = None,
    presorted: bool = False,
) -> tuple[GapPanel, np.ndarray]:
    """Aggregate ``rows`` (with ``y``) per article x cell and bootstrap over its articles.

    Returns the panel and the article ids it resampled (sorted). ``weights`` may be passed to
    reuse a multiplicity matrix drawn for the same article list.
    """
    table = cluster_table(rows, cell_cols, presorted=presorted)
    if weights is None:
        weights = draw_multiplicities(len(table.articles), replicates, seed)
    return GapPanel(replicate(table, weights), roles, table.counts), table.articles


def build_panels(
    rows: pd.DataFrame,
    roles: Roles,
    values: Sequence[np.ndarray],
    *,
    cell_cols: list[str],
    replicates: int,
    seed: int,
) -> Iterator[GapPanel]:
    """:func:`build_panel` of ``rows`` (canonical order) with each of ``values`` as ``y``, in turn.

    The rows are reduced to codes once for all of them, and their replicate counts (the same
    rows, the same draws) are computed once and shared. One panel at a time: each is built when
    the next is asked for, so a caller that lets the last go holds one panel's sums at a time.
    """
    tables = cluster_tables(rows, cell_cols, values)
    del rows, values  # the row-level arrays go once reduced (this frame lives as long as the panels)
    weights = draw_multiplicities(len(tables[0].articles), replicates, seed) if tables else None
    counts = None
    while tables:
        table = tables.pop(0)
        rep = replicate(table, cast(np.ndarray, weights), counts=counts)
        counts = rep.counts
        panel = GapPanel(rep, roles, table.counts)
        # Not held here while the next panel is built: the caller decides how long each lives.
        del rep, table
        yield panel
        del panel
