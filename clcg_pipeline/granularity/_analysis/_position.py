"""The position curve (score and gap by region x paragraph position per language group) and the
middle-versus-edges contrasts, each taken inside every bootstrap replicate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, ClusterCells, FineTable, concat_cells
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis._estimates import STAT_KEYS, Estimates, plain
from clcg_pipeline.granularity._analysis._gaps import language_modes
from clcg_pipeline.granularity._analysis._rows import (
    ALL,
    GRANULARITY_ORDER,
    LANGUAGE_GROUPS,
    NO_POSITION,
    POSITIONS,
    REFERENCE_GROUP,
    TARGETS,
)

_CURVE_KEYS = ["granularity", "metric", "region", "position", "lgroup"]
_NOT_ALL_POSITIONS = "not identifiable: begin, middle and end are not all present"


@dataclass(frozen=True)
class _Grouping:
    """Cells per Joshi-class group (and the reference) plus the pooled targets, side by side."""

    regions: list[str]
    modes: Mapping[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]

    def cells(self, fine: FineTable, keep: list[str], extra: Mapping[str, Sequence[Any]]) -> ClusterCells:
        parts = []
        for mode in ("group", TARGETS):
            where, relabel, constant = self.modes[mode]
            cells_keep = keep if not constant else [k for k in keep if k != "language"]
            parts.append(
                fine.cells(
                    cells_keep,
                    where={**where, **extra, "region": self.regions},
                    relabel=relabel,
                    constant=constant,
                )
            )
        parts = [p for p in parts if len(p.cells)]
        out = concat_cells(parts) if parts else fine.cells(keep, where={"region": []})
        return ClusterCells(
            out.cells.rename(columns={"language": "lgroup"}), out.sums, out.counts, out.cluster_counts
        )


def position_curve(
    sfine: FineTable, gfine: FineTable | None, config: ProjectConfig, est: Estimates
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Score and gap by region x paragraph position per language group, and the middle contrasts."""
    regions = [r for r in set(sfine.table.cells["region"]) if r != NO_POSITION]
    if not regions:
        return [], []
    grouping = _Grouping(regions, language_modes(config, reference_group=True))
    curve, s_tab = _curve(sfine, gfine, grouping, est)
    pairs = sorted(
        set(zip(s_tab["granularity"], s_tab["metric"], strict=True)), key=lambda gm: gran_key(tuple(gm))
    )
    contrasts: list[dict[str, Any]] = []
    for axis, other in (("region", "position"), ("position", "region")):
        keep = ["granularity", "metric", axis, "language"]
        sc = grouping.cells(sfine, keep, {"primary": [True]})
        gc = grouping.cells(gfine, keep, {}) if gfine is not None else None
        for g, m in pairs:
            contrasts += _middle_contrasts(sfine.boot, sc, gc, (g, m), (axis, other), est)
    return curve, contrasts


def _curve(
    sfine: FineTable, gfine: FineTable | None, grouping: _Grouping, est: Estimates
) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """The curve's records (score beside gap per cell) and the score table the contrasts use."""
    curve_dims = ["granularity", "metric", "region", "position", "language"]
    s_cells = grouping.cells(sfine, curve_dims, {"primary": [True]})
    g_cells = grouping.cells(gfine, curve_dims, {}) if gfine is not None else None
    s_tab = sfine.boot.table(s_cells)
    if g_cells is not None and len(g_cells.cells):
        g_tab = sfine.boot.table(g_cells)
    else:
        g_tab = pd.DataFrame(columns=[*_CURVE_KEYS, "estimate", *STAT_KEYS])
    merged = s_tab[[*_CURVE_KEYS, "estimate"]].rename(columns={"estimate": "score"})
    merged = merged.merge(
        g_tab.rename(columns={"estimate": "gap"})[[*_CURVE_KEYS, "gap", *STAT_KEYS]],
        on=_CURVE_KEYS,
        how="left",
    )
    curve = []
    for rec in merged.to_dict(orient="records"):
        row = {"language_group": rec.pop("lgroup"), **{k: plain(v) for k, v in rec.items()}}
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
    return curve, s_tab


def _middle_contrasts(
    boot: ClusterBootstrap,
    sc: ClusterCells,
    gc: ClusterCells | None,
    gran_metric: tuple[str, str],
    axes: tuple[str, str],
    est: Estimates,
) -> list[dict[str, Any]]:
    """Middle minus edges of one granularity x metric along ``axes[0]``, per language group, then
    the gap contrast's low-minus-high difference when both groups have it."""
    (g, m), (axis, other) = gran_metric, axes
    out: list[dict[str, Any]] = []
    gap_vec: dict[str, tuple[np.ndarray, list[int]]] = {}
    for grp in sorted(set(sc.cells["lgroup"]), key=group_key):
        entry: dict[str, Any] = {
            "granularity": g,
            "metric": m,
            "axis": axis,
            "pooled_over": other,
            "language_group": grp,
            "score_contrast": stats_of(boot, sc, contrast(sc, axis, granularity=g, metric=m, lgroup=grp)),
            "gap_contrast": None,
        }
        if gc is not None and len(gc.cells) and grp != REFERENCE_GROUP:
            found = contrast(gc, axis, granularity=g, metric=m, lgroup=grp)
            entry["gap_contrast"] = stats_of(boot, gc, found)
            if found is not None:
                gap_vec[grp] = found
        out.append(entry)
        where = {"granularity": g, "metric": m, axis: "middle-edges", "language": grp, "model": ALL}
        est.add("middle_minus_edges_score", entry["score_contrast"], where)
        if entry["gap_contrast"] is not None:
            est.add("middle_minus_edges_gap", entry["gap_contrast"], where)
    if gc is not None and "low" in gap_vec and "high" in gap_vec:
        stats = _low_minus_high(boot, gc, gap_vec["low"], gap_vec["high"])
        out.append(
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
        where = {"granularity": g, "metric": m, axis: "middle-edges", "language": "low-high", "model": ALL}
        est.add("middle_excess_low_minus_high", stats, where)
    return out


def _low_minus_high(
    boot: ClusterBootstrap,
    gc: ClusterCells,
    low: tuple[np.ndarray, list[int]],
    high: tuple[np.ndarray, list[int]],
) -> dict[str, Any]:
    """The low group's gap contrast minus the high group's, replicate by replicate."""
    vec = low[0] - high[0]
    cols = sorted(set(low[1]) | set(high[1]))
    (stats,) = boot.summaries(vec[:, None], [int(gc.n[cols].sum())], [gc.n_clusters(cols)])
    return stats


def contrast(cells: ClusterCells, axis: str, **where: str) -> tuple[np.ndarray, list[int]] | None:
    """``middle - (begin + end) / 2`` along the cells' ``axis`` column (None when a position is absent)."""
    cols = [cells.column(**where, **{axis: p}) for p in POSITIONS]
    found = [c for c in cols if c is not None]
    if len(found) < len(POSITIONS):
        return None
    means = cells.means  # computed on each access: once here
    b, m, e = (means[:, c] for c in found)
    return m - (b + e) / 2.0, found


def stats_of(boot: ClusterBootstrap, cells: ClusterCells, found: tuple[np.ndarray, list[int]] | None) -> dict:
    if found is None:
        return {
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "identifiable": False,
            "reason": _NOT_ALL_POSITIONS,
            "flags": [],
        }
    vec, cols = found
    (stats,) = boot.summaries(vec[:, None], [int(cells.n[cols].sum())], [cells.n_clusters(cols)])
    return stats


def gran_key(item: tuple[str, ...]) -> tuple[int, str]:
    """Granularities in the study's order (word to document), then by label."""
    g = item[0]
    return (GRANULARITY_ORDER.index(g) if g in GRANULARITY_ORDER else len(GRANULARITY_ORDER), "|".join(item))


def group_key(name: str) -> tuple[int, str]:
    """Reference first, then high, mid, low and the pooled targets."""
    order = [REFERENCE_GROUP, *(n for n, _ in LANGUAGE_GROUPS), TARGETS]
    return (order.index(name) if name in order else len(order), name)
