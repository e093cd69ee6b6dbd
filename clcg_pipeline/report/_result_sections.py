"""The sections of the main results: per language, per model, per class, metrics, levels, the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from clcg_pipeline.report._builder import (
    Labeller,
    SectionBuilder,
    definition_text,
    fact_text,
    title_words,
)
from clcg_pipeline.report._contrast_section import contrast_section
from clcg_pipeline.report._document import joshi_of, lang_name
from clcg_pipeline.report._format import (
    MISSING,
    as_float,
    estimate_of,
    fmt_ci,
    fmt_int,
    fmt_num,
)
from clcg_pipeline.report._labels import H1_SUMMARY, KNOWN_SECTIONS, METRIC_NAMES, MODEL_COLUMNS, NOT_SECTIONS
from clcg_pipeline.report._page import Part, Row, Section, _pruned, flags_of
from clcg_pipeline.report._studies import chart
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.report._typed_sections import (
    context_gain_section,
    equivalence_section,
    h2_section,
    h4_section,
    nomological_section,
    parse_rule_section,
    repetitions_section,
    replication_section,
)
from clcg_pipeline.storage import (
    ClassMean,
    EstimateModel,
    EstimateRecord,
    H1Model,
    H3Results,
    JoshiClassResults,
    MetricSensitivityResults,
    StudyResults,
)

_MAX_SECTION_ROWS = 400


def result_sections(
    results: Mapping[str, Any],
    langs: Mapping[str, Mapping[str, Any]],
    builder: SectionBuilder,
    missing: list[dict[str, str]] | None,
    metric: str,
    view: StudyResults,
) -> list[Section]:
    """The analysis sections; ``view`` is the typed document (built once by the report) for the
    sections that read it."""
    definitions = builder.definitions
    sections: list[Section] = []
    # ``new_model`` has its own section at the top of the page (report/_new_model_section.py):
    # walked here too it came back as a raw dump of its fields.
    used: set[str] = {*NOT_SECTIONS, "new_model"}
    for names, title in KNOWN_SECTIONS:
        for name in names:
            if name not in results or name in used:
                continue
            used.add(name)
            value = results[name]
            caption = definition_text(definitions, name)
            if name == "excluded_versions":
                sections.append(_excluded_section(value, missing, langs))
            elif name in ("language_net", "net_by_language") and isinstance(value, Mapping):
                typed_net = view.language_net if name == "language_net" else None
                sections.append(
                    languages_section(
                        name,
                        title,
                        typed_net if typed_net is not None else untyped_estimates(value),
                        langs,
                        builder,
                        chart_title="Net CLCG per language (its gap minus the PT gap), with intervals",
                        x_label=f"Net CLCG: (EN \u2212 language) \u2212 (EN \u2212 PT), {metric}",
                        caption=caption
                        or "Each language's gap minus the Portuguese gap: the cost beyond a high-resource "
                        "non-English language.",
                    )
                )
            elif name in TYPED_SECTIONS and getattr(view, name) is not None:
                sections.append(TYPED_SECTIONS[name](name, title, getattr(view, name), builder, caption))
            elif name == "model_contrasts" and view.model_contrasts is not None:
                new = view.new_model if view.new_model and view.new_model.model else None
                sections.append(
                    contrast_section(name, title, value, builder, caption, view.model_contrasts, new)
                )
            elif name in ("h3", "level_profile") and isinstance(value, Mapping):
                typed_h3 = view.h3 if name == "h3" else None
                sections.append(_level_section(name, title, value, builder, caption, typed_h3))
            else:
                section = Section(key=name, title=title, caption=caption)
                builder.walk(value, [], section.parts, name, name)
                sections.append(section)
    for name in results:
        if name not in used:
            section = Section(
                key=str(name), title=title_words(str(name)), caption=definition_text(definitions, str(name))
            )
            builder.walk(results[name], [], section.parts, str(name), str(name))
            sections.append(section)
    for section in sections:
        truncate(section)
    return sections


def truncate(section: Section) -> None:
    """Keep a pathological section readable; the rest stays in study_results.json. A table marked
    ``whole`` (every model's rank: the leaderboard) is shown in full and spends none of the budget."""
    budget = _MAX_SECTION_ROWS
    for part in section.parts:
        if part.kind == "table" and not part.whole:
            if len(part.rows) > budget:
                section.truncated += len(part.rows) - budget
                part.rows = part.rows[:budget]
            budget = max(budget - len(part.rows), 0)


def _bar_label(iso: str, langs: Mapping[str, Mapping[str, Any]], *, with_class: bool) -> str:
    meta = langs.get(iso, {})
    label = f"{meta['name']} ({iso})" if meta.get("name") else iso
    if with_class:
        # The class is in the text too, not only in the colour, for readers who cannot tell them apart.
        joshi = joshi_of(meta.get("joshi_class"))
        label += " \u00b7 unclassified" if joshi is None else f" \u00b7 class {joshi}"
    return label


def _language_rows(
    by_language: Mapping[str, EstimateModel], langs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for iso, est in by_language.items():
        meta = langs.get(str(iso), {})
        rows.append(
            {
                "iso": str(iso),
                "name": str(meta.get("name") or ""),
                "joshi_class": joshi_of(meta.get("joshi_class")),
                "value": est.estimate,
                "low": est.ci_low,
                "high": est.ci_high,
                "block": est.record(),
            }
        )
    # Largest gap first; languages whose CLCG could not be computed go last.
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["iso"]))
    return rows


def untyped_estimates(value: Mapping[str, Any]) -> dict[str, EstimateModel]:
    """A section no shape declares (an older document's ``net_by_language``) read into the same
    model per entry, so its table reads typed fields; an entry that is no estimate is an empty one
    (a row of dashes, as before)."""
    out = {}
    for name, block in value.items():
        fields = {k: v for k, v in estimate_of(block).items() if k in EstimateModel.model_fields}
        try:
            out[str(name)] = EstimateModel.model_validate(fields, strict=False)
        except ValidationError:
            out[str(name)] = EstimateModel()
    return out


def languages_section(
    key: str,
    title: str,
    by_language: Mapping[str, EstimateModel],
    langs: Mapping[str, Mapping[str, Any]],
    builder: SectionBuilder,
    *,
    chart_title: str,
    x_label: str,
    caption: str,
) -> Section:
    rows = _language_rows(by_language, langs)
    svg = bar_chart_svg(
        [
            Bar(
                label=_bar_label(r["iso"], langs, with_class=bool(langs)),
                value=r["value"],
                low=r["low"],
                high=r["high"],
                joshi_class=r["joshi_class"],
                flagged=bool(flags_of(r["block"])),
            )
            for r in rows
            if r["value"] is not None
        ],
        title=chart_title,
        x_label=x_label,
        legend=bool(langs),
        chart_id=f"chart-{key}",
    )
    table_rows = []
    for r in rows:
        row = builder.estimate_row(lang_name(r["iso"], langs), r["block"])
        if langs:
            joshi = r["joshi_class"]
            row.cells.insert(1, "unclassified" if joshi is None else str(joshi))
        table_rows.append(row)
    columns = builder.estimate_columns
    columns = [columns[0] or "language", *(["Joshi class"] if langs else []), *columns[1:]]
    section = Section(key=key, title=title, caption=caption)
    section.parts += chart(svg)
    section.parts.append(_pruned(Part("table", columns=columns, rows=table_rows)))
    return section


def _class_section(
    key: str, title: str, typed: JoshiClassResults, builder: SectionBuilder, caption: str
) -> Section:
    """The primary mapping's class means as a chart, each mapping as a table, then the rule."""
    section = Section(key=key, title=title, caption=caption)
    if typed.primary:
        section.parts += chart(_class_chart(key, typed.primary))
    for mapping, classes in typed.mappings().items():
        if classes:
            section.parts.append(Part("heading", text=builder.label(mapping, key)))
            section.parts.append(_class_table(classes, builder))
    facts = [
        (builder.label(name, key), fact_text(getattr(typed, name)))
        for name in ("unclassified", "rule")
        if getattr(typed, name) is not None
    ]
    if facts:
        section.parts.append(Part("facts", facts=facts))
    return section


def _class_chart(key: str, classes: dict[str, ClassMean]) -> str:
    """Each class's mean raw CLCG with its interval, in class order (classes without one left out)."""
    bars = []
    for cls, entry in sorted(classes.items(), key=lambda kv: (as_float(kv[0]) is None, as_float(kv[0]) or 0)):
        raw = entry.raw or EstimateRecord()
        if raw.estimate is None:
            continue
        label = f"class {cls}"
        if entry.languages:
            label += f" ({', '.join(entry.languages)})"
        bars.append(
            Bar(
                label=label,
                value=raw.estimate,
                low=raw.ci_low,
                high=raw.ci_high,
                joshi_class=joshi_of(cls),
                flagged=bool(flags_of(raw.record())),
            )
        )
    return bar_chart_svg(
        bars,
        title="Mean raw CLCG per Joshi class (primary mapping), with intervals",
        x_label="Class mean CLCG: English minus language",
        legend=False,
        chart_id=f"chart-{key}",
    )


def _metric_section(
    key: str, title: str, typed: MetricSensitivityResults, builder: SectionBuilder, caption: str
) -> Section:
    """H1 summary estimands under each metric, side by side (one column pair per metric)."""
    section = Section(key=key, title=title, caption=caption)
    metrics = typed.metrics
    if metrics:
        band_metric = typed.band_metric
        names = sorted(metrics, key=lambda m: (m != band_metric, m))  # the band's metric first
        columns = ["estimand"]
        for name in names:
            label = METRIC_NAMES.get(name, name) + (" (band)" if name == band_metric else "")
            columns += [label, builder.ci_label]
        columns.append("flags")
        rows = []
        for estimand, label in H1_SUMMARY:
            cells, flags = [label], []
            for name in names:
                est = metrics[name].estimate(estimand)
                cells += [fmt_num(est.estimate), fmt_ci(est.ci_low, est.ci_high)]
                flags += [f"{METRIC_NAMES.get(name, name)}: {f}" for f in flags_of(est.record())]
            cells.append("")
            rows.append(Row(cells=cells, flags=flags))
        section.parts.append(Part("table", columns=columns, rows=rows))
        not_computed = [
            f"{METRIC_NAMES.get(name, name)}: {entry.reason or entry.status}"
            for name, entry in metrics.items()
            if entry.computed is False
        ]
        if not_computed:
            section.parts.append(Part("flags", rows=[Row(cells=[], flags=not_computed)]))
    facts = [
        (builder.label(name, key), fact_text(getattr(typed, name)))
        for name in ("band_metric", "rule", "note")
        if getattr(typed, name) is not None
    ]
    if facts:
        section.parts.append(Part("facts", facts=facts))
    return section


def _class_table(classes: dict[str, ClassMean], builder: SectionBuilder) -> Part:
    """One row per class: languages, raw and net class means with intervals."""
    columns = ["class", "languages", "raw CLCG", builder.ci_label, "net CLCG", builder.ci_label, "n", "flags"]
    rows = []
    for cls, entry in classes.items():
        raw, net = entry.raw or EstimateRecord(), entry.net or EstimateRecord()
        flags = [f"raw: {f}" for f in flags_of(raw.record())] + [f"net: {f}" for f in flags_of(net.record())]
        rows.append(
            Row(
                cells=[
                    f"class {cls}",
                    fact_text(entry.languages) if entry.languages is not None else MISSING,
                    fmt_num(raw.estimate),
                    fmt_ci(raw.ci_low, raw.ci_high),
                    fmt_num(net.estimate),
                    fmt_ci(net.ci_low, net.ci_high),
                    fmt_int(raw.n if raw.n is not None else net.n),
                    "",
                ],
                flags=flags,
            )
        )
    return _pruned(Part("table", columns=columns, rows=rows))


def _level_section(
    key: str,
    title: str,
    value: Mapping[str, Any],
    builder: SectionBuilder,
    caption: str,
    typed: H3Results | None = None,
) -> Section:
    """The level profile chart from the typed ``h3`` (``typed``; the section's own records for
    another name, such as ``level_profile``), then every part of the section as tables."""
    section = Section(key=key, title=title, caption=caption)
    profiles = _level_profiles(typed if typed is not None else H3Results())
    for sub, chart_title, x_label in (
        (
            "standardized",
            "H3 level profile: standardized CLCG per question level",
            "Standardized CLCG (z units)",
        ),
        ("raw_descriptive", "Raw CLCG per question level (descriptive)", "Raw CLCG"),
    ):
        levels = profiles.get(sub) if typed is not None else _untyped_levels(value, sub)
        if levels is None:
            continue
        bars = [
            Bar(
                label=str(level),
                value=est.estimate,
                low=est.ci_low,
                high=est.ci_high,
                colour="#31688e",
                flagged=bool(flags_of(est.record())),
            )
            for level, est in levels.items()
            if est.estimate is not None
        ]
        svg = bar_chart_svg(
            bars, title=chart_title, x_label=x_label, legend=False, chart_id=f"chart-{key}-{sub}"
        )
        if svg:
            section.parts += chart(svg)
            break  # one profile chart; the raw levels stay in the table below
    builder.walk(value, [], section.parts, key, key)
    return section


def _level_profiles(typed: H3Results) -> dict[str, dict[str, EstimateRecord]]:
    """The typed per-level estimates of ``h3``, by part (standardized, raw_descriptive)."""
    found = {"standardized": typed.standardized, "raw_descriptive": typed.raw_descriptive}
    return {sub: levels for sub, levels in found.items() if levels is not None}


def _untyped_levels(value: Mapping[str, Any], sub: str) -> dict[str, EstimateRecord] | None:
    """A section under another name than ``h3`` (``level_profile``): its levels read into the
    same model, so the chart reads typed fields (a level that is no estimate is left out)."""
    levels = value.get(sub)
    if not isinstance(levels, Mapping):
        return None
    out = {}
    for level, block in levels.items():
        fields = {k: v for k, v in estimate_of(block).items() if k in EstimateRecord.model_fields}
        try:
            out[str(level)] = EstimateRecord.model_validate(fields, strict=False)
        except ValidationError:
            continue  # not a number where one is due: no bar, as before (the table still shows it)
    return out


def models_section(view: H1Model | None, builder: SectionBuilder, ci_label: str) -> Section | None:
    """Each model's summary estimands from the typed ``h1`` (``view``): cells and flags alike."""
    by_model = view.by_model if view is not None else None
    if not by_model:
        return None
    section = Section(
        key="by-model",
        title="Per model",
        caption="The H1 summary estimands computed on each model's responses alone.",
    )
    entries = []
    for model, block in by_model.items():
        micro = block.get("h1_micro") or EstimateModel()
        entries.append((micro.estimate, str(model), block, micro))
    entries.sort(key=lambda e: (e[0] is None, -(e[0] or 0.0), e[1]))
    svg = bar_chart_svg(
        [
            Bar(
                label=m,
                value=v,
                low=mi.ci_low,
                high=mi.ci_high,
                colour="#3182bd",
                flagged=bool(flags_of(mi.record())),
            )
            for v, m, _, mi in entries
            if v is not None
        ],
        title="H1 micro CLCG per model, with intervals",
        x_label="H1 micro CLCG",
        legend=False,
        chart_id="chart-by-model",
    )
    section.parts += chart(svg)
    columns = ["model"]
    for _, label in MODEL_COLUMNS:
        columns += [label, ci_label]
    columns.append("flags and notes")
    rows = []
    for _, model, block, _ in entries:
        cells = [model]
        flags: list[str] = []
        for key, _ in MODEL_COLUMNS:
            est = block.get(key) or EstimateModel()  # keyed by estimand name: present or not
            cells += [fmt_num(est.estimate), fmt_ci(est.ci_low, est.ci_high)]
            flags += [f"{key}: {f}" for f in flags_of(est.record())]
        cells.append("")
        rows.append(Row(cells=cells, flags=flags))
    section.parts.append(_pruned(Part("table", columns=columns, rows=rows)))
    return section


def _excluded_section(
    value: object, missing: list[dict[str, str]] | None, langs: Mapping[str, Any]
) -> Section:
    section = Section(
        key="excluded_versions",
        title="Excluded article versions",
        caption="Article x language versions below the completeness threshold are left out of every "
        "estimate.",
    )
    records = [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []
    if records:
        builder = SectionBuilder(Labeller(langs), {}, "95% CI")
        section.parts.append(builder.record_table(records))
    else:
        section.parts.append(
            Part(
                "text",
                text="No version was excluded: every scored article x language version met the threshold.",
            )
        )
    if missing:
        section.parts.append(
            Part(
                "text",
                text="This says nothing about languages with no data at all: "
                + ", ".join(lang_name(e["iso"], langs) for e in missing)
                + " have no scored rows and no estimate (see the header).",
            )
        )
    return section


# The sections drawn from their typed section model, by the document's key (the view's field of
# the same name): ``section(name, title, model, builder, caption)``.
TYPED_SECTIONS: dict[str, Callable[[str, str, Any, SectionBuilder, str], Section]] = {
    "joshi_class": _class_section,
    "metric_sensitivity": _metric_section,
    "nomological": nomological_section,
    "replication": replication_section,
    "h2": h2_section,
    "context_gain": context_gain_section,
    "repetitions": repetitions_section,
    "h4": h4_section,
    "equivalence": equivalence_section,
    "parse_rule": parse_rule_section,
}
