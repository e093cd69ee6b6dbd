"""The report opens with the model just added to the study (``new_model`` of the results).

Read through the typed view (``NewModelView`` of clcg_pipeline.storage); the ``differences``
rows stay the document's own records (open mappings in the shape), whose every field the row
builder shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._builder import SectionBuilder
from clcg_pipeline.report._format import fmt_num
from clcg_pipeline.report._page import Part, Section, _pruned
from clcg_pipeline.storage import EstimateModel, NewModelView, study_results_view


def _rank_text(rank: EstimateModel | None, n_models: int) -> str:
    if rank is None or rank.estimate is None:
        return f"rank not available (of {n_models})"
    text = f"rank {fmt_num(rank.estimate, 0)} of {n_models}"
    if rank.has_interval:
        text += f" (interval {fmt_num(rank.ci_low, 0)}\u2013{fmt_num(rank.ci_high, 0)})"
    elif rank.identifiable is False:
        text += f" (no interval: {rank.reason or 'not identifiable'})"
    return text


def new_model_section(block: NewModelView | None, builder: SectionBuilder) -> Section | None:
    """Its CLCG and interval, its rank of N, and its difference from each other model.

    ``block`` is the typed ``new_model``: its ``clcg`` row reads every field of the ``Estimate``
    (``record``), so each reason not to trust it is shown.
    """
    if block is None or not block.model:
        return None
    model, n_models = block.model, block.n_models or 0
    section = Section(key="new-model", title=f"New model: {model}", caption=block.note or "")
    section.parts.append(Part("text", text=_rank_text(block.rank, n_models) + " (1 = smallest gap)"))
    rows = [builder.estimate_row(f"{model}: H1 micro CLCG", (block.clcg or EstimateModel()).record())]
    rows += [builder.estimate_row(f"{model} minus {d.get('other')}", d) for d in block.differences or []]
    section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    return section


def _estimate_text(block: EstimateModel) -> str:
    text = fmt_num(block.estimate, 4)
    if block.has_interval:
        text += f" [{fmt_num(block.ci_low, 4)}, {fmt_num(block.ci_high, 4)}]"
    if block.identifiable is False:
        text += f" (not identifiable: {block.reason or 'no interval'})"
    elif block.p_adj is not None:
        text += f", p (adj.) {fmt_num(block.p_adj, 3)}"
    return text


def new_model_lines(results: Mapping[str, Any]) -> list[str]:
    """The terminal's opening lines about the model just added; none when no model is new.

    A ``new_model`` field of another type is a ``DocumentError`` naming it, not a blank line.
    """
    block = study_results_view(results).new_model
    if block is None or not block.model:
        return []
    lines = [
        f"new model {block.model}: H1 micro CLCG {_estimate_text(block.clcg or EstimateModel())}; "
        f"{_rank_text(block.rank, block.n_models or 0)} (1 = smallest gap)"
    ]
    # ``differences`` are open mappings in the shape: read leniently ("0.1" shown as 0.1, as before).
    lines += [
        f"  {block.model} minus {d.get('other')}: "
        + _estimate_text(EstimateModel.model_validate(d, strict=False))
        for d in block.differences or []
    ]
    return lines
