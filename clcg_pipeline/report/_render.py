"""Render ``study_results.json`` and the ``estimates`` table as one self-contained HTML page.

The page is read by a researcher deciding whether to trust a result, so every section is a
labelled table (plus a chart where one helps), every estimate that is not converged, not
identifiable or otherwise flagged is marked where it appears, and the languages without data
are named in the header. Every part of the document is optional: older or partial results
files render what they have.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import pandas as pd

from clcg_pipeline.report._appendix import definitions_rows, drilldown_panels, estimates_table_rows
from clcg_pipeline.report._builder import Labeller, SectionBuilder, definition_text, title_words
from clcg_pipeline.report._consistency import (
    consistent_status,
    drop_withheld_columns,
    simulated_status,
    with_hint,
    withheld_once,
)
from clcg_pipeline.report._decision import decision
from clcg_pipeline.report._document import (
    ci_label_of,
    header_facts,
    lang_name,
    languages_of,
    metric_of,
    settings_list,
    warnings_of,
)
from clcg_pipeline.report._empty_tables import collapse_empty_tables
from clcg_pipeline.report._flag_notes import flags_once, shared_flags_note
from clcg_pipeline.report._format import (
    fmt_value,
)
from clcg_pipeline.report._granularity_section import granularity_section
from clcg_pipeline.report._human_section import human_section
from clcg_pipeline.report._labels import H1_SUMMARY, LABELS, MODEL_COLUMNS, SIMULATED_CAVEAT
from clcg_pipeline.report._new_model_section import new_model_section
from clcg_pipeline.report._page import Part, Section, _pruned
from clcg_pipeline.report._result_sections import languages_section, models_section, result_sections
from clcg_pipeline.report._studies import clean, tidy
from clcg_pipeline.report._taxonomy_section import taxonomy_section
from clcg_pipeline.storage import (
    Definitions,
    H1Model,
    SettingsModel,
    StudyResults,
    StudyResultsDocument,
    study_results_view,
)


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clcg_pipeline.report", "templates"),
        autoescape=True,  # everything from data is escaped; only the prebuilt SVG is Markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


# The studies' entries, shown with credential-named keys dropped and key-like strings masked.
_STUDIES = ("error_taxonomy", "human_validation", "granularity")


def _cleaned_studies(results: Mapping[str, Any]) -> dict[str, Any]:
    """Each study's entry cleaned once (``clean``), for its typed view and its tables alike."""
    return {key: clean(results[key]) for key in _STUDIES if isinstance(results.get(key), Mapping)}


def _finished(section: Section, said: str, simulated_models: list[str]) -> Section:
    """A result section as the page shows it: reasons said once, statuses that match its rows
    (and its data: no green under a simulated reader), withheld-only interval columns left out."""
    section = consistent_status(collapse_empty_tables(flags_once(section, said)))
    section = drop_withheld_columns(simulated_status(section, simulated_models))
    return with_hint(withheld_once(section))


def _study_sections(
    studies: Mapping[str, Any],
    view: StudyResults,
    langs: Mapping[str, Mapping[str, Any]],
    builder: SectionBuilder,
) -> list[Section]:
    """The three studies' sections, each always present (saying "not run" when its key is absent).

    ``studies`` are the cleaned entries; one of another type than a mapping never gets here: the
    typed ``view`` refused it.
    """
    sections = [
        taxonomy_section(studies.get("error_taxonomy"), builder.walk, langs, view.error_taxonomy),
        human_section(studies.get("human_validation"), builder.walk, view.human_validation),
        granularity_section(studies.get("granularity"), builder.walk, view.granularity),
    ]
    for section in sections:
        section.parts = tidy(section.parts)
    return sections


def render_report(
    results: StudyResultsDocument | Mapping[str, Any],
    estimates: pd.DataFrame | None,
    *,
    title: str = "Cross-Lingual Comprehension Gap",
    languages: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """One self-contained HTML page (inline CSS, SVG and a few lines of script; nothing external).

    Language names and Joshi classes come from ``results["languages"]`` (a list of
    ``{iso, name, joshi_class}``); ``languages`` supplies them when the document lacks them
    (e.g. from the panel config), and entries in the document win.
    """
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be the study_results mapping, got {type(results).__name__}")
    # The typed view, built once (the studies cleaned first, as their sections show them): a field
    # of another type than its shape's is a DocumentError naming it, never a blank.
    studies = _cleaned_studies(results)
    view = study_results_view({**results, **studies})
    simulated = view.human_validation is not None and view.human_validation.is_simulated
    h1 = view.h1 or H1Model()
    langs = languages_of(results, languages)
    typed_settings = view.merged_settings()
    definitions = view.definitions or {}
    ci_label = ci_label_of(typed_settings)
    metric = metric_of(typed_settings)
    builder = _builder(langs, definitions, ci_label, typed_settings)
    header, missing = header_facts(view, langs, typed_settings)
    summary = _summary(h1, builder, definitions)
    counts = (view.h1.n if view.h1 is not None else None) or {}
    language_section = _by_language(h1, langs, builder, definitions, metric)
    model_section = models_section(view.h1, builder, ci_label)
    # The studies cap their own long tables (each table separately), so no table starves another.
    sections = result_sections(results, langs, builder, missing, metric, view) + _study_sections(
        studies, view, langs, builder
    )
    estimate_rows, estimates_truncated, with_articles = estimates_table_rows(
        estimates, view.estimands, view.mixed_effects, definitions
    )
    estimate_columns = ["estimand", "group", "estimate", ci_label, "p", "p (adjusted)", "n"]
    if with_articles:
        estimate_columns.append("articles")
    estimate_columns.append("flags")
    # The first screen (report/_decision.py) says a reason shared by every headline estimate once;
    # each section then says its own reasons once (report/_flag_notes.py), pointing to the top for it.
    first_screen = decision(view, langs, simulated=simulated, estimates=estimates)
    said = first_screen.global_reason
    summary_flags = shared_flags_note([summary], said)
    estimates_flags = shared_flags_note([Part("table", rows=estimate_rows)], said)
    new_model = new_model_section(view.new_model, builder, view.model_contrasts)
    new_model = flags_once(new_model, said) if new_model is not None else None
    # Flags shortened before an empty table becomes one line, so that line keeps the short mark
    # and the reason stays said once for the section.
    sections = [_finished(section, said, first_screen.simulated_models) for section in sections]
    language_section, model_section = (
        flags_once(section, said) if section is not None else None
        for section in (language_section, model_section)
    )
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        header=header,
        warnings=[_point_up(w, said) for w in _page_warnings(results, missing, langs, simulated)],
        summary=summary,
        summary_flags=summary_flags,
        decision=first_screen,
        estimates_flags=estimates_flags,
        new_model=new_model,
        ci_label=ci_label,
        counts=[(LABELS.get(str(k), title_words(str(k))), fmt_value(v)) for k, v in counts.items()],
        language_section=language_section,
        model_section=model_section,
        sections=sections,
        drilldown=drilldown_panels(view.drilldown, langs),
        metric=metric,
        definitions=definitions_rows(definitions),
        estimate_columns=estimate_columns,
        estimate_rows=estimate_rows,
        estimates_truncated=estimates_truncated,
        settings=settings_list(typed_settings),
        numeric_columns={
            "estimate",
            ci_label,
            "p",
            "p (adj.)",
            "p (adjusted)",
            "n",
            "articles",
            "Joshi class",
            *(label for _, label in MODEL_COLUMNS),
        },
    )


def _builder(
    langs: Mapping[str, Mapping[str, Any]],
    definitions: Definitions,
    ci_label: str,
    settings: SettingsModel,
) -> SectionBuilder:
    """The one builder of every section: labels, definitions, the interval label, planned replicates."""
    # ``replicates`` when the settings have it (even empty), else ``bootstrap_replicates``.
    given = "replicates" in settings.model_fields_set
    planned = settings.replicates if given else settings.bootstrap_replicates
    return SectionBuilder(Labeller(langs), definitions, ci_label, planned)


def _summary(h1: H1Model, builder: SectionBuilder, definitions: Definitions) -> Part:
    """The H1 summary table: the five estimands present, each with what it is."""
    present = h1.summary()
    rows = [
        builder.estimate_row(label, present[key].record(), key=key)
        for key, label in H1_SUMMARY
        if key in present
    ]
    for row, key in zip(rows, [key for key, _ in H1_SUMMARY if key in present], strict=True):
        row.cells.append(definition_text(definitions, key))
    columns = [*builder.estimate_columns[:-1], "flags and notes", "what it is"]
    return _pruned(Part("table", columns=columns, rows=rows))


def _by_language(
    h1: H1Model,
    langs: Mapping[str, Mapping[str, Any]],
    builder: SectionBuilder,
    definitions: Definitions,
    metric: str,
) -> Section | None:
    """The CLCG per target language (chart and table), when the document has it."""
    if not h1.by_language:
        return None
    return languages_section(
        "by-language",
        "CLCG per target language",
        h1.by_language,
        langs,
        builder,
        chart_title="CLCG per target language (English minus language), with intervals",
        x_label=f"CLCG: English minus language ({metric})",
        caption=definition_text(definitions, "clcg_language")
        or "English score minus the language's score on the same items; higher = larger loss.",
    )


def _page_warnings(
    results: Mapping[str, Any],
    missing: list[dict[str, str]] | None,
    langs: Mapping[str, Mapping[str, Any]],
    simulated: bool,
) -> list[str]:
    """The document's warnings, led by the simulated-annotations caveat and the languages without data."""
    warnings = warnings_of(results)
    if simulated:
        warnings.insert(0, SIMULATED_CAVEAT)
    if missing and not any(all(e["iso"] in w for e in missing) for w in warnings):
        warnings.insert(
            0,
            f"{len(missing)} panel language(s) have no data and no estimate: "
            + ", ".join(
                lang_name(e["iso"], langs) + (f" ({e['reason']})" if e["reason"] else "") for e in missing
            ),
        )
    return warnings


def _point_up(warning: str, said: str) -> str:
    """A caveat repeating the reason the first screen gives for everything points to it instead."""
    return warning.replace(said, "the reason given at the top") if said else warning


def write_report(html: str, path: str | os.PathLike[str]) -> None:
    """Write ``html`` to ``path`` atomically (temporary file in the same folder + os.replace).

    A URL (``s3://...``) is written through fsspec instead: object stores replace a whole
    object in one put, which gives the same all-or-nothing result.
    """
    target = str(path)  # str, not os.fspath: a UPath keeps its scheme
    if "://" in target and not target.startswith("file://"):
        import fsspec  # lazy: only remote targets need it

        with fsspec.open(target, "w", encoding="utf-8") as remote:
            remote.write(html)
        return
    target = target.removeprefix("file://")
    folder = os.path.dirname(os.path.abspath(target))
    os.makedirs(folder, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".report-", suffix=".html.tmp")
    except OSError as exc:  # name the report, not the temporary file
        raise OSError(exc.errno, exc.strerror, target) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(html)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a report is meant to be read
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = ["render_report", "write_report"]
