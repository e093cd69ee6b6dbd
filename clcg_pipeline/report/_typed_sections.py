"""The ``h2``, ``context_gain``, ``repetitions``, ``nomological``, ``replication``, ``h4``,
``equivalence`` and ``parse_rule`` sections, read from their typed models (issue 34).

``storage.H2Results``, ``storage.ContextGainResults``, ``storage.RepetitionsResults``,
``storage.NomologicalResults`` and ``storage.ReplicationResults`` are the sections' shapes, validated
when the document is written and when the report reads it (``study_results_view``): a field of
another type is a ``DocumentError`` naming it, never a blank cell. Each row here reads a typed
field; the estimate rows are drawn by the builder every estimate of the report shares.
"""

from __future__ import annotations

from pydantic import BaseModel

from clcg_pipeline.report._builder import SectionBuilder, fact_text
from clcg_pipeline.report._format import MISSING, fmt_bootstrap_p, fmt_int
from clcg_pipeline.report._labels import H1_SUMMARY, LABELS
from clcg_pipeline.report._page import _OK_STATUSES, Part, Row, Section, _pruned, flags_of
from clcg_pipeline.report._studies import CI_WITHHELD
from clcg_pipeline.storage import (
    BootstrapTost,
    ContextGainEntry,
    ContextGainResults,
    EquivalenceResults,
    EstimateRecord,
    H2Contrast,
    H2Results,
    H4Results,
    NomologicalResults,
    ParseRuleResults,
    RepetitionsResults,
    ReplicationH1,
    ReplicationResults,
    StandardizedOls,
)

# The replication section's own row and heading (its keys' generic labels mean other things).
_RANKINGS = "Spearman of the two corpora's language rankings"
_REPLICATION_H1 = "H1 on the replication corpus"
# An OLS with no r\u00b2 and no coefficient that was not withheld: standardized_ols could not fit it.
_OLS_NOT_FITTED = (
    "not fitted: no more languages with data than predictors + 1, or no predictor or CLCG varies"
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
        _with_withheld_interval(
            builder.estimate_row(prefix + LABELS[part], estimate.record(), key=part), estimate
        )
        for part, estimate in found
    ]


#: The interval's cell in a row of ``SectionBuilder.estimate_columns`` (before a table is pruned).
_CI_CELL = 2


def _with_withheld_interval(row: Row, estimate: EstimateRecord) -> Row:
    """``row`` with its interval cell saying "CI withheld" when the arm is not identifiable: a bare
    dash read as a missing value, where every other section marks a withheld interval (issue 34);
    the page then shows it as the short mark with its reason's letter (``withheld_once``)."""
    withheld = estimate.identifiable is False and estimate.estimate is not None and not estimate.has_interval
    if withheld and row.cells[_CI_CELL] == MISSING:
        row.cells[_CI_CELL] = CI_WITHHELD
    return row


def _arms_withheld(contrast: H2Contrast) -> bool:
    """Both arms of ``contrast`` not identifiable while their difference has its interval."""
    arms = (contrast.memorizable, contrast.new)
    difference = contrast.difference
    return (
        all(arm is not None and arm.identifiable is False for arm in arms)
        and difference is not None
        and difference.identifiable is not False
        and difference.has_interval
    )


def _paired_sentence(contrast: H2Contrast) -> str:
    """Why a difference has an interval when neither of its arms does (said once per section)."""
    articles = contrast.difference.n_articles if contrast.difference is not None else None
    on = f"on {articles} articles" if articles is not None else "on the articles of both arms"
    return (
        "the arms' own intervals are withheld (each arm has fewer articles than study.min_articles) "
        f"but their difference is paired {on} and identifiable"
    )


def _note_paired_differences(contrasts: list[tuple[H2Contrast, list[Row]]]) -> None:
    """Say on the first difference row whose arms are both withheld why it still has an interval;
    later such rows point to it. Without it the table reads "withheld, withheld, [interval]"."""
    said = False
    for contrast, rows in contrasts:
        if not _arms_withheld(contrast) or not rows:
            continue
        row = rows[-1]  # the difference, shown last
        note = "paired on both arms' articles, as said above" if said else _paired_sentence(contrast)
        row.cells[-1] = "; ".join(part for part in (note, row.cells[-1]) if part)
        said = True


# What a success status says when every arm's interval is withheld (the demo's H2): the status, and
# the folded section's hint made from it, then match the table (withheld, withheld, [interval]).
_ARMS_WITHHELD_STATUS = "{status}, the arms' intervals withheld (only their differences have one)"


def _status_with_arms_withheld(section: Section, contrasts: list[tuple[H2Contrast, list[Row]]]) -> None:
    """A success status ("estimated") says so when both arms of every contrast are withheld."""
    if not contrasts or not all(_arms_withheld(contrast) for contrast, _ in contrasts):
        return
    for part in section.parts:
        if part.kind == "facts":
            part.facts = [
                (name, _ARMS_WITHHELD_STATUS.format(status=value))
                if name in ("Status", "status") and value.strip().lower() in _OK_STATUSES
                else (name, value)
                for name, value in part.facts
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
    contrasts: list[tuple[H2Contrast, list[Row]]] = []
    if typed.pooled is not None:
        contrasts.append((typed.pooled, _contrast_rows(builder, "", typed.pooled)))
    for model, entry in (typed.by_model or {}).items():
        contrasts.append((entry, _contrast_rows(builder, model, entry)))
    _note_paired_differences(contrasts)
    _status_with_arms_withheld(section, contrasts)
    if typed.pooled is not None:
        section.parts.append(Part("heading", text=LABELS["pooled"]))
        section.parts.append(builder.estimate_table(contrasts[0][1]))
    if typed.by_model:
        rows = [row for _, found in contrasts[1 if typed.pooled is not None else 0 :] for row in found]
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


def nomological_section(
    key: str, title: str, typed: NomologicalResults, builder: SectionBuilder, caption: str
) -> Section:
    """Nomological network: each predictor's Spearman with the language CLCG, the sensitivity
    mapping's, the partial Spearman on the Joshi class and the standardized OLS."""
    section = Section(key=key, title=title, caption=caption)
    _facts(section, builder, key, typed, ("languages", "note"))
    rows = [
        builder.estimate_row(builder.label(var, f"{key}/spearman"), est.record(), key=var)
        for var, est in (typed.spearman or {}).items()
    ]
    if rows:
        section.parts.append(Part("heading", text=builder.label("spearman", key)))
        section.parts.append(builder.estimate_table(rows))
    if typed.spearman_joshi_sensitivity is not None:
        # A table of its own: a table whose rows all lack a value is said in one line instead.
        label = builder.label("spearman_joshi_sensitivity", key)
        row = builder.estimate_row(label, typed.spearman_joshi_sensitivity.record(), context=key)
        section.parts.append(builder.estimate_table([row]))
    if typed.partial_spearman_on_joshi:
        context = f"{key}/partial_spearman_on_joshi"
        partial = [
            builder.estimate_row(builder.label(var, context), entry.model_dump(exclude_unset=True))
            for var, entry in typed.partial_spearman_on_joshi.items()
        ]
        section.parts.append(Part("heading", text=builder.label("partial_spearman_on_joshi", key)))
        section.parts.append(builder.estimate_table(partial))
    if typed.standardized_ols is not None:
        section.parts.extend(_ols_parts(key, typed.standardized_ols, builder))
    return section


def _ols_parts(key: str, ols: StandardizedOls, builder: SectionBuilder) -> list[Part]:
    """The standardized OLS: why its r\u00b2 is withheld or why it was not fitted, its counts and
    coefficients."""
    parts = [Part("heading", text=builder.label("standardized_ols", key))]
    if ols.identifiable is False:
        parts.append(_why_not(ols))  # its r\u00b2 is withheld: say why, once
    elif ols.r2 is None and not ols.coefficients:
        parts.append(Part("flags", rows=[Row(cells=[], flags=[_OLS_NOT_FITTED])]))
    context = f"{key}/standardized_ols"
    facts = [
        (builder.label(name, context), fact_text(getattr(ols, name)))
        for name in ("r2", "n", "n_articles", "note")
        if getattr(ols, name) is not None
    ]
    facts += [
        (builder.label(name, f"{key}/coefficients"), fact_text(value))
        for name, value in (ols.coefficients or {}).items()
    ]
    if facts:
        parts.append(Part("facts", facts=facts))
    return parts


def _replication_h1_rows(key: str, h1: ReplicationH1, builder: SectionBuilder) -> list[Part]:
    """The H1 summary on the replication corpus, then each language's and each model's CLCG."""
    # No band rows on the replication corpus at all: H1 says why once, with no estimate.
    parts: list[Part] = [_why_not(h1)] if h1.identifiable is False and not h1.summary() else []
    summary = [
        builder.estimate_row(builder.label(name, key), est.record(), key=name)
        for name, est in h1.summary().items()
    ]
    if summary:
        parts += [Part("heading", text=_REPLICATION_H1), builder.estimate_table(summary)]
    if h1.by_language:
        rows = [
            builder.estimate_row(builder.label(iso, f"{key}/by_language"), est.record())
            for iso, est in h1.by_language.items()
        ]
        parts += [Part("heading", text=LABELS["by_language"]), builder.estimate_table(rows)]
    if h1.by_model:
        rows = [
            builder.estimate_row(f"{model} \u00b7 {builder.label(name, key)}", est.record(), key=name)
            for model, estimates in h1.by_model.items()
            for name, est in estimates.items()
        ]
        parts += [Part("heading", text=LABELS["by_model"]), builder.estimate_table(rows)]
    if h1.n:
        counts = [(builder.label(name, f"{key}/n"), fmt_int(count)) for name, count in h1.n.items()]
        parts += [Part("heading", text="rows counted"), Part("facts", facts=counts)]
    return parts


def replication_section(
    key: str, title: str, typed: ReplicationResults, builder: SectionBuilder, caption: str
) -> Section:
    """Cross-corpus replication: the band it used, the Spearman of the two language rankings and
    H1 on the second corpus; or why there is none (no replication scores)."""
    section = Section(key=key, title=title, caption=caption)
    if typed.h1 is None and typed.spearman is None:
        section.parts.append(_why_not(typed))
        return section
    _facts(section, builder, key, typed, ("status", "rows", "n_rows", "languages"))
    if typed.band is not None:
        section.parts.append(Part("heading", text=builder.label("band", key)))
        names = ("rule", "item_source", "levels", "context_scope", "metric")
        _facts(section, builder, f"{key}/band", typed.band, names)
    if typed.spearman is not None:
        row = builder.estimate_row(_RANKINGS, typed.spearman.record(), key="replication_spearman")
        section.parts.append(builder.estimate_table([row]))
    if typed.h1 is not None:
        # Its ``settings`` are the study's (seed, replicates, band): shown once, in the settings.
        section.parts.extend(_replication_h1_rows(key, typed.h1, builder))
    return section


# The parts of ``h4``, in the order the section shows them (the difference last, as in H2).
_H4_PARTS = ("human", "llm", "difference")
# The bootstrap TOST's facts, in the order the section shows them.
_BOOTSTRAP_FACTS = ("bounds", "ci_90", "equivalent", "p", "p_lower", "p_upper")
_BOOTSTRAP_P = ("p", "p_lower", "p_upper")


def _estimate_rows(
    builder: SectionBuilder, key: str, parts: list[tuple[str, EstimateRecord | None]]
) -> list[Row]:
    """One estimate row per part present, labelled and described as the generic walker does."""
    return [
        builder.estimate_row(builder.label(name, key), estimate.record(), key=name, context=f"{key}/{name}")
        for name, estimate in parts
        if estimate is not None
    ]


def h4_section(key: str, title: str, typed: H4Results, builder: SectionBuilder, caption: str) -> Section:
    """H4: CLCG on human items, on LLM items and their difference; or why there is none."""
    section = Section(key=key, title=title, caption=caption)
    rows = _estimate_rows(builder, key, [(name, getattr(typed, name)) for name in _H4_PARTS])
    if not rows:
        section.parts.append(_why_not(typed))
        _facts(section, builder, key, typed, ("alternative", "note"))
        return section
    _facts(section, builder, key, typed, ("status", "reason", "alternative", "note"))
    section.parts.append(builder.estimate_table(rows))
    return section


def equivalence_section(
    key: str, title: str, typed: EquivalenceResults, builder: SectionBuilder, caption: str
) -> Section:
    """The EN-PT TOST: the gap with its verdict, the bootstrap TOST's facts, the paired t-based TOST."""
    section = Section(key=key, title=title, caption=caption)
    head = typed.model_dump(exclude_unset=True, exclude={"bootstrap", "paired_article_means"})
    if typed.estimate is None and typed.bootstrap is None and typed.paired_article_means is None:
        section.parts.append(_why_not(typed))
        return section
    # The scalar fields (contrast, verdict, note) are the row's notes, as for any estimate.
    section.parts.append(
        builder.estimate_table([builder.estimate_row(builder.label(key), head, key=key, context=key)])
    )
    if typed.bootstrap is not None:
        section.parts.append(Part("heading", text=builder.label("bootstrap", key)))
        if typed.bootstrap.identifiable is False:
            # Withheld by the estimates table (tost_en_pt): its reason, no p values or interval.
            section.parts.append(_why_not(typed.bootstrap))
        else:
            _facts(section, builder, f"{key}/bootstrap", typed.bootstrap, _BOOTSTRAP_FACTS)
            _mark_floor(section.parts[-1], typed.bootstrap, builder, f"{key}/bootstrap")
    if typed.paired_article_means is not None:
        label = builder.label("paired_article_means", key)
        record = typed.paired_article_means.model_dump(exclude_unset=True)
        row = builder.estimate_row(
            label, record, key="paired_article_means", context=f"{key}/paired_article_means"
        )
        section.parts += [Part("heading", text=label), builder.estimate_table([row])]
    return section


def _mark_floor(part: Part, bootstrap: BootstrapTost, builder: SectionBuilder, key: str) -> None:
    """The bootstrap TOST's p values in ``part`` (its facts, labelled as ``_facts`` labels them
    under ``key``) as p values: one at the floor 1/(B+1) marked ``≤`` (a bound, not the p)."""
    if part.kind != "facts":
        return
    values = {builder.label(name, key): getattr(bootstrap, name) for name in _BOOTSTRAP_P}
    part.facts = [
        (label, fmt_bootstrap_p(values[label], builder.replicates) if label in values else text)
        for label, text in part.facts
    ]


def parse_rule_section(
    key: str, title: str, typed: ParseRuleResults, builder: SectionBuilder, caption: str
) -> Section:
    """Rule A against rule B: their difference in H1 micro, each rule's H1 summary and row counts."""
    section = Section(key=key, title=title, caption=caption)
    difference = _estimate_rows(builder, key, [("difference_h1_micro", typed.difference_h1_micro)])
    if difference:
        section.parts.append(builder.estimate_table(difference))
    for name, rule in (("A", typed.A), ("B", typed.B)):
        if rule is None:
            continue
        context = f"{key}/{name}"
        heading = builder.label(name, key)
        rows = _estimate_rows(builder, context, [(est, getattr(rule, est)) for est, _ in H1_SUMMARY])
        if rows:
            section.parts += [Part("heading", text=heading), builder.estimate_table(rows)]
        if rule.n is not None:
            # The walker's heading for a rule's counts: "<rule> › rows counted".
            section.parts.append(Part("heading", text=f"{heading} \u203a rows counted"))
            _facts(section, builder, f"{context}/n", rule.n, ("english", "target", "baseline", "articles"))
    return section
