"""Scores and the paired cross-lingual gaps by granularity, language (group) and model; the
no-context drop; the heat map of the gaps by region."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.analysis import ClusterBootstrap, FineTable, roles_of
from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis._estimates import STAT_KEYS, Estimates, records
from clcg_pipeline.granularity._analysis._rows import (
    ALL,
    NO_POSITION,
    TARGETS,
    language_group,
    paired_context_rows,
)

SCORE_DIMS = ["task", "granularity", "metric", "region", "position", "language", "model"]


def score_tables(fine: FineTable, est: Estimates) -> list[dict[str, Any]]:
    """Score by task x granularity x region x position x language x model, and pooled over position."""
    tables = [fine.boot.table(fine.cells(SCORE_DIMS))]
    regions = [r for r in set(fine.table.cells["region"]) if r != NO_POSITION]
    pooled_cells = fine.cells(
        [d for d in SCORE_DIMS if d not in ("region", "position")],
        where={"region": regions},
        constant={"region": ALL, "position": ALL},
    )
    if len(pooled_cells.cells):
        tables.append(fine.boot.table(pooled_cells))
    table = pd.concat(tables, ignore_index=True)
    est.add_frame("score", table)
    return records(table, [*SCORE_DIMS, "estimate", *STAT_KEYS])


POSITION_MODES: tuple[tuple[str, ...], ...] = ((), ("region",), ("position",), ("region", "position"))


def language_modes(
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


def gap_tables(
    fine: FineTable, config: ProjectConfig, tasks: pd.Series, est: Estimates
) -> dict[tuple[str, str, tuple[str, ...]], pd.DataFrame]:
    """Paired gaps per granularity (and metric) x position mode x language mode x model mode."""
    out: dict[tuple[str, str, tuple[str, ...]], pd.DataFrame] = {}
    for lang_mode, (where, relabel, constant) in language_modes(config).items():
        for model_mode in ("model", ALL):
            for pos in POSITION_MODES:
                keep = ["granularity", "metric", *pos]
                keep += [] if constant else ["language"]
                keep += ["model"] if model_mode == "model" else []
                fixed = dict(constant)
                fixed |= {"model": ALL} if model_mode == ALL else {}
                fixed |= {c: ALL for c in ("region", "position") if c not in pos}
                cells = fine.cells(keep, where=where, relabel=relabel, constant=fixed)
                if not len(cells.cells):
                    continue
                table = fine.boot.table(cells)
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


def gap_records(tables: Mapping[Any, pd.DataFrame], config: ProjectConfig) -> list[dict[str, Any]]:
    cols = ["granularity", "metric", "tasks", "region", "position", "language", "model", "gap", *STAT_KEYS]
    out: list[dict[str, Any]] = []
    for table in tables.values():
        for rec in records(table.rename(columns={"estimate": "gap"}), cols):
            rec["joshi_class"] = _joshi(config, rec["language"])
            out.append(rec)
    return out


def heatmap(gaps: Mapping[Any, pd.DataFrame]) -> list[dict[str, Any]]:
    """Gap by language group x granularity x region (all models), for the report's heat map."""
    out: list[dict[str, Any]] = []
    for lang_mode in ("group", TARGETS):
        table = gaps.get((lang_mode, ALL, ("region",)))
        if table is None:
            continue
        table = table.loc[table["region"] != NO_POSITION]
        for rec in records(
            table.rename(columns={"language": "language_group", "estimate": "gap"}),
            ["language_group", "granularity", "metric", "region", "gap", *STAT_KEYS],
        ):
            out.append(rec)
    return out


def no_context(boot: ClusterBootstrap, rows: pd.DataFrame, est: Estimates) -> list[dict[str, Any]]:
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
        table = boot.table(fine.cells(keep, constant=fixed))
        table["with_context"] = with_fine.cells(keep, constant=fixed).means[0]
        table["without_context"] = without_fine.cells(keep, constant=fixed).means[0]
        est.add_frame("no_context_drop", table)
        out += records(
            table.rename(columns={"estimate": "drop"}),
            ["task", "metric", "language", "model", "with_context", "without_context", "drop", *STAT_KEYS],
        )
    return out
