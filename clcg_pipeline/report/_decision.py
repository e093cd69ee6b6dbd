"""The report's first screen: what a researcher came for, before any section (issue 34).

The gap per target language with its interval, the models ranked with their rank intervals,
and what is not identifiable and why, said once. A reason that every headline estimate shares
(on a small study: "too few articles: 6 < study.min_articles = 10") stands here once; the
sections below then mark their rows "not identifiable" and point here instead of repeating it.

What is not identifiable is the estimates table's decision (``report/_withheld.py``): the first
screen gives its count, the one the document's caveat gives, then each of its reasons once
with the estimands and groups it concerns.

It reads the document as the typed ``StudyResults`` (clcg_pipeline.storage): attributes, not
``.get()`` chains; a field of another type is a ``DocumentError`` naming it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from clcg_pipeline.report._document import lang_name
from clcg_pipeline.report._format import MISSING, as_float, fmt_ci, fmt_num
from clcg_pipeline.report._labels import H1_SUMMARY
from clcg_pipeline.report._page import Row
from clcg_pipeline.report._withheld import Withheld, withheld_estimates
from clcg_pipeline.storage import EstimateModel, StudyResults, TieGroupsModel

# Reasons of the estimates table listed on the first screen; the rest are counted (a study of
# hundreds of models can have a "too few articles: k < ..." per k).
_MAX_REASONS = 8
# The short mark of a withheld interval in the first screen's tables; its meaning is said once.
NOT_IDENTIFIABLE_MARK = "n/i"


@dataclass
class Decision:
    """The first screen's content, ready for the template."""

    languages: list[Row] = field(default_factory=list)  # language, CLCG, interval
    models: list[Row] = field(default_factory=list)  # rank, model, rank interval, tie group, gap, interval
    ties: str = ""  # the tie groups' rule, or why there are none (said once)
    headline: list[list[str]] = field(default_factory=list)  # estimand, estimate, interval
    reasons: list[str] = field(default_factory=list)  # each reason once, with what it concerns
    withheld: str = ""  # how many rows of the estimates table are not identifiable ("" when none)
    global_reason: str = ""  # a reason every headline estimate shares ("" when none does)
    simulated: bool = False
    simulated_models: list[str] = field(default_factory=list)  # "model: note" of each simulated reader


def _simulated_models(doc: StudyResults) -> list[str]:
    """The models whose answers are simulated (the demo's offline reader), with their note."""
    return [f"{m.id}: {m.simulated}" for m in doc.models() if m.simulated]


def _interval(block: EstimateModel) -> str:
    low, high = as_float(block.ci_low), as_float(block.ci_high)
    if low is not None and high is not None:
        return fmt_ci(low, high)
    return NOT_IDENTIFIABLE_MARK if block.identifiable is False else MISSING


def _reason(block: EstimateModel) -> str | None:
    """Why ``block`` has no interval (or no estimate at all), or None when it has both."""
    if block.identifiable is False:
        return block.reason or "no reason recorded"
    if as_float(block.estimate) is None:
        return "no estimate: " + (block.reason or block.status or "no scored rows")
    return None


def _language_rows(doc: StudyResults, langs: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    by_language = (doc.h1.by_language if doc.h1 else None) or {}
    blocks = sorted(
        by_language.items(),
        key=lambda e: (as_float(e[1].estimate) is None, -(as_float(e[1].estimate) or 0)),
    )
    return [Row(cells=[lang_name(iso, langs), fmt_num(b.estimate), _interval(b)]) for iso, b in blocks]


def _rank_cell(rank: EstimateModel) -> str:
    low, high = as_float(rank.ci_low), as_float(rank.ci_high)
    if low is not None and high is not None:
        return f"{fmt_num(low, 0)}\u2013{fmt_num(high, 0)}"
    return NOT_IDENTIFIABLE_MARK if rank.identifiable is False else MISSING


def _ties(doc: StudyResults) -> TieGroupsModel | None:
    return doc.model_contrasts.tie_groups if doc.model_contrasts else None


def _tie_text(ties: TieGroupsModel | None, global_reason: str) -> str:
    """One line under the ranking: how the groups are drawn, or why there are none (once)."""
    if ties is None or not ties.model_fields_set:
        return ""
    reason = ties.reason
    if reason and reason == global_reason:
        return "No tie groups: the ranks have no intervals (the reason is below)."
    if reason:
        return f"No tie groups: {reason}."
    return (
        "Tie group: models whose ranks cannot be separated at level "
        f"{ties.level} (adjacent models in the ranking whose H1 micro difference is not "
        "significant after Benjamini-Hochberg share a group)."
    )


def _withheld(rank: EstimateModel) -> str:
    """A tie group's cell without a group: "n/i" when the rank's interval is withheld."""
    return NOT_IDENTIFIABLE_MARK if rank.identifiable is False else MISSING


def _model_rows(doc: StudyResults) -> list[Row]:
    """Models by their H1 micro rank (smallest gap first), with the rank interval, tie group and gap."""
    by_model = (doc.h1.by_model if doc.h1 else None) or {}
    ranks = (doc.model_contrasts.ranks if doc.model_contrasts else None) or {}
    ties = _ties(doc)
    groups = (ties.by_model if ties else None) or {}
    rows = []
    for model, block in by_model.items():
        gap = block.get("h1_micro") or EstimateModel()
        rank = ranks.get(model, {}).get("h1_micro") or EstimateModel()
        rows.append((as_float(rank.estimate), as_float(gap.estimate), model, rank, gap))
    # By rank where ranked; else by the gap (smallest first: rank 1 = smallest gap).
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0.0, r[1] is None, r[1] or 0.0, r[2]))
    return [
        Row(
            cells=[
                fmt_num(r[0], 0),
                r[2],
                _rank_cell(r[3]),
                fmt_num(groups[r[2]], 0) if r[2] in groups else _withheld(r[3]),
                fmt_num(r[4].estimate),
                _interval(r[4]),
            ]
        )
        for r in rows
    ]


def _headline_blocks(doc: StudyResults) -> list[tuple[str, EstimateModel]]:
    """Every estimate of the first screen, with what it is (for the reasons' "concerns")."""
    if doc.h1 is None:
        return []
    summary = doc.h1.summary()
    blocks = [(label, summary[key]) for key, label in H1_SUMMARY if key in summary]
    blocks += [(f"CLCG {iso}", block) for iso, block in (doc.h1.by_language or {}).items()]
    blocks += [
        (f"{model} H1 micro", block["h1_micro"])
        for model, block in (doc.h1.by_model or {}).items()
        if "h1_micro" in block
    ]
    return blocks


def _headline(doc: StudyResults) -> list[list[str]]:
    summary = doc.h1.summary() if doc.h1 else {}
    return [
        [label, fmt_num(summary[key].estimate), _interval(summary[key])]
        for key, label in H1_SUMMARY
        if key in summary
    ]


def _withheld_count(withheld: Withheld) -> str:
    """The one count of what is not identifiable: the estimates table's (the caveats count it too)."""
    return (
        f"{withheld.count} of the {withheld.total} estimates of the estimates table (appendix) are not "
        "identifiable: their intervals and p values are withheld, their point estimates describe the "
        "sample only. Why, by reason:"
    )


def _table_reasons(out: Decision, withheld: Withheld, above: Counter[str], n_above: int) -> None:
    """Each reason of the estimates table once, with its estimands and groups; a reason the
    estimates above share says how many of them too (one line, not two)."""
    reasons = [reason for reason in withheld.by_reason if reason != out.global_reason]
    for reason in reasons[:_MAX_REASONS]:
        counted = f"{above[reason]} of the {n_above} estimates above; " if above[reason] else ""
        out.reasons.append(f"{reason} \u2014 {counted}{withheld.line(reason)}")
    if len(reasons) > _MAX_REASONS:
        out.reasons.append(
            f"and {len(reasons) - _MAX_REASONS} more reasons: the appendix's estimates table flags each row"
        )


def decision(
    doc: StudyResults,
    langs: Mapping[str, Mapping[str, Any]],
    *,
    simulated: bool = False,
    estimates: pd.DataFrame | None = None,
) -> Decision:
    """What the first screen says, read from the results document as the typed ``StudyResults``
    (built once by the report, ``study_results_view``), and what is not identifiable from the
    estimates table (``estimates``; the document's ``estimands`` index without it)."""
    out = Decision(
        languages=_language_rows(doc, langs),
        models=_model_rows(doc),
        headline=_headline(doc),
        simulated=simulated,
        simulated_models=_simulated_models(doc),
    )
    blocks = _headline_blocks(doc)
    reasons = Counter(r for _, b in blocks if (r := _reason(b)) is not None)
    withheld = withheld_estimates(estimates, doc.estimands)
    table = withheld.by_reason if withheld is not None else {}
    for reason, n in reasons.most_common():
        if reason not in table:  # the table's reasons follow, each with what it concerns
            out.reasons.append(f"{reason} ({n} of the {len(blocks)} estimates above)")
    if blocks and len(reasons) == 1 and sum(reasons.values()) == len(blocks):
        out.global_reason = next(iter(reasons))
        out.reasons = [
            f"{out.global_reason}: this applies to every estimate above, so every interval, p value and "
            f"rank interval is withheld (marked \u201c{NOT_IDENTIFIABLE_MARK}\u201d here and "
            "\u201cnot identifiable\u201d in the sections below); the point estimates are descriptions only."
        ]
    if withheld is not None and withheld.count:
        out.withheld = _withheld_count(withheld)
        _table_reasons(out, withheld, reasons, len(blocks))
    out.ties = _tie_text(_ties(doc), out.global_reason)
    return out
