"""Model contrasts and ranks as two compact tables: every pair on each gap, every model's rank.

The generic walker would give each pair and each model a table of its own; with five models
that is fifteen small tables for what reads best as two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._builder import SectionBuilder
from clcg_pipeline.report._format import fmt_num, mapping_at
from clcg_pipeline.report._page import Part, Row, Section, _pruned, flags_of

_GAPS = (("h1_micro", "H1 micro"), ("macro", "macro"), ("macro_net", "macro net"))


def _rank_cell(block: Mapping[str, Any]) -> str:
    if block.get("estimate") is None:
        return "\u2014"
    text = fmt_num(block["estimate"], 0)
    if block.get("ci_low") is not None and block.get("ci_high") is not None:
        text += f" ({fmt_num(block['ci_low'], 0)}\u2013{fmt_num(block['ci_high'], 0)})"
    return text


def _rank_flags(block: Mapping[str, Any]) -> list[str]:
    """Why a model's ranks should not be read at face value, each said once for the row (a rank
    shown without its interval says why: the suite's identifiability rule, as for every estimate)."""
    flags = [flag for gap, _ in _GAPS if isinstance(block.get(gap), Mapping) for flag in flags_of(block[gap])]
    return list(dict.fromkeys(flags))


def contrast_section(
    key: str, title: str, value: Mapping[str, Any], builder: SectionBuilder, caption: str
) -> Section:
    section = Section(key=key, title=title, caption=caption or str(value.get("contrast") or ""))
    status = str(value.get("status") or "")
    pairs = mapping_at(value, "pairs")
    ranks = mapping_at(value, "ranks")
    if not pairs and not ranks:
        section.parts.append(Part("note", text=status or "no model contrasts in this document"))
        return section
    rows: list[Row] = []
    for name, pair in pairs.items():
        for gap, label in _GAPS:
            if isinstance(pair.get(gap), Mapping):
                rows.append(builder.estimate_row(f"{name} ({label})", pair[gap], key=gap))
    if rows:
        section.parts.append(Part("heading", text="Paired contrasts (first model minus second)"))
        section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    english = mapping_at(value, "english_score")
    if ranks:
        section.parts.append(Part("heading", text="Rank per model (1 = smallest gap)"))
        if value.get("ranking"):
            section.parts.append(Part("note", text=str(value["ranking"])))
        columns = ["model", *(f"rank: {label}" for _, label in _GAPS), "English score", "flags"]
        table = [
            Row(
                cells=[
                    str(model),
                    *(_rank_cell(block.get(gap) or {}) for gap, _ in _GAPS),
                    fmt_num((english.get(model) or {}).get("estimate")),
                    "",  # the row's flags go here (the template puts them in a "flags" column)
                ],
                flags=_rank_flags(block),
            )
            for model, block in ranks.items()
            if isinstance(block, Mapping)
        ]
        section.parts.append(_pruned(Part("table", columns=columns, rows=table)))
    if english:
        rows = [builder.estimate_row(str(model), block) for model, block in english.items()]
        section.parts.append(Part("heading", text="English score per model (the gaps' reference level)"))
        section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    return section
