"""Model contrasts and ranks as two compact tables: every model's rank, the pairs a reader needs.

The generic walker would give each pair and each model a table of its own; with five models
that is fifteen small tables for what reads best as two. The rank table is the leaderboard: it
comes first and lists every model, whatever their number (never cut to the section's row
budget). At hundreds of models the pairs grow with their square (issue 37): the report shows
only the pairs adjacent in the H1 micro ranking and those significant after Benjamini-Hochberg
(``results.kept_pairs``, the rule that also decides which pairs study_results.json keeps), says
where the new model's differences are (its own section: every one, or beyond
``ALL_SHOWN_UP_TO`` other models the ones a reader needs and the query with all), and names the
catalog query that lists every pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._builder import SectionBuilder
from clcg_pipeline.report._format import fmt_num, mapping_at
from clcg_pipeline.report._new_model_section import shown_differences
from clcg_pipeline.report._page import Part, Row, Section, _pruned, flags_of
from clcg_pipeline.results import SIGNIFICANT_KEPT, kept_pairs, rank_order, significant_pairs
from clcg_pipeline.storage import EstimateModel, ModelContrastsModel, NewModelView, TieGroupsModel

_GAPS = (("h1_micro", "H1 micro"), ("macro", "macro"), ("macro_net", "macro net"))
#: The named catalog query with every pair of a document that holds them all (its estimates table's
#: rows: sql/queries/model_contrasts.sql); a newer document names its own (model_pairs).
ALL_PAIRS_QUERY = "clcg query --named model_contrasts"
# BH's customary level, for a document written before the tie groups recorded theirs.
_DEFAULT_LEVEL = 0.05


def needed_pairs(value: Mapping[str, Any]) -> list[str]:
    """The pairs a reader needs, in the document's order (``results.kept_pairs``): adjacent in the
    H1 micro ranking and those significant after BH at the tie groups' level."""
    return kept_pairs(value)


def _new_model_sentence(new_model: NewModelView, view: ModelContrastsModel) -> str:
    """Where the new model's pairs are, as its own section shows them (its pairs are not repeated
    here): every difference up to ``ALL_SHOWN_UP_TO`` other models; beyond, a selection with the
    query listing all of them (issue 37). The sentence said "against every other model" in both."""
    model, n = new_model.model, len(new_model.differences or [])
    if not n:
        return f" The new model ({model}) has its own section, first."
    shown = shown_differences(new_model, view)
    if not shown.rest:  # every difference shown
        others = "the other model" if n == 1 else f"each of the {n} other models"
        return f" The new model ({model}) against {others} (H1 micro): its own section, first."
    return (
        f" The new model ({model}) against the {n} other models (H1 micro): its own section, first, "
        f"says how many it is significantly better or worse than, shows {len(shown.rows)} of the {n} "
        "differences (its neighbours in the ranking and the significant ones closest in rank) and "
        "names the query with all of them."
    )


def _pairs_note(
    shown: int,
    value: Mapping[str, Any],
    view: ModelContrastsModel,
    new_model: NewModelView | None,
    level: float,
) -> str:
    """How many pairs are shown, by which rule, and where every pair is."""
    table = view.pairs_table
    # A document written before the pairs moved out holds them all (estimates table: model_contrasts).
    total = (table.pairs if table else None) or len(mapping_at(value, "pairs"))
    where = (table.query if table else None) or ALL_PAIRS_QUERY
    new = _new_model_sentence(new_model, view) if new_model is not None else ""
    significant = table.significant if table and table.model_fields_set else significant_pairs(value)
    cap = (
        f"; {significant} are significant, the {SIGNIFICANT_KEPT} closest in rank shown"
        if (significant is not None and significant > SIGNIFICANT_KEPT)
        else ""
    )
    return (
        f"{shown} of the {total} pairs shown: those adjacent in the H1 micro ranking and those "
        f"significant after Benjamini-Hochberg (p (adj.) < {level:g} on any gap{cap}).{new} All "
        f"{total} pairs are in the catalog: {where}"
    )


def _tie_note(ties: TieGroupsModel | None) -> str:
    """The tie groups' rule, or why there are none (once for the table, not per model)."""
    if ties is None or not ties.model_fields_set:
        return "no tie groups in this document (written before they were computed)"
    if ties.reason:
        return f"no tie groups: {ties.reason}"
    return f"tie groups at level {ties.level}: {ties.rule}"


def _rank_cell(block: EstimateModel | None) -> str:
    if block is None or block.estimate is None:
        return "\u2014"
    text = fmt_num(block.estimate, 0)
    if block.has_interval:
        text += f" ({fmt_num(block.ci_low, 0)}\u2013{fmt_num(block.ci_high, 0)})"
    return text


def _rank_flags(block: Mapping[str, Any]) -> list[str]:
    """Why a model's ranks should not be read at face value, each said once for the row (a rank
    shown without its interval says why: the suite's identifiability rule, as for every estimate)."""
    flags = [flag for gap, _ in _GAPS if isinstance(block.get(gap), Mapping) for flag in flags_of(block[gap])]
    return list(dict.fromkeys(flags))


def _contrast_rows(
    value: Mapping[str, Any],
    view: ModelContrastsModel,
    builder: SectionBuilder,
    new_model: NewModelView | None,
) -> tuple[list[Row], str]:
    """The needed pairs' rows on each gap, and the line that says how many the catalog has."""
    pairs = mapping_at(value, "pairs")
    shown = needed_pairs(value)
    rows = [
        builder.estimate_row(f"{name} ({label})", pairs[name][gap], key=gap)
        for name in shown
        for gap, label in _GAPS
        if isinstance(pairs[name].get(gap), Mapping)
    ]
    level = (view.tie_groups.level if view.tie_groups else None) or _DEFAULT_LEVEL
    return rows, _pairs_note(len(shown), value, view, new_model, level)


def _leaderboard_order(ranks: Mapping[str, Any]) -> list[str]:
    """Every model of ``ranks``: by H1 micro rank (then id), the unranked ones after, as given."""
    ranked = rank_order(ranks)
    return ranked + [str(model) for model in ranks if str(model) not in set(ranked)]


def _rank_parts(value: Mapping[str, Any], view: ModelContrastsModel) -> list[Part]:
    """The rank table, every model in rank order (the leaderboard: never cut), with its rules.

    The typed ``view`` gives the cells; the flags come from the records (every field of them)."""
    ranks, typed = mapping_at(value, "ranks"), view.ranks or {}
    english = view.english_score or {}
    parts = [Part("heading", text="Rank per model (1 = smallest gap)")]
    if view.ranking:
        parts.append(Part("note", text=view.ranking))
    parts.append(Part("note", text=_tie_note(view.tie_groups)))
    by_model = (view.tie_groups.by_model if view.tie_groups else None) or {}
    columns = ["model", *(f"rank: {label}" for _, label in _GAPS), "tie group", "English score", "flags"]
    table = [
        Row(
            cells=[
                model,
                *(_rank_cell(typed[model].get(gap)) for gap, _ in _GAPS),
                fmt_num(by_model.get(model), 0),
                fmt_num(english[model].estimate if model in english else None),
                "",  # the row's flags go here (the template puts them in a "flags" column)
            ],
            flags=_rank_flags(ranks[model]),
        )
        for model in _leaderboard_order(ranks)
    ]
    parts.append(_pruned(Part("table", columns=columns, rows=table, whole=True)))
    return parts


def contrast_section(
    key: str,
    title: str,
    value: Mapping[str, Any],
    builder: SectionBuilder,
    caption: str,
    view: ModelContrastsModel,
    new_model: NewModelView | None = None,
) -> Section:
    """The section from ``view`` (the typed ``model_contrasts``, built once by the report) and, for
    its estimate rows (every field of a record shown), ``value`` (the entry as the document holds it)."""
    section = Section(key=key, title=title, caption=caption or view.contrast or "")
    status = view.status or ""
    pairs = mapping_at(value, "pairs")
    ranks = mapping_at(value, "ranks")
    if not pairs and not ranks:
        section.parts.append(Part("note", text=status or "no model contrasts in this document"))
        return section
    if ranks:  # first: the leaderboard, then the pairs that explain it
        section.parts.extend(_rank_parts(value, view))
    rows, note = _contrast_rows(value, view, builder, new_model)
    if pairs:
        section.parts.append(Part("heading", text="Paired contrasts (first model minus second)"))
        section.parts.append(Part("note", text=note))
    if rows:
        section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    english = mapping_at(value, "english_score")
    if english:
        rows = [builder.estimate_row(str(model), block) for model, block in english.items()]
        section.parts.append(Part("heading", text="English score per model (the gaps' reference level)"))
        section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    return section
