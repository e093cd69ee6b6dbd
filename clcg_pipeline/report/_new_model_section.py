"""The report opens with the model just added to the study (``new_model`` of the results).

Read through the typed view (``NewModelView`` of clcg_pipeline.storage); the ``differences``
rows stay the document's own records (open mappings in the shape), whose every field the row
builder shows.

The terminal's lines (``new_model_lines``) and the report's section (``new_model_section``) stay
bounded whatever the number of models (issue 37), both from one selection (``shown_differences``):
a study of up to ``ALL_SHOWN_UP_TO`` other models lists every difference; a larger one says how
many models the new one is significantly better or worse than, lists only the differences a
reader needs (its neighbours in the ranking, the significant ones closest in rank, at most
``SIGNIFICANT_SHOWN``) and names the catalog query with all of them: typed as printed, it reads
the folder ``clcg run`` ran on (``--data`` named unless it is the default), and in the report it
is code (a ``<code>`` element).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from clcg_pipeline.report._builder import SectionBuilder
from clcg_pipeline.report._format import fmt_num
from clcg_pipeline.report._page import Part, Section, _pruned
from clcg_pipeline.storage import (
    EstimateModel,
    ModelContrastsModel,
    NewModelView,
    TieGroupsModel,
    study_results_view,
)

#: Up to this many other models, the terminal and the report list the new model's difference from
#: each (as before issue 37); beyond, only those a reader needs.
ALL_SHOWN_UP_TO = 10
#: At most this many differences shown for being significant (its neighbours in rank aside).
SIGNIFICANT_SHOWN = 10
# BH's customary level, for a document whose tie groups do not record theirs (as the contrasts').
_DEFAULT_LEVEL = 0.05
#: Where every difference is in a document written before the pairs moved to their table.
_OLD_PAIRS_QUERY = "clcg query --named model_contrasts"
# Characters a double-quoted shell word would expand or end on: such a model id is quoted by shlex.
_SHELL_SPECIAL = set('"$`\\!')


def _rank_text(rank: EstimateModel | None, n_models: int) -> str:
    if rank is None or rank.estimate is None:
        return f"rank not available (of {n_models})"
    text = f"rank {fmt_num(rank.estimate, 0)} of {n_models}"
    if rank.has_interval:
        text += f" (interval {fmt_num(rank.ci_low, 0)}\u2013{fmt_num(rank.ci_high, 0)})"
    elif rank.identifiable is False:
        text += f" (no interval: {rank.reason or 'not identifiable'})"
    return text


def new_model_section(
    block: NewModelView | None, builder: SectionBuilder, contrasts: ModelContrastsModel | None = None
) -> Section | None:
    """Its CLCG and interval, its rank of N, and its difference from the other models: each one up
    to ``ALL_SHOWN_UP_TO``, else those ``shown_differences`` picks with the summary above them and
    the query with every one below.

    ``block`` is the typed ``new_model``: its ``clcg`` row reads every field of the ``Estimate``
    (``record``), so each reason not to trust it is shown. ``contrasts`` (the typed
    ``model_contrasts``) gives the ranks, the tie groups' level and the pairs table.
    """
    if block is None or not block.model:
        return None
    model, n_models = block.model, block.n_models or 0
    section = Section(key="new-model", title=f"New model: {model}", caption=block.note or "")
    section.parts.append(Part("text", text=_rank_text(block.rank, n_models) + " (1 = smallest gap)"))
    shown = shown_differences(block, contrasts)
    if shown.summary:
        section.parts.append(Part("text", text=shown.summary[:1].upper() + shown.summary[1:] + "."))
    differences = block.differences or []
    rows = [builder.estimate_row(f"{model}: H1 micro CLCG", (block.clcg or EstimateModel()).record())]
    rows += [builder.estimate_row(label, differences[k]) for label, k in shown.rows]
    section.parts.append(_pruned(Part("table", columns=builder.estimate_columns, rows=rows)))
    if shown.rest:
        section.parts.append(Part("text", text=Markup("Not shown here: ") + shown.rest.text(html=True)))
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


def _tie_text(model: str, ties: TieGroupsModel | None) -> str:
    """``, tie group 3 of 40 (12 models)``; empty when the document has no tie groups (withheld,
    or written before them: its rank interval says the rest)."""
    if ties is None or not ties.groups or not ties.by_model or model not in ties.by_model:
        return ""
    group = ties.by_model[model]
    size = len(ties.groups[group - 1]) if 0 < group <= len(ties.groups) else 0
    members = f" ({size} models)" if size else ""
    return f", tie group {group} of {len(ties.groups)}{members}"


def _significant(row: EstimateModel, level: float) -> bool:
    return row.p_adj is not None and row.p_adj < level


def _summary(rows: list[EstimateModel], level: float) -> str:
    """How many models the new one is significantly better or worse than, how many it cannot be
    separated from, and how many have no test (withheld: not identifiable)."""
    tested = [row for row in rows if row.p_adj is not None]
    # A difference is this model minus the other: below zero, its gap is the smaller (better).
    better = sum(1 for row in tested if _significant(row, level) and (row.estimate or 0.0) < 0)
    worse = sum(1 for row in tested if _significant(row, level) and (row.estimate or 0.0) > 0)
    tied = len(tested) - better - worse
    untested = f"; {len(rows) - len(tested)} without a test" if len(rows) > len(tested) else ""
    return (
        f"against the other {len(rows)} models (H1 micro; p (adj.) < {level:g}, Benjamini-Hochberg "
        f"across all pairs): significantly better (smaller gap) than {better}, worse than {worse}, "
        f"not separated from {tied}{untested}"
    )


def _needed(
    others: list[str], rows: list[EstimateModel], order: list[str], model: str, level: float
) -> list[int]:
    """The indices of the differences a reader needs, in rank order: the new model's neighbours in
    the ranking, then the significant ones closest in rank (``SIGNIFICANT_SHOWN`` at most)."""
    position = {name: k for k, name in enumerate(order)}
    far = len(order) + 1  # an unranked model: after every ranked one
    mine = position.get(model)
    distance = [abs(position[o] - mine) if mine is not None and o in position else far for o in others]
    adjacent = {k for k, d in enumerate(distance) if d == 1}
    significant = [k for k, row in enumerate(rows) if k not in adjacent and _significant(row, level)]
    closest = sorted(significant, key=lambda k: distance[k])[:SIGNIFICANT_SHOWN]
    return sorted(adjacent | set(closest), key=lambda k: (position.get(others[k], far), k))


def _with_data(command: str, data_option: str) -> str:
    """``command`` (a ``clcg query ...``) reading the folder ``data_option`` names, if any."""
    head = "clcg query"
    if not data_option or not command.startswith(head + " "):
        return command
    return f"{head} {data_option}{command[len(head) :]}"


@dataclass(frozen=True)
class Rest:
    """The differences not shown: how many, and where every one is (the catalog's ``model_pairs``
    view and the command listing the ``n`` pairs; for a document that still holds every pair, the
    estimates table's named query)."""

    hidden: int
    n: int
    view: str = ""  # the catalog view with every pair; "" for a document before the pairs table
    named: str = ""  # the view's named query ("clcg query --named model_pairs"), if recorded
    command: str = ""  # the command (last, to copy) listing the new model's every pair

    def text(self, data_option: str = "", *, html: bool = False) -> str:
        """The words, each command reading the folder ``data_option`` names; with ``html``,
        ``Markup`` whose commands are ``<code>`` elements (everything else escaped)."""
        commands = {
            "named": _with_data(self.named, data_option),
            "command": _with_data(self.command, data_option),
        }
        if html:
            commands = {key: Markup("<code>{}</code>").format(c) for key, c in commands.items()}
        if not self.view:
            template = "{hidden} more; all {n}: {command}"
        else:
            where = " ({named})" if self.named else ""
            template = (
                "{hidden} more; every pair is in the catalog view {view}" + where + "; "
                "all {n}, model_a minus model_b: {command}"
            )
        form = Markup(template) if html else template
        return form.format(hidden=self.hidden, n=self.n, view=self.view, **commands)


def _rest(model: str, hidden: int, n: int, contrasts: ModelContrastsModel | None) -> Rest:
    """Where every difference of ``model`` is (``Rest``)."""
    table = contrasts.pairs_table if contrasts else None
    if table is None or not table.table:
        return Rest(hidden, n, command=_OLD_PAIRS_QUERY)
    name = model.replace("'", "''")  # a SQL string literal
    sql = (
        f"SELECT model_a, model_b, estimate, ci_low, ci_high, p_adj FROM {table.table} "
        f"WHERE gap = 'h1_micro' AND '{name}' IN (model_a, model_b) ORDER BY p_adj"
    )
    word = shlex.quote(sql) if _SHELL_SPECIAL & set(sql) else f'"{sql}"'
    return Rest(hidden, n, view=table.table, named=table.query or "", command=f"clcg query {word}")


@dataclass(frozen=True)
class ShownDifferences:
    """The new model's differences a reader is shown, the same in the terminal and the report."""

    # (its label, "m minus o (rank 12)", and its index in ``new_model.differences``), in rank order
    rows: list[tuple[str, int]] = field(default_factory=list)
    summary: str = ""  # how many it is significantly better or worse than; "" when every one is shown
    rest: Rest | None = None  # how many more and the query listing every one; None when none is left out


def _order(contrasts: ModelContrastsModel | None) -> list[str]:
    """The models by H1 micro rank (the leaderboard's order, ``results.rank_order``)."""
    # Imported here: ``new_model_lines`` is on ``clcg run``'s no-op path, which must not load the
    # results package (and with it Dagster and the analysis) just to print the opening lines.
    from clcg_pipeline.results import rank_order

    ranks = (contrasts.ranks if contrasts else None) or {}
    return rank_order({m: {g: e.model_dump() for g, e in by_gap.items()} for m, by_gap in ranks.items()})


def _ranked_label(model: str, other: str, contrasts: ModelContrastsModel | None) -> str:
    """``m minus o (rank 12)``: the document's rank (as the headline's and the leaderboard's), not
    the position in the order."""
    ranks = (contrasts.ranks if contrasts else None) or {}
    rank = (ranks.get(other) or {}).get("h1_micro")
    where = f" (rank {fmt_num(rank.estimate, 0)})" if rank and rank.estimate is not None else ""
    return f"{model} minus {other}{where}"


def shown_differences(block: NewModelView, contrasts: ModelContrastsModel | None) -> ShownDifferences:
    """Which of ``block``'s differences a reader is shown (the module's docstring): every one up to
    ``ALL_SHOWN_UP_TO``; beyond, the summary, the needed ones and where the rest are."""
    model = block.model or ""
    differences = block.differences or []
    others = [str(d.get("other")) for d in differences]
    if len(differences) <= ALL_SHOWN_UP_TO:
        return ShownDifferences(rows=[(f"{model} minus {o}", k) for k, o in enumerate(others)])
    # ``differences`` are open mappings in the shape: read leniently ("0.1" read as 0.1, as before).
    rows = [EstimateModel.model_validate(d, strict=False) for d in differences]
    ties = contrasts.tie_groups if contrasts else None
    level = (ties.level if ties else None) or _DEFAULT_LEVEL
    needed = _needed(others, rows, _order(contrasts), model, level)
    hidden = len(rows) - len(needed)
    return ShownDifferences(
        rows=[(_ranked_label(model, others[k], contrasts), k) for k in needed],
        summary=_summary(rows, level),
        rest=_rest(model, hidden, len(rows), contrasts) if hidden else None,
    )


def new_model_lines(results: Mapping[str, Any], data_option: str = "") -> list[str]:
    """The terminal's opening lines about the model just added; none when no model is new.

    ``data_option`` (``--data <folder>``, shell-quoted, from ``clcg run``; "" for the default
    folder) goes into the query commands, so that typed as printed they read that folder.

    Bounded whatever the number of models (``shown_differences``, as the report's section): at
    most the headline, the summary, two neighbours, ``SIGNIFICANT_SHOWN`` significant differences
    and the line naming the query with the rest. A ``new_model`` field of another type is a
    ``DocumentError`` naming it, not a blank line.
    """
    view = study_results_view(results)
    block = view.new_model
    if block is None or not block.model:
        return []
    model, contrasts = block.model, view.model_contrasts
    ties = contrasts.tie_groups if contrasts else None
    lines = [
        f"new model {model}: H1 micro CLCG {_estimate_text(block.clcg or EstimateModel())}; "
        f"{_rank_text(block.rank, block.n_models or 0)}{_tie_text(model, ties)} (1 = smallest gap)"
    ]
    shown = shown_differences(block, contrasts)
    differences = block.differences or []
    if shown.summary:
        lines.append(f"  {shown.summary}")
    lines += [
        f"  {label}: {_estimate_text(EstimateModel.model_validate(differences[k], strict=False))}"
        for label, k in shown.rows
    ]
    if shown.rest:
        lines.append(f"  ... and {shown.rest.text(data_option)}")
    return lines
