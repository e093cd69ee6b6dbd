"""The page's closing parts: the drill-down panels, the table of all estimates, the definitions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.report._builder import definition_text, plain
from clcg_pipeline.report._document import lang_name
from clcg_pipeline.report._format import (
    MISSING,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_value,
    mapping_at,
)
from clcg_pipeline.report._page import Row, flags_of
from clcg_pipeline.storage import Definitions, DefinitionView, DrilldownItemView, StudyResultsDocument

_ESTIMATES_COLUMNS = ("estimand", "group", "estimate", "ci_low", "ci_high", "p", "p_adj", "n")
_MAX_ESTIMATE_ROWS = 5000


def drilldown_panels(
    drilldown: Mapping[str, list[DrilldownItemView]] | None, langs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """One panel per language of the typed ``drilldown``: each item's question, both answers, where."""
    panels: list[dict[str, Any]] = []
    for iso, entries in (drilldown or {}).items():
        panels.append(
            {
                "iso": str(iso),
                "label": lang_name(str(iso), langs),
                "items": [
                    {
                        "question": e.question or MISSING,
                        "gold": e.gold or MISSING,
                        "en_answer": MISSING if e.en_answer is None else e.en_answer,
                        "target_answer": MISSING if e.target_answer is None else e.target_answer,
                        "en_score": fmt_num(e.en_score),
                        "target_score": fmt_num(e.target_score),
                        "difference": fmt_num(e.difference),
                        "where": " \u00b7 ".join(
                            place for place in (e.model, e.doc_id, e.item_id, e.level) if place is not None
                        ),
                        "reps": fmt_value(e.reps) if e.reps is not None else "",
                    }
                    for e in entries
                ],
            }
        )
    # Languages with evidence first, in panel order where known.
    order = {iso: i for i, iso in enumerate(langs)}
    panels.sort(key=lambda p: (not p["items"], order.get(p["iso"], len(order)), p["iso"]))
    return panels


def estimates_table_rows(
    estimates: pd.DataFrame | None,
    results: StudyResultsDocument | Mapping[str, Any],
    definitions: Definitions,
) -> tuple[list[Row], int, bool]:
    if estimates is None or estimates.empty:
        return [], 0, False
    extra = [c for c in ("n_articles",) if c in estimates.columns]
    frame = estimates.reindex(
        columns=[
            *_ESTIMATES_COLUMNS,
            *extra,
            *(
                c
                for c in (
                    "identifiable",
                    "reason",
                    "converged",
                    "flags",
                    "p_bound",
                    "status",
                    "valid_replicates",
                )
                if c in estimates.columns
            ),
        ]
    )
    by_estimand = mapping_at(results, "estimands")
    mixed = mapping_at(results, "mixed_effects")
    shown = frame.head(_MAX_ESTIMATE_ROWS)
    rows = []
    for record in shown.to_dict(orient="records"):
        record = {k: (None if _is_na(v) else v) for k, v in record.items()}
        estimand, group = str(record["estimand"]), record["group"]
        flags = flags_of(record)
        # The results document may know more about a row than the table does (e.g. convergence).
        groups = by_estimand.get(estimand) if isinstance(by_estimand, Mapping) else None
        extra_block = groups.get(str(group)) if isinstance(groups, Mapping) and group is not None else None
        sources: list[object] = [extra_block]
        if estimand.startswith("mixed_") and isinstance(mixed, Mapping):
            sources.append(mixed.get(estimand.removeprefix("mixed_")))
        p_bound = bool(record.get("p_bound"))
        for source in sources:
            if isinstance(source, Mapping):
                flags += [f for f in flags_of(source) if f not in flags]
                p_bound = p_bound or bool(source.get("p_bound"))
        cells = [
            estimand,
            "" if group is None else str(group),
            fmt_num(record["estimate"]),
            fmt_ci(record["ci_low"], record["ci_high"]),
            fmt_p(record["p"], bound=p_bound),
            fmt_p(record["p_adj"]),
            fmt_int(record["n"]),
        ]
        if extra:
            cells.append(fmt_int(record.get("n_articles")))
        cells.append("")
        rows.append(Row(cells=cells, flags=flags, title=definition_text(definitions, estimand)))
    return rows, max(len(frame) - _MAX_ESTIMATE_ROWS, 0), bool(extra)


def _is_na(value: object) -> bool:
    if isinstance(value, list | tuple) or (hasattr(value, "__len__") and not isinstance(value, str)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def definitions_rows(definitions: Definitions) -> list[list[str]]:
    rows = []
    for name, entry in definitions.items():
        if isinstance(entry, DefinitionView):
            said = (entry.definition, entry.direction, entry.sided, entry.metric)
            rows.append([str(name), *(plain(value or "") for value in said)])
        elif isinstance(entry, str):
            rows.append([str(name), plain(entry), "", "", ""])
    return rows
