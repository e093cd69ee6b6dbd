"""The report section of human validation (docs/HUMAN_VALIDATION.md).

Human ratings after the quality-control funnel. Shown: a banner when the annotations are
simulated, the funnel, Krippendorff's alpha per dimension against the 0.67 reference, Spearman,
class adequacy vs CLCG, the paired preference, the ceiling rule and human-vs-judge agreement,
pooled and per language and script, and how far the judges' errors overlap (issue 36);
"awaiting annotations" when nothing was imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import MISSING, as_float, fmt_int, fmt_num, fmt_p
from clcg_pipeline.report._labels import METRIC_NAMES, SIMULATED_BANNER
from clcg_pipeline.report._page import Part, Row, Section
from clcg_pipeline.report._studies import (
    Walk,
    by_group_parts,
    caveat_parts,
    chart,
    ci_cell,
    col,
    facts_part,
    further_results,
    normal_status,
    opening,
    record_table,
    records,
    row_flags,
    status_part,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.storage import (
    CeilingView,
    HumanValidationResults,
    HumanValidationView,
    PreferenceView,
    QcStepView,
    document_keys,
)

# Rendered generically under "Further results" (no dedicated block of the section).
HUMAN_GENERIC_KEYS = frozenset(
    {"methods", "articles", "max_adequacy_incomplete_keypoints", "judge_consensus"}
)
HUMAN_KEYS = document_keys(HumanValidationResults) - HUMAN_GENERIC_KEYS
ALPHA_REFERENCE = 0.67  # Krippendorff's floor for tentative conclusions


def human_section(
    raw: HumanValidationResults | None, walk: Walk, view: HumanValidationView | None
) -> Section:
    """The section from ``view`` (the typed ``human_validation``, built once by the report) and, for
    its record tables and further results, ``raw`` (the same entry, cleaned by the report)."""
    section = Section(
        key="human_validation",
        title="Human validation",
        caption="Human ratings of individual responses and contrastive pairs, after the quality-control "
        "funnel: agreement, correlation with Token-F1, class-level adequacy against CLCG, the paired "
        "preference and the ceiling rule.",
    )
    block = raw if view is not None else None  # cleaned by the report, once for the view and tables
    if view is not None and view.is_simulated:
        section.parts.append(Part("banner", text=SIMULATED_BANNER))
    extra = ""
    if normal_status(view) == "awaiting":  # also "awaiting annotations"
        extra = (
            "No annotation has been imported yet: export the annotation sample, collect the ratings and drop "
            "the returned files in the inbox; the results appear here after the next run."
        )
    section.parts.append(_status_line(view, extra))
    if block is None or view is None:
        return section
    status = normal_status(view)
    counts = facts_part(
        [
            (name, fmt_int(value))
            for key, name in (
                ("annotators", "annotators after QC"),
                ("ratings", "ratings after QC"),
                ("items", "items rated"),
            )
            if (value := _analysed(view, key)) is not None
        ]
    )
    if counts:
        section.parts.append(counts)
    section.parts += _funnel(block, view, status)
    section.parts += _alpha(block, view, status)
    section.parts += _spearman(block, status)
    section.parts += _class_adequacy(block, status)
    section.parts += _preference(view.preference, status)
    section.parts += _ceiling(view.ceiling, status, simulated=view.is_simulated)
    section.parts += _human_judges(block, status)
    section.parts += _human_judges_by(block, status, "language")
    section.parts += _human_judges_by(block, status, "script")
    section.parts += _error_overlap(block, status)
    section.parts += caveat_parts(view)
    section.parts += further_results(block, HUMAN_KEYS, "human_validation", walk)
    return section


def _status_line(view: HumanValidationView | None, extra: str) -> Part:
    """The status line; "ok" under the SIMULATED banner says "simulated", never a green ok."""
    line = status_part(view, key="human_validation", what="human validation", extra=extra)
    if view is not None and view.is_simulated and line.level == "ok":
        return Part(
            "status",
            level="warn",
            text="Status: simulated (computed from the simulated demo annotations; no human rated these "
            "responses).",
        )
    return line


def _analysed(view: HumanValidationView, key: str) -> int | None:
    """A count after QC; the annotators from the funnel's last row where it has them (the funnel's
    last row and the section's counts are one figure: annotators with a rating left)."""
    last = view.qc_funnel[-1] if view.qc_funnel else None
    if key == "annotators" and last is not None and last.annotators_with_ratings is not None:
        return last.annotators_with_ratings
    return {"annotators": view.annotators, "ratings": view.ratings, "items": view.items}[key]


def _annotators_note(last: QcStepView) -> list[Part]:
    """Annotators not excluded can still lose every rating to a rating-level rule: say how many."""
    kept, rated = last.remaining_annotators, last.annotators_with_ratings
    if kept is None or rated is None or kept == rated:
        return []
    return [
        Part(
            "note",
            text=f"{fmt_int(kept)} annotators were not excluded, but {fmt_int(kept - rated)} of them lost "
            f"every rating to the rating-level rules, so {fmt_int(rated)} annotators have ratings in the "
            "analysis.",
        )
    ]


def _funnel(block: HumanValidationResults, view: HumanValidationView, status: str) -> list[Part]:
    rows, steps = records(block, "qc_funnel"), view.qc_funnel or []
    parts = opening("Quality-control funnel", bool(rows), status, "quality-control steps")
    if not rows:
        return parts
    bars = [
        Bar(label=words(r.step), value=value, colour="#4a7fb0")
        for r in steps
        if (value := as_float(r.remaining_ratings)) is not None
    ]
    parts += chart(
        bar_chart_svg(
            bars,
            title="Ratings remaining after each quality-control step",
            x_label="ratings remaining",
            legend=False,
            value_format=lambda v: f"{v:,.0f}",
            chart_id="chart-human-funnel",
        )
    )
    parts += record_table(
        rows,
        [
            col("step", "step", "words"),
            col("annotators excluded", "excluded_annotators", "int"),
            col("ratings excluded", "excluded_ratings", "int"),
            ("annotators with ratings", _annotators_cell, True),
            col("ratings remaining", "remaining_ratings", "int"),
        ],
        value_key="remaining_ratings",
        section_status=status,
        known={
            "step",
            "excluded_annotators",
            "excluded_ratings",
            "remaining_annotators",
            "remaining_ratings",
            "annotators_with_ratings",
        },
    )
    return parts + _annotators_note(steps[-1])


def _annotators_cell(record: Mapping[str, Any]) -> str:
    """Annotators with at least one rating left (older funnels: annotators not excluded)."""
    return fmt_int(record.get("annotators_with_ratings", record.get("remaining_annotators")))


def _alpha(block: HumanValidationResults, view: HumanValidationView, status: str) -> list[Part]:
    rows = records(block, "alpha")
    parts = opening(
        "Inter-annotator agreement: Krippendorff's alpha per dimension",
        bool(rows),
        status,
        "agreement statistics",
    )
    if not rows:
        return parts
    # The typed row for the bar, the record beside it for its flags (every field of the record).
    bars = [
        Bar(
            label=f"{words(r.dimension)} ({r.level or 'level?'})",
            value=value,
            low=as_float(r.ci_low),
            high=as_float(r.ci_high),
            colour="#2c7fb8" if value >= ALPHA_REFERENCE else "#d95f0e",
            flagged=bool(row_flags(record, "alpha", section_status=status)),
        )
        for r, record in zip(view.alpha or [], rows, strict=True)
        if (value := as_float(r.alpha)) is not None
    ]
    parts += chart(
        bar_chart_svg(
            bars,
            title="Krippendorff's alpha per dimension, with intervals; dashed line at 0.67",
            x_label="Krippendorff's alpha",
            legend=False,
            chart_id="chart-human-alpha",
            reference=(ALPHA_REFERENCE, "0.67 (tentative conclusions)"),
        )
    )
    parts += record_table(
        rows,
        [
            col("dimension", "dimension", "words"),
            col("level", "level"),
            col("alpha", "alpha", "num"),
            ("interval", lambda r: ci_cell(r, "alpha"), True),
            ("vs 0.67", lambda r: _versus(r.get("alpha"), ALPHA_REFERENCE), False),
            col("items", "items", "int"),
        ],
        value_key="alpha",
        section_status=status,
        known={"dimension", "level", "alpha", "ci_low", "ci_high", "items"},
    )
    return parts


def _versus(value: object, reference: float) -> str:
    number = as_float(value)
    if number is None:
        return MISSING
    return "at or above" if number >= reference else "below"


def _spearman(block: HumanValidationResults, status: str) -> list[Part]:
    rows = records(block, "spearman")
    parts = opening(
        "Spearman correlation of the automatic metric with human ratings", bool(rows), status, "correlations"
    )
    if not rows:
        return parts
    parts += record_table(
        rows,
        [
            ("metric", lambda r: METRIC_NAMES.get(str(r.get("metric")), words(r.get("metric"))), False),
            col("human rating", "human", "words"),
            col("rho", "rho", "num"),
            ("interval", lambda r: ci_cell(r, "rho"), True),
            col("p", "p", "p"),
            col("n", "n", "int"),
        ],
        value_key="rho",
        section_status=status,
        known={"metric", "human", "rho", "ci_low", "ci_high", "p", "n"},
    )
    return parts


def _class_adequacy(block: HumanValidationResults, status: str) -> list[Part]:
    rows = records(block, "class_adequacy")
    parts = opening("Adequacy per Joshi class against CLCG", bool(rows), status, "class-level adequacy")
    if not rows:
        return parts
    parts += record_table(
        rows,
        [
            col("Joshi class", "joshi_class"),
            col("adequacy mean", "adequacy_mean", "num"),
            col("adequacy median", "adequacy_median", "num"),
            col("CLCG", "clcg", "num"),
            col("ratings", "n", "int"),
        ],
        value_key="adequacy_mean",
        section_status=status,
        known={"joshi_class", "adequacy_mean", "adequacy_median", "clcg", "n"},
        always={"CLCG"},  # a missing class CLCG shows as a dash, not as a vanished column
    )
    return parts


def _preference(pref: PreferenceView | None, status: str) -> list[Part]:
    # An empty ``preference`` ({}) is no result, as an absent one.
    found = pref is not None and bool(pref.model_fields_set)
    parts = opening(
        "Paired preference: higher- vs lower-resource language", found, status, "preference result"
    )
    if pref is None or not found:
        return parts
    facts = facts_part(
        [
            ("decisive pairs", fmt_int(pref.decisive) if pref.decisive is not None else None),
            (
                "higher-resource preferred",
                fmt_int(pref.higher_preferred) if pref.higher_preferred is not None else None,
            ),
        ]
    )
    if facts:
        parts.append(facts)
    body = _preference_rows(pref, status)
    parts.append(
        Part(
            "table",
            columns=["", "estimate", "interval", "p (one-sided)", "flags and notes"],
            rows=body,
            numeric=["interval", "p (one-sided)"],
        )
    )
    parts.append(
        Part(
            "note",
            text="Proportion of decisive pairs in which the higher-resource language's response was "
            "preferred (0.5 = no preference); non-decisive answers are left out.",
        )
    )
    return parts


def _preference_rows(pref: PreferenceView, status: str) -> list[Row]:
    """The raw proportion, the mixed model (probability, odds ratio) and the bootstrap, one row each."""
    mixed, boot = pref.mixed, pref.bootstrap
    body: list[Row] = []

    def line(label: str, value: object, low: object, high: object, p: object, note: str = "") -> None:
        record = {"estimate": value, "ci_low": low, "ci_high": high}
        flags = row_flags(record, section_status=status)
        body.append(
            Row(
                cells=[label, fmt_num(value), ci_cell(record), fmt_p(p), note],
                flags=flags,
            )
        )

    line(
        "Raw proportion (exact binomial interval)",
        pref.proportion,
        pref.exact_ci_low,
        pref.exact_ci_high,
        pref.p_one_sided,
    )
    # An empty ``mixed`` or ``bootstrap`` ({}) adds no row, as an absent one.
    if mixed is not None and mixed.model_fields_set:
        line(
            "Mixed model probability (crossed random intercepts)",
            mixed.probability,
            mixed.ci_low,
            mixed.ci_high,
            mixed.p_one_sided,
            f"method: {mixed.method}" if mixed.method else "",
        )
        mixed_status = mixed.status or "ok"
        if not mixed_status.lower().startswith(("ok", "fitted", "converged")) or "warning" in mixed_status:
            body[-1].flags.append(f"mixed model: {mixed_status}")
        if mixed.reason:
            body[-1].flags.append(f"mixed model: {mixed.reason}")
        if mixed.odds_ratio is not None:
            line("Mixed model odds ratio", mixed.odds_ratio, mixed.or_ci_low, mixed.or_ci_high, None)
    if boot is not None and boot.model_fields_set:
        line("Annotator-cluster bootstrap", boot.estimate, boot.ci_low, boot.ci_high, boot.p_one_sided)
    return body


def _ceiling(ceiling: CeilingView | None, status: str, *, simulated: bool = False) -> list[Part]:
    # An empty ``ceiling`` ({}) is no verdict, as an absent one. On simulated ratings the verdict
    # is no finding: amber, never the green of a result under the section's SIMULATED banner.
    found = ceiling is not None and bool(ceiling.model_fields_set)
    parts = opening("Ceiling rule", found, status, "ceiling-rule verdict")
    if ceiling is None or not found:
        return parts
    median = ceiling.min_class_adequacy_median
    diff = ceiling.high_low_difference
    numbers = (
        f"minimum adequacy median across resource classes {fmt_num(median, 2)} (rule: \u2265 4.5), "
        f"HIGH \u2212 LOW adequacy difference {fmt_num(diff, 2)} (rule: < 0.5)"
    )
    triggered = ceiling.triggered
    if triggered is True:
        parts.append(
            Part(
                "status",
                level="warn",
                text=f"Ceiling rule TRIGGERED: {numbers}. Adequacy is near its ceiling in every class, "
                "so the human ratings cannot confirm or refute a cross-lingual gap.",
            )
        )
    elif triggered is False:
        verdict = f"Ceiling rule not triggered: {numbers}"
        verdict += " (on simulated ratings)." if simulated else "."
        parts.append(Part("status", level="warn" if simulated else "ok", text=verdict))
    else:
        reason = ceiling.reason
        parts.append(
            Part(
                "status", level="warn", text="Ceiling rule not evaluated" + (f": {reason}" if reason else ".")
            )
        )
    return parts


def _human_judges(block: HumanValidationResults, status: str) -> list[Part]:
    rows = records(block, "judge_agreement")
    parts = opening(
        "Human vs LLM-judge agreement (overlap rows)", bool(rows), status, "human-vs-judge agreement"
    )
    if not rows:
        return parts
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("percent", "percent", "pct"),
            col("kappa", "kappa", "num"),
            ("kappa interval", lambda r: ci_cell(_as_withheld(r), "kappa"), True),
            col("n", "n", "int"),
        ],
        value_key="kappa",
        section_status=status,
        known={"judge", "percent", "kappa", "ci_low", "ci_high", "n"},
    )
    return parts


def _as_withheld(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """A kappa of too few items has status ``ok`` (it was computed) but its interval was withheld."""
    if record.get("identifiable") is False and str(record.get("status") or "").lower() == "ok":
        return {k: v for k, v in record.items() if k != "status"}
    return record


def _human_judges_by(block: HumanValidationResults, status: str, by: str) -> list[Part]:
    """Human-vs-judge kappa per language or per script (``judge_kappa_by_<by>``): judges are known
    to agree less with humans in low-resource languages, which the pooled kappa hides."""
    return by_group_parts(
        block,
        grouped=f"judge_kappa_by_{by}",
        pooled="judge_agreement",
        by=by,
        title="Human vs LLM-judge agreement",
        what="human-vs-judge agreement",
        columns=[
            col("judge", "judge"),
            col("percent", "percent", "pct"),
            col("kappa", "kappa", "num"),
            ("kappa interval", lambda r: ci_cell(_as_withheld(r), "kappa"), True),
            col("n", "n", "int"),
            col("items", "clusters", "int"),
        ],
        value_key="kappa",
        status=status,
        known={"judge", "percent", "kappa", "ci_low", "ci_high", "n", "clusters", "status"},
    )


# The offline demo judges are marked wherever the overlap appears (issue 36).
RULE_BASED_MARK = " (rule-based offline stand-ins, simulated; not LLMs)"
_OVERLAP_KNOWN = {"by", "family", "rule_based", "error_definition", "n", "n_articles", "ci_low", "ci_high"}
_OVERLAP_KNOWN |= {"language", "script", "languages", "status"}


def _breakdown(record: Mapping[str, Any]) -> str:
    by = str(record.get("by") or "all")
    if by == "language":
        return f"{record.get('language')} ({record.get('script')})"
    if by == "script":
        return f"{record.get('script')} ({', '.join(str(x) for x in record.get('languages') or [])})"
    return "all rated responses"


def _judges_cell(record: Mapping[str, Any], *names: object) -> str:
    judges = " vs ".join(str(n) for n in names if n) or MISSING
    return judges + (RULE_BASED_MARK if record.get("rule_based") else "")


def _error_overlap(block: HumanValidationResults, status: str) -> list[Part]:
    """Per pair of judges, the correlation of their errors against the human consensus, and the
    effective number of independent judges: two judges wrong on the same responses count as one."""
    pairs = records(block, "judge_error_correlation")
    parts = opening(
        "Judge error overlap: correlation of the judges' errors", bool(pairs), status, "judge pairs"
    )
    if not pairs:
        return parts
    definitions = {str(r.get("family")): str(r.get("error_definition")) for r in pairs}
    parts.append(
        Part(
            "note",
            text="Error against the human consensus, per family: "
            + "; ".join(f"{words(k)}: {v}" for k, v in sorted(definitions.items()))
            + ". Correlation 1: the judges are wrong on the same responses; 0: independently.",
        )
    )
    parts += record_table(
        pairs,
        [
            col("family", "family", "words"),
            ("judges", lambda r: _judges_cell(r, r.get("judge_a"), r.get("judge_b")), False),
            ("group", _breakdown, False),
            col("error correlation", "correlation", "num"),
            ("interval", lambda r: ci_cell(r, "correlation"), True),
            col("mean error a", "mean_error_a", "num"),
            col("mean error b", "mean_error_b", "num"),
            col("responses", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        value_key="correlation",
        section_status=status,
        known=_OVERLAP_KNOWN | {"judge_a", "judge_b", "correlation", "mean_error_a", "mean_error_b"},
    )
    effective = records(block, "judge_effective_number")
    parts += opening("Effective number of independent judges", bool(effective), status, "effective numbers")
    if not effective:
        return parts
    parts.append(
        Part(
            "note",
            text="n_eff = k / (1 + (k \u2212 1) \u00d7 mean pairwise error correlation): k judges whose "
            "errors correlate are worth n_eff independent ones (docs/HUMAN_VALIDATION.md).",
        )
    )
    parts += record_table(
        effective,
        [
            col("family", "family", "words"),
            ("judges", lambda r: _judges_cell(r, *(r.get("judges") or [])), False),
            ("group", _breakdown, False),
            col("k", "k", "int"),
            col("mean error correlation", "mean_correlation", "num"),
            col("effective judges", "effective_judges", "num", digits=2),
            ("interval", lambda r: ci_cell(r, "effective_judges", digits=2), True),
            col("responses", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        value_key="effective_judges",
        section_status=status,
        known=_OVERLAP_KNOWN | {"judges", "k", "mean_correlation", "effective_judges"},
    )
    return parts
