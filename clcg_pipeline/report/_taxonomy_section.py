"""The report section of the error taxonomy (the automatic error taxonomy).

Two LLM judges label both sides of English/target response pairs. Shown: label frequencies per
judge and side, the EN -> target transition matrix as a heat map per judge, cross-lingual loss
overall and by Joshi class, then the checks on the judges (``_taxonomy_checks``): agreement, each
label's contribution to the score delta, order bias and self-preference (pooled, per target
language and per script); the caveats.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clcg_pipeline.report._format import as_float, fmt_int
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline.report._page import Part, Section
from clcg_pipeline.report._studies import (
    Walk,
    caveat_parts,
    chart,
    ci_cell,
    clean,
    col,
    facts_part,
    fmt_pct,
    further_results,
    normal_status,
    opening,
    record_table,
    records,
    row_flags,
    status_part,
    withheld,
    words,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.report._taxonomy_checks import (
    agreement_parts,
    delta_parts,
    judge_of,
    judges_phrase,
    order_bias_group_parts,
    order_bias_parts,
    self_preference_group_parts,
    self_preference_parts,
)
from clcg_pipeline.storage import ErrorTaxonomyResults, document_keys

TAXONOMY_KEYS = document_keys(ErrorTaxonomyResults)
SIDE_COLOURS = {"en": "#31688e", "target": "#e6550d"}


# ---------------------------------------------------------------------------------------------
# Error taxonomy


def taxonomy_section(
    raw: ErrorTaxonomyResults | None, walk: Walk, langs: Mapping[str, Mapping[str, Any]]
) -> Section:
    section = Section(
        key="error_taxonomy",
        title="Error taxonomy: what the judges say went wrong",
        caption="Two LLM judges (blind to model, language code and resource class) give each side of an "
        "English/target response pair one primary label. Cross-lingual loss = English side correct and "
        "target side a semantic error (a pair condition, not a label).",
    )
    block = clean(raw) if isinstance(raw, Mapping) else None
    if block is not None:
        phrase = judges_phrase(block)
        section.caption = phrase[0].upper() + phrase[1:] + section.caption.removeprefix("Two LLM judges")
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
    section.parts += agreement_parts(block, status)
    section.parts += delta_parts(block, status)
    section.parts += order_bias_parts(block, status)
    for by in ("language", "script"):
        section.parts += order_bias_group_parts(block, status, by)
    section.parts += self_preference_parts(block, status)
    for by in ("language", "script"):
        section.parts += self_preference_group_parts(block, status, by)
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
    section.parts += further_results(block, TAXONOMY_KEYS, "error_taxonomy", walk)
    return section


def _label_order(rows: list[Mapping[str, Any]], *keys: str) -> list[str]:
    order: list[str] = []
    for r in rows:
        for k in keys:
            label = r.get(k)
            if label is not None and str(label) not in order:
                order.append(str(label))
    return order


def _label_frequencies(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "label_frequencies")
    parts = opening("Label frequencies per judge and side", bool(rows), status, "label frequencies")
    if not rows:
        return parts
    labels = _label_order(rows, "label")
    for judge in dict.fromkeys(judge_of(r) for r in rows):
        mine = [r for r in rows if judge_of(r) == judge]
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
        parts += chart(
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
    found = {(str(r.get("en_label")), str(r.get("target_label"))): r for r in rows if judge_of(r) == judge}
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


def _transitions(block: ErrorTaxonomyResults, status: str) -> list[Part]:
    rows = records(block, "transitions")
    parts = opening("Transitions: English label \u2192 target label", bool(rows), status, "transitions")
    if not rows:
        return parts
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
    for judge in dict.fromkeys(judge_of(r) for r in rows):
        cells = transition_cells(rows, judge, labels)
        total = sum(int(c.text) for c in cells.values())
        same = sum(int(cells[(lab, lab)].text) for lab in labels)
        parts.append(Part("chart-title", text=f"{judge}: {total} pairs, {same} keep their label"))
        parts += chart(
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
    block: ErrorTaxonomyResults, status: str, langs: Mapping[str, Mapping[str, Any]]
) -> list[Part]:
    rows = records(block, "crosslingual_loss")
    parts = opening(
        "Cross-lingual loss (EN correct, target a semantic error)",
        bool(rows),
        status,
        "cross-lingual loss estimates",
    )
    if not rows:
        return parts
    rows = sorted(rows, key=lambda r: (judge_of(r), _loss_group(r.get("group"), langs)[2]))
    bars = []
    for r in rows:
        label, joshi, rank = _loss_group(r.get("group"), langs)
        value = as_float(r.get("estimate"))
        if rank > 1 or value is None:
            continue
        bars.append(
            Bar(
                label=f"{judge_of(r)} \u00b7 {label}",
                value=value,
                low=as_float(r.get("ci_low")),
                high=as_float(r.get("ci_high")),
                joshi_class=joshi,
                colour="#636363" if joshi is None else None,
                flagged=bool(row_flags(r, section_status=status)),
            )
        )
    parts += chart(
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
