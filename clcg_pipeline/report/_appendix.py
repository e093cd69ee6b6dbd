"""The page's closing parts: the drill-down panels, the table of all estimates, the definitions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from clcg_pipeline.report._builder import definition_text, metric_text, plain
from clcg_pipeline.report._document import lang_name
from clcg_pipeline.report._format import (
    MISSING,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_value,
)
from clcg_pipeline.report._page import Row, flags_of
from clcg_pipeline.storage import (
    Definitions,
    DefinitionView,
    DrilldownItemView,
    EstimateModel,
    MixedEffectsResults,
    MixedFit,
)

_ESTIMATES_COLUMNS = ("estimand", "group", "estimate", "ci_low", "ci_high", "p", "p_adj", "n")
_MAX_ESTIMATE_ROWS = 5000
# Columns of the estimates table that say why a row may not be trusted (read by ``flags_of``).
_FLAG_COLUMNS = ("identifiable", "reason", "converged", "flags", "p_bound", "status", "valid_replicates")


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
    estimands: Mapping[str, EstimateModel] | None,
    mixed: MixedEffectsResults | None,
    definitions: Definitions,
) -> tuple[list[Row], int, bool]:
    """The appendix's rows: every row of the estimates table, with the flags the typed document
    adds to it (``estimands``, keyed ``"<estimand>/<group>"`` as the suite writes it, and the
    mixed fits behind the ``mixed_<name>`` rows: convergence, warnings)."""
    if estimates is None or estimates.empty:
        return [], 0, False
    extra = [c for c in ("n_articles",) if c in estimates.columns]
    frame = estimates.reindex(
        columns=[
            *_ESTIMATES_COLUMNS,
            *extra,
            *(c for c in _FLAG_COLUMNS if c in estimates.columns),
        ]
    )
    shown = frame.head(_MAX_ESTIMATE_ROWS)
    rows = []
    for record in shown.to_dict(orient="records"):
        record = {k: (None if _is_na(v) else v) for k, v in record.items()}
        estimand, group = str(record["estimand"]), record["group"]
        flags = flags_of(record)
        p_bound = bool(record.get("p_bound"))
        # The document may know more about a row than the table does (e.g. why it is withheld).
        known: list[EstimateModel | MixedFit | None] = [
            _indexed(estimands, estimand, group),
            _mixed_fit(mixed, estimand),
        ]
        for block in known:
            if block is not None:
                flags += [f for f in flags_of(block.record()) if f not in flags]
                p_bound = p_bound or block.p_bound is True
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
            cells.append(fmt_int(record["n_articles"]))  # a column of the frame when ``extra``
        cells.append("")
        rows.append(
            Row(cells=cells, flags=_without_bare(flags), title=definition_text(definitions, estimand))
        )
    return rows, max(len(frame) - _MAX_ESTIMATE_ROWS, 0), bool(extra)


def _indexed(
    estimands: Mapping[str, EstimateModel] | None, estimand: str, group: object
) -> EstimateModel | None:
    """The document's ``estimands`` entry of one table row: the suite keys it flat,
    ``f"{estimand}/{group}"`` (analysis/_index.py ``estimand_index``)."""
    if not estimands or group is None:
        return None
    return estimands.get(f"{estimand}/{group}")


def _without_bare(flags: list[str]) -> list[str]:
    """A bare flag ("not identifiable") dropped where the same flag with its reason
    ("not identifiable: 1 article (< 10)") is there too: said once, the longer way."""
    return [f for f in flags if not any(other.startswith(f"{f}: ") for other in flags)]


def _mixed_fit(mixed: MixedEffectsResults | None, estimand: str) -> MixedFit | None:
    """The fit behind an estimates row ``mixed_<name>`` (it knows more: convergence, warnings)."""
    if mixed is None or not estimand.startswith("mixed_"):
        return None
    return mixed.fit(estimand.removeprefix("mixed_"))


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
            said = (entry.definition, entry.direction, entry.sided, metric_text(entry.metric))
            rows.append([str(name), *(plain(value or "") for value in said)])
        elif isinstance(entry, str):
            rows.append([str(name), plain(entry), "", "", ""])
    return rows
