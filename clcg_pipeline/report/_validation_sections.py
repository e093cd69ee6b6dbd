"""The report sections of the two validation studies (STUDY.md section 7, issue 10).

``error_taxonomy``: two LLM judges label both sides of English/target response pairs. Shown:
label frequencies per judge and side, the EN -> target transition matrix as a heat map per
judge, cross-lingual loss overall and by Joshi class, judge agreement, each label's
contribution to the score delta, order bias and self-preference, the caveats.

``human_validation``: human ratings after the quality-control funnel. Shown: a banner when
the annotations are simulated, the funnel, Krippendorff's alpha per dimension against the
0.67 reference, Spearman, class adequacy vs CLCG, the paired preference, the ceiling rule and
human-vs-judge agreement; "awaiting annotations" when nothing was imported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from markupsafe import Markup

from clcg_pipeline.report._format import MISSING, as_float, fmt_int, fmt_num, fmt_p
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline.report._page import Part, Row, Section
from clcg_pipeline.report._studies import (
    CI_WITHHELD,
    caveat_parts,
    ci_cell,
    clean,
    col,
    empty_note,
    facts_part,
    fmt_pct,
    normal_status,
    record_table,
    records,
    row_flags,
    status_part,
    withheld,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg

Walk = Callable[[object, list[str], list[Part], str, str], None]
METRIC_NAMES = {
    "token_f1": "Token-F1",
    "rouge_l": "ROUGE-L",
    "semsim": "semantic similarity",
    "clcg_class": "class CLCG",  # class-level rank correlation of adequacy with the class gap
}
SIDE_COLOURS = {"en": "#31688e", "target": "#e6550d"}
ALPHA_REFERENCE = 0.67  # Krippendorff's floor for tentative conclusions

TAXONOMY_KEYS = {
    "status",
    "reason",
    "taxonomy",
    "judges",
    "pairs",
    "articles",
    "candidate_loss_share_realised",
    "candidate_loss_share_target",
    "excluded",
    "label_frequencies",
    "transitions",
    "crosslingual_loss",
    "agreement",
    "delta",
    "delta_contribution",
    "order_bias",
    "self_preference",
    "decomposition",
    "caveats",
}
HUMAN_KEYS = {
    "status",
    "reason",
    "simulated",
    "qc_funnel",
    "alpha",
    "spearman",
    "class_adequacy",
    "preference",
    "ceiling",
    "judge_agreement",
    "caveats",
    "annotators",
    "ratings",
    "items",
}


def _chart(svg: str) -> list[Part]:
    return [Part("chart", chart=Markup(svg))] if svg else []  # built by _svg/_heatmap, which escape


def _rest(block: Mapping[str, Any], known: set[str], key: str, walk: Walk) -> list[Part]:
    """Keys beyond the contract still render (generically), so nothing computed is hidden."""
    rest = {k: v for k, v in block.items() if k not in known}
    parts: list[Part] = []
    if rest:
        parts.append(Part("heading", text="Further results"))
        walk(rest, [], parts, key, key)
    return parts


def _judge_of(record: Mapping[str, Any]) -> str:
    return str(record.get("judge") or MISSING)


# ---------------------------------------------------------------------------------------------
# Error taxonomy


def taxonomy_section(
    raw: Mapping[str, Any] | None, walk: Walk, langs: Mapping[str, Mapping[str, Any]]
) -> Section:
    section = Section(
        key="error_taxonomy",
        title="Error taxonomy: what the judges say went wrong",
        caption="Two LLM judges (blind to model, language code and resource class) give each side of an "
        "English/target response pair one primary label. Cross-lingual loss = English side correct and "
        "target side a semantic error (a pair condition, not a label).",
    )
    block = clean(raw) if isinstance(raw, Mapping) else None
    section.parts.append(status_part(block, key="error_taxonomy", what="the error taxonomy"))
    if block is None:
        return section
    status = normal_status(block)
    judges = records(block, "judges")
    share = block.get("candidate_loss_share_realised")
    facts = facts_part(
        [
            ("taxonomy", block.get("taxonomy")),
            ("pairs", fmt_int(block.get("pairs")) if block.get("pairs") is not None else None),
            ("articles", fmt_int(block.get("articles")) if block.get("articles") is not None else None),
            (
                "candidate losses (realised share)",
                None
                if share is None
                else fmt_pct(share)
                + (
                    f" (target {fmt_pct(block['candidate_loss_share_target'])})"
                    if block.get("candidate_loss_share_target") is not None
                    else ""
                )
                + "; a score heuristic, not a label",
            ),
            (
                "judges",
                ", ".join(str(j) for j in block["judges"])
                if isinstance(block.get("judges"), list) and block["judges"] and not judges
                else None,
            ),
        ]
    )
    if facts:
        section.parts.append(facts)
    if judges:
        section.parts.append(Part("heading", text="Judges"))
        section.parts += record_table(
            judges,
            [
                col("judge", "judge"),
                col("family", "family"),
                col("judgements", "judgements", "int"),
                col("usable", "ok", "int"),
                col("absent", "absent", "int"),
            ],
            known={"judge", "family", "judgements", "ok", "absent"},
        )
    section.parts += _label_frequencies(block, status)
    section.parts += _transitions(block, status)
    section.parts += _crosslingual_loss(block, status, langs)
    section.parts += _agreement(block, status)
    section.parts += _delta(block, status)
    section.parts += _order_bias(block, status)
    section.parts += _self_preference(block, status)
    excluded = records(block, "excluded")
    if excluded:
        section.parts.append(Part("heading", text="Judgements left out (unparseable, refused, missing)"))
        # Here the status is the data (why a judgement is out), not a flag on the row.
        section.parts += record_table(
            [{**{k: v for k, v in r.items() if k != "status"}, "why": r.get("status")} for r in excluded],
            [col("judge", "judge"), col("side", "side"), col("status", "why"), col("n", "n", "int")],
            value_key="n",
            known={"judge", "side", "why", "n"},
        )
    if block.get("decomposition"):
        section.parts.append(Part("note", text="Delta decomposition: " + str(block["decomposition"])))
    section.parts += caveat_parts(block)
    section.parts += _rest(block, TAXONOMY_KEYS, "error_taxonomy", walk)
    return section


def _label_order(rows: list[Mapping[str, Any]], *keys: str) -> list[str]:
    order: list[str] = []
    for r in rows:
        for k in keys:
            label = r.get(k)
            if label is not None and str(label) not in order:
                order.append(str(label))
    return order


def _label_frequencies(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "label_frequencies")
    parts = [Part("heading", text="Label frequencies per judge and side")]
    if not rows:
        return parts + empty_note(status, "label frequencies") if status == "ok" else []
    labels = _label_order(rows, "label")
    for judge in dict.fromkeys(_judge_of(r) for r in rows):
        mine = [r for r in rows if _judge_of(r) == judge]
        mine.sort(key=lambda r: (labels.index(str(r.get("label"))), str(r.get("side")) != "en"))
        bars = [
            Bar(
                label=f"{words(r.get('label'))} \u00b7 {'EN' if r.get('side') == 'en' else r.get('side')}",
                value=as_float(r.get("share")) or 0.0,
                low=as_float(r.get("ci_low")),
                high=as_float(r.get("ci_high")),
                colour=SIDE_COLOURS.get(str(r.get("side")), "#969696"),
                flagged=withheld(r, "share") and status != "ok",
            )
            for r in mine
            if as_float(r.get("share")) is not None
        ]
        parts.append(Part("chart-title", text=f"{judge}: share of each label, English and target side"))
        parts += _chart(
            bar_chart_svg(
                bars,
                title=f"Label shares by {judge}: English side (blue) and target side (orange)",
                x_label=f"share of {judge}'s usable labels on that side",
                legend=False,
                chart_id=f"chart-taxonomy-labels-{judge}",
            )
        )
    parts.append(
        Part("note", text="Bars: English side in blue, target side in orange; whiskers are the intervals.")
    )
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("side", "side"),
            col("label", "label", "words"),
            col("n", "n", "int"),
            col("of", "total", "int"),
            col("share", "share", "pct"),
            ("interval", lambda r: ci_cell(r, "share", pct=True), True),
        ],
        value_key="share",
        section_status=status,
        known={"judge", "side", "label", "n", "total", "share", "ci_low", "ci_high", "n_articles"},
    )
    return parts


def transition_cells(
    rows: list[Mapping[str, Any]], judge: str, labels: list[str]
) -> dict[tuple[str, str], Cell]:
    """Every EN x target label cell of one judge; pairs never seen are 0, not missing."""
    found = {(str(r.get("en_label")), str(r.get("target_label"))): r for r in rows if _judge_of(r) == judge}
    cells = {}
    for en in labels:
        for target in labels:
            r = found.get((en, target))
            n = int(as_float(r.get("n")) or 0) if r else 0
            share = as_float(r.get("share")) if r else 0.0
            share = 0.0 if share is None else share
            cells[(en, target)] = Cell(
                value=share,
                text=str(n),
                sub=fmt_pct(share, 0 if share >= 0.095 or share == 0 else 1),
                tip=f"EN {words(en)} \u2192 target {words(target)}: {n} pair{'s' if n != 1 else ''} "
                f"({fmt_pct(share)} of {judge}'s doubly labelled pairs)",
            )
    return cells


def _transitions(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "transitions")
    parts = [Part("heading", text="Transitions: English label \u2192 target label")]
    if not rows:
        return parts + empty_note(status, "transitions") if status == "ok" else []
    frequencies = records(block, "label_frequencies")
    labels = _label_order(frequencies, "label")
    for label in _label_order(rows, "en_label", "target_label"):
        if label not in labels:
            labels.append(label)
    parts.append(
        Part(
            "note",
            text="Rows: the English side's label; columns: the target side's label. Each cell: number of "
            "pairs and their share of the judge's doubly labelled pairs. Off the diagonal, the label changed "
            "with the language.",
        )
    )
    for judge in dict.fromkeys(_judge_of(r) for r in rows):
        cells = transition_cells(rows, judge, labels)
        total = sum(int(c.text) for c in cells.values())
        same = sum(int(cells[(lab, lab)].text) for lab in labels)
        parts.append(Part("chart-title", text=f"{judge}: {total} pairs, {same} keep their label"))
        parts += _chart(
            heatmap_svg(
                labels,
                labels,
                cells,
                title=f"Transition matrix of {judge}: English label to target label",
                desc=f"{len(labels)} by {len(labels)} heat map of {total} pairs labelled by {judge} on both "
                f"sides; rows are the English label, columns the target label; {same} pairs keep their "
                "label. Darker = larger share of pairs.",
                row_title="EN label \u2193",
                column_title="target label \u2192",
                chart_id=f"heatmap-transitions-{judge}",
                label=words,
            )
        )
    return parts


def _loss_group(group: object, langs: Mapping[str, Mapping[str, Any]]) -> tuple[str, int | None, int]:
    """A loss group's label, Joshi class (colour) and sort rank: all, classes, languages, models."""
    text = str(group)
    kind, _, value = text.partition("=")
    if text == "all":
        return "all pairs", None, 0
    if kind == "joshi_class":
        number = as_float(value)
        return (f"Joshi class {value}", int(number) if number is not None else None, 1)
    if kind == "language":
        name = langs.get(value, {}).get("name")
        return (f"{name} ({value})" if name else value, None, 2)
    if kind == "model":
        return (f"model {value}", None, 3)
    return (text, None, 4)


def _crosslingual_loss(
    block: Mapping[str, Any], status: str, langs: Mapping[str, Mapping[str, Any]]
) -> list[Part]:
    rows = records(block, "crosslingual_loss")
    parts = [Part("heading", text="Cross-lingual loss (EN correct, target a semantic error)")]
    if not rows:
        return parts + empty_note(status, "cross-lingual loss estimates") if status == "ok" else []
    rows = sorted(rows, key=lambda r: (_judge_of(r), _loss_group(r.get("group"), langs)[2]))
    bars = []
    for r in rows:
        label, joshi, rank = _loss_group(r.get("group"), langs)
        value = as_float(r.get("estimate"))
        if rank > 1 or value is None:
            continue
        bars.append(
            Bar(
                label=f"{_judge_of(r)} \u00b7 {label}",
                value=value,
                low=as_float(r.get("ci_low")),
                high=as_float(r.get("ci_high")),
                joshi_class=joshi,
                colour="#636363" if joshi is None else None,
                flagged=bool(row_flags(r, section_status=status)),
            )
        )
    parts += _chart(
        bar_chart_svg(
            bars,
            title="Cross-lingual loss per judge: all pairs and by Joshi class, with intervals",
            x_label="share of pairs with EN correct and target a semantic error",
            legend=any(b.joshi_class is not None for b in bars),
            chart_id="chart-taxonomy-loss",
        )
    )
    parts += record_table(
        [{**r, "group": _loss_group(r.get("group"), langs)[0]} for r in rows],
        [
            col("judge", "judge"),
            col("group", "group"),
            col("loss share", "estimate", "pct"),
            ("interval", lambda r: ci_cell(r, pct=True), True),
            col("pairs", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        section_status=status,
        known={"judge", "group", "estimate", "ci_low", "ci_high", "n", "n_articles"},
    )
    return parts


def _agreement(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "agreement")
    parts = [Part("heading", text="Judge agreement (percent and Cohen's kappa)")]
    if not rows:
        return parts + empty_note(status, "agreement statistics") if status == "ok" else []
    level_order = {"fine": 0, "collapsed": 1, "binary": 2}
    rows = sorted(rows, key=lambda r: level_order.get(str(r.get("level")), 3))
    parts += record_table(
        rows,
        [
            col("level", "level"),
            (
                "judges",
                lambda r: " vs ".join(str(r[k]) for k in ("judge_a", "judge_b") if r.get(k)) or MISSING,
                False,
            ),
            col("percent", "percent", "pct"),
            (
                "percent interval",
                lambda r: ci_cell(r, "percent", low="percent_ci_low", high="percent_ci_high", pct=True),
                True,
            ),
            col("kappa", "kappa", "num"),
            ("kappa interval", lambda r: ci_cell(r, "kappa"), True),
            col("n", "n", "int"),
            col("articles", "n_articles", "int"),
        ],
        value_key="kappa",
        section_status=status,
        known={
            "level",
            "judge_a",
            "judge_b",
            "percent",
            "percent_ci_low",
            "percent_ci_high",
            "kappa",
            "ci_low",
            "ci_high",
            "n",
            "n_articles",
            "unit",
        },
    )
    parts.append(
        Part(
            "note",
            text="fine = the nine labels; collapsed = the seven-class mapping; binary = semantic error or "
            "not. Agreement between two LLM judges is coding consistency, not validity.",
        )
    )
    return parts


def _delta(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "delta_contribution")
    parts = [Part("heading", text="Contribution of each target label to the EN \u2212 target score delta")]
    if not rows:
        return parts + empty_note(status, "delta contributions") if status == "ok" else []
    totals = records(block, "delta")
    if totals:
        parts += record_table(
            totals,
            [
                col("judge", "judge"),
                col("delta", "estimate", "num"),
                ("interval", ci_cell, True),
                col("pairs", "n", "int"),
                col("articles", "n_articles", "int"),
            ],
            section_status=status,
            known={"judge", "estimate", "ci_low", "ci_high", "n", "n_articles"},
        )
    bars = [
        Bar(
            label=f"{_judge_of(r)} \u00b7 {words(r.get('label'))}",
            value=value,
            low=as_float(r.get("ci_low")),
            high=as_float(r.get("ci_high")),
            colour="#756bb1",
            flagged=bool(row_flags(r, "contribution", section_status=status)),
        )
        for r in rows
        if (value := as_float(r.get("contribution"))) is not None
    ]
    parts += _chart(
        bar_chart_svg(
            bars,
            title="Contribution to the score delta (frequency x mean loss) per judge and target label",
            x_label="contribution to mean(EN score \u2212 target score)",
            legend=False,
            chart_id="chart-taxonomy-delta",
        )
    )
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("target label", "label", "words"),
            col("pairs", "n", "int"),
            col("frequency", "frequency", "pct"),
            col("mean loss", "mean_loss", "num"),
            (
                "mean loss interval",
                lambda r: ci_cell(r, "mean_loss", low="mean_loss_ci_low", high="mean_loss_ci_high"),
                True,
            ),
            col("contribution", "contribution", "num"),
            ("interval", lambda r: ci_cell(r, "contribution"), True),
        ],
        value_key="contribution",
        section_status=status,
        known={
            "judge",
            "label",
            "n",
            "frequency",
            "mean_loss",
            "mean_loss_ci_low",
            "mean_loss_ci_high",
            "contribution",
            "ci_low",
            "ci_high",
            "n_articles",
        },
    )
    return parts


def _order_bias(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "order_bias")
    parts = [Part("heading", text="Order bias (a pair shown both ways round)")]
    if not rows:
        return parts + empty_note(status, "order-bias measurements") if status == "ok" else []
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("pairs", "pairs", "int"),
            col("flips", "flips", "int"),
            col("flip rate", "flip_rate", "pct"),
            ("interval", lambda r: ci_cell(r, "flip_rate", pct=True), True),
            col("first shown preferred", "first_shown_preferred", "pct"),
        ],
        value_key="flip_rate",
        section_status=status,
        known={
            "judge",
            "pairs",
            "flips",
            "flip_rate",
            "ci_low",
            "ci_high",
            "first_shown_preferred",
            "n_articles",
        },
    )
    parts.append(
        Part(
            "note",
            text="Flip rate = share of pairs whose preferred response changes when the order is swapped "
            "(0 = no order effect).",
        )
    )
    return parts


def _self_preference(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "self_preference")
    parts = [Part("heading", text="Self-preference (a judge rating its own family's responses)")]
    if not rows:
        return parts + empty_note(status, "self-preference measurements") if status == "ok" else []
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("family", "judge_family"),
            col("own family correct", "own_rate", "pct"),
            col("other families correct", "other_rate", "pct"),
            col("difference", "difference", "num"),
            ("interval", lambda r: ci_cell(r, "difference"), True),
            col("excess over other judges", "excess", "num"),
            (
                "excess interval",
                lambda r: ci_cell(r, "excess", low="excess_ci_low", high="excess_ci_high"),
                True,
            ),
            col("n", "n", "int"),
        ],
        value_key="difference",
        section_status=status,
        known={
            "judge",
            "judge_family",
            "own_rate",
            "other_rate",
            "difference",
            "ci_low",
            "ci_high",
            "excess",
            "excess_ci_low",
            "excess_ci_high",
            "n",
            "n_articles",
        },
    )
    return parts


# ---------------------------------------------------------------------------------------------
# Human validation


SIMULATED_BANNER = (
    "SIMULATED annotations: the ratings in this section come from the simulated demo set shipped with "
    "the code, not from human annotators. They exercise the import, quality control and statistics "
    "end to end; no number here is evidence about any model."
)


SIMULATED_CAVEAT = (
    "Human validation uses SIMULATED annotations (the demo set shipped with the code), not ratings by "
    "people: its numbers exercise the pipeline and are no evidence about any model."
)


def human_section(raw: Mapping[str, Any] | None, walk: Walk) -> Section:
    section = Section(
        key="human_validation",
        title="Human validation",
        caption="Human ratings of individual responses and contrastive pairs, after the quality-control "
        "funnel: agreement, correlation with Token-F1, class-level adequacy against CLCG, the paired "
        "preference and the ceiling rule.",
    )
    block = clean(raw) if isinstance(raw, Mapping) else None
    if block is not None and block.get("simulated") is True:
        section.parts.append(Part("banner", text=SIMULATED_BANNER))
    extra = ""
    if block is not None and normal_status(block) == "awaiting":  # also "awaiting annotations"
        extra = (
            "No annotation has been imported yet: export the annotation sample, collect the ratings and drop "
            "the returned files in the inbox; the results appear here after the next run."
        )
    section.parts.append(status_part(block, key="human_validation", what="human validation", extra=extra))
    if block is None:
        return section
    status = normal_status(block)
    counts = facts_part(
        [
            (name, fmt_int(block[key]))
            for key, name in (
                ("annotators", "annotators after QC"),
                ("ratings", "ratings after QC"),
                ("items", "items rated"),
            )
            if block.get(key) is not None
        ]
    )
    if counts:
        section.parts.append(counts)
    section.parts += _funnel(block, status)
    section.parts += _alpha(block, status)
    section.parts += _spearman(block, status)
    section.parts += _class_adequacy(block, status)
    section.parts += _preference(block, status)
    section.parts += _ceiling(block, status)
    section.parts += _human_judges(block, status)
    section.parts += caveat_parts(block)
    section.parts += _rest(block, HUMAN_KEYS, "human_validation", walk)
    return section


def _funnel(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "qc_funnel")
    parts = [Part("heading", text="Quality-control funnel")]
    if not rows:
        return parts + empty_note(status, "quality-control steps") if status == "ok" else []
    bars = [
        Bar(label=words(r.get("step")), value=value, colour="#4a7fb0")
        for r in rows
        if (value := as_float(r.get("remaining_ratings"))) is not None
    ]
    parts += _chart(
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
            col("annotators remaining", "remaining_annotators", "int"),
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
        },
    )
    return parts


def _alpha(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "alpha")
    parts = [Part("heading", text="Inter-annotator agreement: Krippendorff's alpha per dimension")]
    if not rows:
        return parts + empty_note(status, "agreement statistics") if status == "ok" else []
    bars = [
        Bar(
            label=f"{words(r.get('dimension'))} ({r.get('level') or 'level?'})",
            value=value,
            low=as_float(r.get("ci_low")),
            high=as_float(r.get("ci_high")),
            colour="#2c7fb8" if value >= ALPHA_REFERENCE else "#d95f0e",
            flagged=bool(row_flags(r, "alpha", section_status=status)),
        )
        for r in rows
        if (value := as_float(r.get("alpha"))) is not None
    ]
    parts += _chart(
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


def _spearman(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "spearman")
    parts = [Part("heading", text="Spearman correlation of the automatic metric with human ratings")]
    if not rows:
        return parts + empty_note(status, "correlations") if status == "ok" else []
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


def _class_adequacy(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "class_adequacy")
    parts = [Part("heading", text="Adequacy per Joshi class against CLCG")]
    if not rows:
        return parts + empty_note(status, "class-level adequacy") if status == "ok" else []
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


def _preference(block: Mapping[str, Any], status: str) -> list[Part]:
    pref = block.get("preference")
    parts = [Part("heading", text="Paired preference: higher- vs lower-resource language")]
    if not isinstance(pref, Mapping) or not pref:
        return parts + empty_note(status, "preference result") if status == "ok" else []
    facts = facts_part(
        [
            ("decisive pairs", fmt_int(pref.get("decisive")) if pref.get("decisive") is not None else None),
            (
                "higher-resource preferred",
                fmt_int(pref.get("higher_preferred")) if pref.get("higher_preferred") is not None else None,
            ),
        ]
    )
    if facts:
        parts.append(facts)
    mixed = pref.get("mixed") if isinstance(pref.get("mixed"), Mapping) else {}
    boot = pref.get("bootstrap") if isinstance(pref.get("bootstrap"), Mapping) else {}
    body = []

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
        pref.get("proportion"),
        pref.get("exact_ci_low"),
        pref.get("exact_ci_high"),
        pref.get("p_one_sided"),
    )
    if mixed:
        line(
            "Mixed model probability (crossed random intercepts)",
            mixed.get("probability"),
            mixed.get("ci_low"),
            mixed.get("ci_high"),
            mixed.get("p_one_sided"),
            f"method: {mixed['method']}" if mixed.get("method") else "",
        )
        mixed_status = str(mixed.get("status") or "ok")
        if not mixed_status.lower().startswith(("ok", "fitted", "converged")) or "warning" in mixed_status:
            body[-1].flags.append(f"mixed model: {mixed_status}")
        if mixed.get("reason"):
            body[-1].flags.append(f"mixed model: {mixed['reason']}")
        if mixed.get("odds_ratio") is not None:
            line(
                "Mixed model odds ratio",
                mixed.get("odds_ratio"),
                mixed.get("or_ci_low"),
                mixed.get("or_ci_high"),
                None,
            )
    if boot:
        line(
            "Annotator-cluster bootstrap",
            boot.get("estimate"),
            boot.get("ci_low"),
            boot.get("ci_high"),
            boot.get("p_one_sided"),
        )
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


def _ceiling(block: Mapping[str, Any], status: str) -> list[Part]:
    ceiling = block.get("ceiling")
    parts = [Part("heading", text="Ceiling rule")]
    if not isinstance(ceiling, Mapping) or not ceiling:
        return parts + empty_note(status, "ceiling-rule verdict") if status == "ok" else []
    median = ceiling.get("min_class_adequacy_median")
    diff = ceiling.get("high_low_difference")
    numbers = (
        f"minimum adequacy median across resource classes {fmt_num(median, 2)} (rule: \u2265 4.5), "
        f"HIGH \u2212 LOW adequacy difference {fmt_num(diff, 2)} (rule: < 0.5)"
    )
    triggered = ceiling.get("triggered")
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
        parts.append(Part("status", level="ok", text=f"Ceiling rule not triggered: {numbers}."))
    else:
        reason = ceiling.get("reason")
        parts.append(
            Part(
                "status", level="warn", text="Ceiling rule not evaluated" + (f": {reason}" if reason else ".")
            )
        )
    return parts


def _human_judges(block: Mapping[str, Any], status: str) -> list[Part]:
    rows = records(block, "judge_agreement")
    parts = [Part("heading", text="Human vs LLM-judge agreement (overlap rows)")]
    if not rows:
        return parts + empty_note(status, "human-vs-judge agreement") if status == "ok" else []
    parts += record_table(
        rows,
        [
            col("judge", "judge"),
            col("percent", "percent", "pct"),
            col("kappa", "kappa", "num"),
            ("kappa interval", lambda r: ci_cell(r, "kappa"), True),
            col("n", "n", "int"),
        ],
        value_key="kappa",
        section_status=status,
        known={"judge", "percent", "kappa", "ci_low", "ci_high", "n"},
    )
    return parts


__all__ = [
    "CI_WITHHELD",
    "SIMULATED_BANNER",
    "SIMULATED_CAVEAT",
    "human_section",
    "taxonomy_section",
    "transition_cells",
]
