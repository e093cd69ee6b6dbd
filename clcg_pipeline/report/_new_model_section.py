"""The report opens with the model just added to the study (``new_model`` of the results)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._builder import SectionBuilder
from clcg_pipeline.report._format import fmt_num
from clcg_pipeline.report._page import Part, Section, _pruned


def _rank_text(rank: Mapping[str, Any] | None, n_models: int) -> str:
    if not rank or rank.get("estimate") is None:
        return f"rank not available (of {n_models})"
    text = f"rank {fmt_num(rank['estimate'], 0)} of {n_models}"
    if rank.get("ci_low") is not None and rank.get("ci_high") is not None:
        text += f" (interval {fmt_num(rank['ci_low'], 0)}\u2013{fmt_num(rank['ci_high'], 0)})"
    elif rank.get("identifiable") is False:
        text += f" (no interval: {rank.get('reason') or 'not identifiable'})"
    return text


def new_model_section(results: Mapping[str, Any], builder: SectionBuilder) -> Section | None:
    """Its CLCG and interval, its rank of N, and its difference from each other model."""
    block = results.get("new_model")
    if not isinstance(block, Mapping) or not block.get("model"):
        return None
    model, n_models = str(block["model"]), int(block.get("n_models") or 0)
    section = Section(
        key="new-model",
        title=f"New model: {model}",
        caption=str(block.get("note") or ""),
    )
    section.parts.append(Part("text", text=_rank_text(block.get("rank"), n_models) + " (1 = smallest gap)"))
    rows = [builder.estimate_row(f"{model}: H1 micro CLCG", block.get("clcg") or {})]
    rows += [
        builder.estimate_row(f"{model} minus {d.get('other')}", d) for d in block.get("differences") or []
    ]
    section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    return section


def _estimate_text(block: Mapping[str, Any] | None) -> str:
    block = block or {}
    text = fmt_num(block.get("estimate"), 4)
    if block.get("ci_low") is not None and block.get("ci_high") is not None:
        text += f" [{fmt_num(block['ci_low'], 4)}, {fmt_num(block['ci_high'], 4)}]"
    if block.get("identifiable") is False:
        text += f" (not identifiable: {block.get('reason') or 'no interval'})"
    elif block.get("p_adj") is not None:
        text += f", p (adj.) {fmt_num(block['p_adj'], 3)}"
    return text


def new_model_lines(results: Mapping[str, Any]) -> list[str]:
    """The terminal's opening lines about the model just added; none when no model is new."""
    block = results.get("new_model")
    if not isinstance(block, Mapping) or not block.get("model"):
        return []
    model = str(block["model"])
    lines = [
        f"new model {model}: H1 micro CLCG {_estimate_text(block.get('clcg'))}; "
        f"{_rank_text(block.get('rank'), int(block.get('n_models') or 0))} (1 = smallest gap)"
    ]
    lines += [
        f"  {model} minus {d.get('other')}: {_estimate_text(d)}" for d in block.get("differences") or []
    ]
    return lines
