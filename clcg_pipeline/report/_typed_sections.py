"""The ``h2``, ``context_gain`` and ``repetitions`` sections, read from their typed models (issue 34).

``storage.H2Results``, ``storage.ContextGainResults`` and ``storage.RepetitionsResults`` are the
sections' shapes, validated
when the document is written and when the report reads it (``study_results_view``): a field of
another type is a ``DocumentError`` naming it, never a blank cell. Each row here reads a typed
field; the estimate rows are drawn by the builder every estimate of the report shares.
"""

from __future__ import annotations

from pydantic import BaseModel

from clcg_pipeline.report._builder import SectionBuilder, fact_text
from clcg_pipeline.report._format import MISSING, fmt_int
from clcg_pipeline.report._labels import LABELS
from clcg_pipeline.report._page import Part, Row, Section, _pruned, flags_of
from clcg_pipeline.storage import (
    ContextGainEntry,
    ContextGainResults,
    EstimateRecord,
    H2Contrast,
    H2Results,
    RepetitionsResults,
)

# The three parts of a memorability contrast, in the order the section shows them.
_CONTRAST_PARTS = ("memorizable", "new", "difference")


def _facts(
    section: Section, builder: SectionBuilder, key: str, model: BaseModel, names: tuple[str, ...]
) -> None:
    """The scalar fields ``names`` of ``model`` the document has, as one fact list."""
    facts = [
        (builder.label(name, key), fact_text(getattr(model, name)))
        for name in names
        if name in model.model_fields_set and getattr(model, name) is not None
    ]
    if facts:
        section.parts.append(Part("facts", facts=facts))


def _why_not(model: BaseModel) -> Part:
    """A section or entry that could not be computed: why, as a flag (no row of dashes)."""
    return Part(
        "flags",
        rows=[Row(cells=[], flags=flags_of(model.model_dump(exclude_unset=True)) or ["not available"])],
    )


def _contrast_rows(builder: SectionBuilder, label: str, contrast: H2Contrast) -> list[Row]:
    """A contrast's memorizable, new and difference rows; or one row saying why there are none."""
    found: list[tuple[str, EstimateRecord]] = [
        (part, estimate) for part in _CONTRAST_PARTS if (estimate := getattr(contrast, part)) is not None
    ]
    if not found:
        # Not identifiable (a group is missing): one row saying why, with each group's rows.
        return [builder.estimate_row(label or LABELS["pooled"], contrast.model_dump(exclude_unset=True))]
    prefix = f"{label} \u00b7 " if label else ""
    return [
        builder.estimate_row(prefix + LABELS[part], estimate.record(), key=part) for part, estimate in found
    ]


def h2_section(key: str, title: str, typed: H2Results, builder: SectionBuilder, caption: str) -> Section:
    """H2: the status and definition, the pooled contrast, one per model, one per Joshi class."""
    section = Section(key=key, title=title, caption=caption)
    if typed.pooled is None and not typed.by_model and not typed.by_class_sensitivity:
        section.parts.append(_why_not(typed))
        _facts(section, builder, key, typed, ("definition", "rows_without_date_or_cutoff"))
        return section
    _facts(
        section,
        builder,
        key,
        typed,
        ("status", "reason", "definition", "alternative", "rows_without_date_or_cutoff"),
    )
    if typed.pooled is not None:
        section.parts.append(Part("heading", text=LABELS["pooled"]))
        section.parts.append(builder.estimate_table(_contrast_rows(builder, "", typed.pooled)))
    if typed.by_model:
        rows = [
            row for model, entry in typed.by_model.items() for row in _contrast_rows(builder, model, entry)
        ]
        section.parts.append(Part("heading", text=LABELS["by_model"]))
        section.parts.append(builder.estimate_table(rows))
    if typed.by_class_sensitivity:
        rows = [
            builder.estimate_row(f"class {cls}", entry.record(), key="h2_difference_class")
            for cls, entry in typed.by_class_sensitivity.items()
        ]
        section.parts.append(Part("heading", text=LABELS["by_class_sensitivity"]))
        section.parts.append(builder.estimate_table(rows))
    return section


def _gain_row(label: str, entry: ContextGainEntry, *, with_languages: bool) -> Row:
    languages = (
        [fact_text(entry.languages) if entry.languages is not None else MISSING] if with_languages else []
    )
    return Row(
        cells=[
            label,
            *languages,
            fact_text(entry.gain),
            fmt_int(entry.n),
            fmt_int(entry.n_pairs),
            fmt_int(entry.n_articles),
        ]
    )


def context_gain_section(
    key: str, title: str, typed: ContextGainResults, builder: SectionBuilder, caption: str
) -> Section:
    """Context gain: the selector, the closed-book mean, and the gain per language and class."""
    section = Section(key=key, title=title, caption=caption)
    if not typed.by_language and not typed.by_class:
        section.parts.append(_why_not(typed))
        return section
    _facts(
        section, builder, key, typed, ("status", "closed_book_mean", "matched_rows", "matched_pairs", "note")
    )
    if typed.selector is not None:
        section.parts.append(Part("heading", text=builder.label("selector", key)))
        _facts(section, builder, f"{key}/selector", typed.selector, ("model", "doc_ids", "items", "rule"))
    columns = ["n", "pairs", "articles"]
    if typed.by_language:
        rows = [
            _gain_row(builder.label(iso, f"{key}/by_language"), entry, with_languages=False)
            for iso, entry in typed.by_language.items()
        ]
        section.parts.append(Part("heading", text=LABELS["by_language"]))
        section.parts.append(_pruned(Part("table", columns=["language", "gain", *columns], rows=rows)))
    if typed.by_class:
        rows = [
            _gain_row(f"class {cls}", entry, with_languages=True) for cls, entry in typed.by_class.items()
        ]
        section.parts.append(Part("heading", text=LABELS["by_class"]))
        section.parts.append(
            _pruned(Part("table", columns=["class", "languages", "gain", *columns], rows=rows))
        )
    return section


def _spread_rows(key: str, typed: RepetitionsResults, builder: SectionBuilder) -> list[Part]:
    """The per-model CLCG of each repetition, and the Spearman of each pair of repetitions."""
    parts: list[Part] = []
    if typed.by_model:
        reps = list(dict.fromkeys(rep for per_rep in typed.by_model.values() for rep in per_rep))
        rows = [
            Row(cells=[model, *(fact_text(per_rep[r]) if r in per_rep else MISSING for r in reps)])
            for model, per_rep in typed.by_model.items()
        ]
        columns = ["model", *(builder.label(r, f"{key}/by_model/rep") for r in reps)]
        parts += [
            Part("heading", text=LABELS["by_model"]),
            _pruned(Part("table", columns=columns, rows=rows)),
        ]
    if typed.pairwise_spearman:
        rows = [
            Row(
                cells=[
                    builder.label(pair, f"{key}/pairwise_spearman"),
                    fact_text(r.rho),
                    fact_text(r.p),
                    fmt_int(r.n),
                ]
            )
            for pair, r in typed.pairwise_spearman.items()
        ]
        columns = ["repetitions", "Spearman rho", "p", "n"]
        parts += [
            Part("heading", text=builder.label("pairwise_spearman", key)),
            _pruned(Part("table", columns=columns, rows=rows)),
        ]
    return parts


def repetitions_section(
    key: str, title: str, typed: RepetitionsResults, builder: SectionBuilder, caption: str
) -> Section:
    """Repetitions: CLCG per repetition, its spread, per model, and how the model rankings agree."""
    section = Section(key=key, title=title, caption=caption)
    if typed.model_fields_set <= {"status"}:
        section.parts.append(_why_not(typed))
        return section
    _facts(section, builder, key, typed, ("status", "articles", "kendalls_w", "mean_pairwise_spearman"))
    if typed.per_repetition:
        rows = [
            builder.estimate_row(builder.label(rep, f"{key}/per_repetition"), estimate.record())
            for rep, estimate in typed.per_repetition.items()
        ]
        section.parts.append(Part("heading", text=builder.label("per_repetition", key)))
        section.parts.append(builder.estimate_table(rows))
    if typed.summary is not None:
        section.parts.append(Part("heading", text=builder.label("summary", key)))
        _facts(section, builder, f"{key}/summary", typed.summary, ("mean", "sd", "min", "max"))
    section.parts.extend(_spread_rows(key, typed, builder))
    return section
