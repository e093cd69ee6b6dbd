"""The report's first screen: what a researcher came for, before any section (issue 34).

The gap per target language with its interval, the models ranked with their rank intervals,
and what is not identifiable and why, said once. A reason that every headline estimate shares
(on a small study: "too few articles: 6 < study.min_articles = 10") stands here once; the
sections below then mark their rows "not identifiable" and point here instead of repeating it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clcg_pipeline.report._document import lang_name, settings_of
from clcg_pipeline.report._format import MISSING, as_float, estimate_of, fmt_ci, fmt_num, mapping_at
from clcg_pipeline.report._labels import H1_SUMMARY
from clcg_pipeline.report._page import Row

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
    global_reason: str = ""  # a reason every headline estimate shares ("" when none does)
    simulated: bool = False
    simulated_models: list[str] = field(default_factory=list)  # "model: note" of each simulated reader


def _simulated_models(results: Mapping[str, Any]) -> list[str]:
    """The models whose answers are simulated (the demo's offline reader), with their note."""
    models = settings_of(results).get("models") or []
    return [
        f"{m.get('id')}: {m['simulated']}" for m in models if isinstance(m, Mapping) and m.get("simulated")
    ]


def _interval(block: Mapping[str, Any]) -> str:
    low, high = as_float(block.get("ci_low")), as_float(block.get("ci_high"))
    if low is not None and high is not None:
        return fmt_ci(low, high)
    return NOT_IDENTIFIABLE_MARK if block.get("identifiable") is False else MISSING


def _reason(block: Mapping[str, Any]) -> str | None:
    """Why ``block`` has no interval (or no estimate at all), or None when it has both."""
    if block.get("identifiable") is False:
        return str(block.get("reason") or "no reason recorded")
    if as_float(block.get("estimate")) is None:
        return "no estimate: " + str(block.get("reason") or block.get("status") or "no scored rows")
    return None


def _language_rows(h1: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    by_language = h1.get("by_language")
    if not isinstance(by_language, Mapping):
        return []
    blocks = [(str(iso), estimate_of(block)) for iso, block in by_language.items()]
    blocks.sort(
        key=lambda e: (as_float(e[1].get("estimate")) is None, -(as_float(e[1].get("estimate")) or 0))
    )
    return [Row(cells=[lang_name(iso, langs), fmt_num(b.get("estimate")), _interval(b)]) for iso, b in blocks]


def _rank_cell(rank: Mapping[str, Any]) -> str:
    low, high = as_float(rank.get("ci_low")), as_float(rank.get("ci_high"))
    if low is not None and high is not None:
        return f"{fmt_num(low, 0)}\u2013{fmt_num(high, 0)}"
    return NOT_IDENTIFIABLE_MARK if rank.get("identifiable") is False else MISSING


def _ties(results: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping_at(mapping_at(results, "model_contrasts"), "tie_groups")


def _tie_text(ties: Mapping[str, Any], global_reason: str) -> str:
    """One line under the ranking: how the groups are drawn, or why there are none (once)."""
    if not ties:
        return ""
    reason = ties.get("reason")
    if reason and reason == global_reason:
        return "No tie groups: the ranks have no intervals (the reason is below)."
    if reason:
        return f"No tie groups: {reason}."
    return (
        "Tie group: models whose ranks cannot be separated at level "
        f"{ties.get('level')} (adjacent models in the ranking whose H1 micro difference is not "
        "significant after Benjamini-Hochberg share a group)."
    )


def _withheld(rank: Mapping[str, Any]) -> str:
    """A tie group's cell without a group: "n/i" when the rank's interval is withheld."""
    return NOT_IDENTIFIABLE_MARK if rank.get("identifiable") is False else MISSING


def _model_rows(results: Mapping[str, Any]) -> list[Row]:
    """Models by their H1 micro rank (smallest gap first), with the rank interval, tie group and gap."""
    h1 = mapping_at(results, "h1")
    by_model = h1.get("by_model") if isinstance(h1, Mapping) else None
    if not isinstance(by_model, Mapping) or not by_model:
        return []
    contrasts = results.get("model_contrasts")
    ranks = contrasts.get("ranks") if isinstance(contrasts, Mapping) else None
    ranks = ranks if isinstance(ranks, Mapping) else {}
    groups = mapping_at(_ties(results), "by_model")
    rows = []
    for model, block in by_model.items():
        gap = estimate_of(block.get("h1_micro") if isinstance(block, Mapping) else None)
        model_ranks = ranks.get(model)
        rank = estimate_of(model_ranks.get("h1_micro") if isinstance(model_ranks, Mapping) else None)
        rows.append((as_float(rank.get("estimate")), as_float(gap.get("estimate")), str(model), rank, gap))
    # By rank where ranked; else by the gap (smallest first: rank 1 = smallest gap).
    rows.sort(key=lambda r: (r[0] is None, r[0] or 0.0, r[1] is None, r[1] or 0.0, r[2]))
    return [
        Row(
            cells=[
                fmt_num(r[0], 0),
                r[2],
                _rank_cell(r[3]),
                fmt_num(groups[r[2]], 0) if r[2] in groups else _withheld(r[3]),
                fmt_num(r[4].get("estimate")),
                _interval(r[4]),
            ]
        )
        for r in rows
    ]


def _headline_blocks(results: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Every estimate of the first screen, with what it is (for the reasons' "concerns")."""
    h1 = mapping_at(results, "h1")
    blocks: list[tuple[str, Mapping[str, Any]]] = []
    for key, label in H1_SUMMARY:
        if isinstance(h1.get(key), Mapping):
            blocks.append((label, h1[key]))
    for iso, block in (h1.get("by_language") or {}).items():
        if isinstance(block, Mapping):
            blocks.append((f"CLCG {iso}", block))
    for model, block in (h1.get("by_model") or {}).items():
        if isinstance(block, Mapping) and isinstance(block.get("h1_micro"), Mapping):
            blocks.append((f"{model} H1 micro", block["h1_micro"]))
    return blocks


def decision(
    results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]], *, simulated: bool = False
) -> Decision:
    """What the first screen says, read from the results document as it is."""
    h1 = mapping_at(results, "h1")
    out = Decision(
        languages=_language_rows(h1, langs),
        models=_model_rows(results),
        headline=[
            [label, fmt_num(estimate_of(h1.get(key)).get("estimate")), _interval(estimate_of(h1.get(key)))]
            for key, label in H1_SUMMARY
            if isinstance(h1.get(key), Mapping)
        ],
        simulated=simulated,
        simulated_models=_simulated_models(results),
    )
    blocks = _headline_blocks(results)
    reasons = Counter(r for _, b in blocks if (r := _reason(b)) is not None)
    for reason, n in reasons.most_common():
        out.reasons.append(f"{reason} ({n} of the {len(blocks)} estimates above)")
    if blocks and len(reasons) == 1 and sum(reasons.values()) == len(blocks):
        out.global_reason = next(iter(reasons))
        out.reasons = [
            f"{out.global_reason}: this applies to every estimate above, so every interval, p value and "
            f"rank interval is withheld (marked \u201c{NOT_IDENTIFIABLE_MARK}\u201d here and "
            "\u201cnot identifiable\u201d in the sections below); the point estimates are descriptions only."
        ]
    out.ties = _tie_text(_ties(results), out.global_reason)
    return out
