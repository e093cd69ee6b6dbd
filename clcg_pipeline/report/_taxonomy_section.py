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

from clcg_pipeline.report._format import MISSING, as_float, fmt_int
from clcg_pipeline.report._heatmap import Cell, heatmap_svg
from clcg_pipeline.report._page import Part, Section
from clcg_pipeline.report._studies import (
    Walk,
    caveat_parts,
    chart,
    ci_cell,
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
    judges_phrase,
    order_bias_group_parts,
    order_bias_parts,
    self_preference_group_parts,
    self_preference_parts,
)
from clcg_pipeline.storage import (
    CrosslingualLossView,
    ErrorTaxonomyResults,
    ErrorTaxonomyView,
    LabelFrequencyView,
    TransitionView,
    document_keys,
)

TAXONOMY_KEYS = document_keys(ErrorTaxonomyResults)
SIDE_COLOURS = {"en": "#31688e", "target": "#e6550d"}


# ---------------------------------------------------------------------------------------------
# Error taxonomy


def taxonomy_section(
    raw: ErrorTaxonomyResults | None,
    walk: Walk,
    langs: Mapping[str, Mapping[str, Any]],
    view: ErrorTaxonomyView | None,
) -> Section:
    """The section from ``view`` (the typed ``error_taxonomy``, built once by the report) and, for
    its record tables and further results, ``raw`` (the same entry, cleaned by the report)."""
    section = Section(
        key="error_taxonomy",
        title="Error taxonomy: what the judges say went wrong",
        caption="Two LLM judges (blind to model, language code and resource class) give each side of an "
        "English/target response pair one primary label. Cross-lingual loss = English side correct and "
        "target side a semantic error (a pair condition, not a label).",
    )
    block = raw if view is not None else None  # cleaned by the report, once for the view and tables
    if block is not None:
        phrase = judges_phrase(block)
        section.caption = phrase[0].upper() + phrase[1:] + section.caption.removeprefix("Two LLM judges")
    section.parts.append(status_part(view, key="error_taxonomy", what="the error taxonomy"))
    if block is None or view is None:
        return section
    status = normal_status(view)
    judges = records(block, "judges")
    share, target = view.candidate_loss_share_realised, view.candidate_loss_share_target
    facts = facts_part(
        [
            ("taxonomy", view.taxonomy),
            ("pairs", fmt_int(view.pairs) if view.pairs is not None else None),
            ("articles", fmt_int(view.articles) if view.articles is not None else None),
            (
                "candidate losses (realised share)",
                None
                if share is None
                else fmt_pct(share)
                + (f" (target {fmt_pct(target)})" if target is not None else "")
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
    section.parts += _label_frequencies(block, view, status)
    section.parts += _transitions(block, view, status)
    section.parts += _crosslingual_loss(block, view, status, langs)
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
    if view.decomposition:
        section.parts.append(Part("note", text="Delta decomposition: " + view.decomposition))
    section.parts += caveat_parts(view)
    section.parts += further_results(block, TAXONOMY_KEYS, "error_taxonomy", walk)
    return section


def _label_order(rows: list[LabelFrequencyView]) -> list[str]:
    """The labels in the order the frequencies first name them."""
    return list(dict.fromkeys(r.label for r in rows if r.label is not None))


def _label_frequencies(block: ErrorTaxonomyResults, view: ErrorTaxonomyView, status: str) -> list[Part]:
    rows = records(block, "label_frequencies")
    parts = opening("Label frequencies per judge and side", bool(rows), status, "label frequencies")
    if not rows:
        return parts
    # The typed rows draw the bars; each record beside its row says whether its interval was withheld.
    typed = list(zip(view.label_frequencies or [], rows, strict=True))
    labels = _label_order(view.label_frequencies or [])
    for judge in dict.fromkeys(_judge(f) for f, _ in typed):
        mine = sorted(
            (pair for pair in typed if _judge(pair[0]) == judge),
            key=lambda pair: (labels.index(str(pair[0].label)), str(pair[0].side) != "en"),
        )
        bars = [
            Bar(
                label=f"{words(f.label)} \u00b7 {'EN' if f.side == 'en' else f.side}",
                value=as_float(f.share) or 0.0,
                low=as_float(f.ci_low),
                high=as_float(f.ci_high),
                colour=SIDE_COLOURS.get(str(f.side), "#969696"),
                flagged=withheld(record, "share") and status != "ok",
            )
            for f, record in mine
            if as_float(f.share) is not None
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


def _judge(row: TransitionView | LabelFrequencyView | CrosslingualLossView) -> str:
    return row.judge or MISSING  # as ``judge_of`` says it for a record


def transition_cells(
    rows: list[TransitionView], judge: str, labels: list[str]
) -> dict[tuple[str, str], Cell]:
    """Every EN x target label cell of one judge; pairs never seen are 0, not missing."""
    found = {(str(r.en_label), str(r.target_label)): r for r in rows if _judge(r) == judge}
    cells = {}
    for en in labels:
        for target in labels:
            r = found.get((en, target))
            n = int(as_float(r.n) or 0) if r else 0
            share = as_float(r.share) if r else 0.0
            share = 0.0 if share is None else share
            cells[(en, target)] = Cell(
                value=share,
                text=str(n),
                sub=fmt_pct(share, 0 if share >= 0.095 or share == 0 else 1),
                tip=f"EN {words(en)} \u2192 target {words(target)}: {n} pair{'s' if n != 1 else ''} "
                f"({fmt_pct(share)} of {judge}'s doubly labelled pairs)",
            )
    return cells


def _transitions(block: ErrorTaxonomyResults, view: ErrorTaxonomyView, status: str) -> list[Part]:
    rows = view.transitions or []
    parts = opening("Transitions: English label \u2192 target label", bool(rows), status, "transitions")
    if not rows:
        return parts
    labels = _label_order(view.label_frequencies or [])
    for row in rows:
        for label in (row.en_label, row.target_label):
            if label is not None and label not in labels:
                labels.append(label)
    parts.append(
        Part(
            "note",
            text="Rows: the English side's label; columns: the target side's label. Each cell: number of "
            "pairs and their share of the judge's doubly labelled pairs. Off the diagonal, the label changed "
            "with the language.",
        )
    )
    for judge in dict.fromkeys(_judge(r) for r in rows):
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
    block: ErrorTaxonomyResults, view: ErrorTaxonomyView, status: str, langs: Mapping[str, Mapping[str, Any]]
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
    # The typed rows draw the bars; each record beside its row gives the row's flags.
    typed = sorted(
        zip(view.crosslingual_loss or [], rows, strict=True),
        key=lambda pair: (_judge(pair[0]), _loss_group(pair[0].group, langs)[2]),
    )
    bars = []
    for loss, record in typed:
        label, joshi, rank = _loss_group(loss.group, langs)
        value = as_float(loss.estimate)
        if rank > 1 or value is None:
            continue
        bars.append(
            Bar(
                label=f"{_judge(loss)} \u00b7 {label}",
                value=value,
                low=as_float(loss.ci_low),
                high=as_float(loss.ci_high),
                joshi_class=joshi,
                colour="#636363" if joshi is None else None,
                flagged=bool(row_flags(record, section_status=status)),
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
        [{**record, "group": _loss_group(loss.group, langs)[0]} for loss, record in typed],
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
