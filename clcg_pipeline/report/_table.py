"""The H1 table for the terminal (rich), as the CLI prints it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from clcg_pipeline.report._document import (
    band_text,
    describe,
    lang_name,
    languages_of,
    languages_without_data,
)
from clcg_pipeline.report._format import MISSING, as_float, fmt_ci, fmt_int, fmt_num
from clcg_pipeline.report._labels import H1_SUMMARY
from clcg_pipeline.report._page import flags_of
from clcg_pipeline.storage import EstimateModel, H1Model, ModelSetting, study_results_view


def _no_data_lines(missing: Sequence[Mapping[str, Any]], langs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which panel languages had no data and why: each language named once, under its reason.

    One reason: one line. Several: the count, then a line per reason (so an empty table explains
    itself, e.g. an empty item bank).
    """
    by_reason: dict[str, list[str]] = {}
    for entry in missing:
        by_reason.setdefault(str(entry["reason"] or "reason not recorded"), []).append(
            lang_name(entry["iso"], langs)
        )
    count = f"no data ({len(missing)} panel language{'s' if len(missing) != 1 else ''})"
    if len(by_reason) == 1:
        ((reason, names),) = by_reason.items()
        return [f"[yellow]{escape(f'{count}, {reason}: ' + ', '.join(names))}[/yellow]"]
    return [f"[yellow]{escape(count)}:[/yellow]"] + [
        f"[yellow]  {escape(reason + ': ' + ', '.join(names))}[/yellow]"
        for reason, names in by_reason.items()
    ]


def _model_label(model: ModelSetting) -> str:
    """A model's id, marked when its answers are simulated (the demo's offline reader)."""
    return str(model.id) + (" (SIMULATED gap, see the report)" if model.simulated else "")


def _caption(results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]]) -> str:
    """What the table measured (metric, band, corpus, models) and which languages had no data."""
    lines = []
    # Typed (a field of another type than its shape's is a DocumentError naming it); only the
    # sections read here are validated.
    read = ("h1", "settings", "languages_with_data", "languages_without_data")
    view = study_results_view({key: results[key] for key in read if key in results})
    settings = view.merged_settings()
    if settings.band is not None:
        lines.append("measured: " + band_text(settings.band))
    else:
        lines.append("measured: metric and band not recorded")
    if settings.sources:
        lines.append("corpus: " + "; ".join(describe(s) for s in settings.sources))
    by_model = view.h1.by_model if view.h1 is not None else None
    if settings.models:
        lines.append("models: " + ", ".join(_model_label(m) for m in settings.models))
    elif by_model:
        lines.append("models: " + ", ".join(by_model))
    missing = languages_without_data(view, langs)
    if missing:
        lines.extend(_no_data_lines(missing, langs))
    elif missing is not None:
        lines.append("no data: none (every panel language has data)")
    return "\n".join(line if line.startswith("[yellow]") else escape(line) for line in lines)


def format_h1_table(
    h1: Mapping[str, Any],
    languages: Sequence[Mapping[str, Any]] | None = None,
    *,
    results: Mapping[str, Any] | None = None,
) -> Table:
    """Rows per target language (largest CLCG first), then the five summary estimands.

    ``results`` (the whole study_results document) adds a caption saying what was measured
    (metric, band, corpus, models) and which panel languages had no data.
    """
    meta = {str(m.get("iso")): m for m in languages or [] if isinstance(m, Mapping)}
    document: Mapping[str, Any] = results if isinstance(results, Mapping) else {"h1": h1}
    langs = languages_of(document, languages)
    table = Table(
        title="Cross-Lingual Comprehension Gap (H1)",
        caption=_caption(document, langs),
        caption_justify="left",
    )
    table.add_column("iso")
    table.add_column("language")
    table.add_column("class", justify="right")
    table.add_column("CLCG", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("n", justify="right")
    rows = []
    reasons: list[str] = []

    def flag(est: Mapping[str, Any]) -> str:
        """A short mark per row; the full reasons go once under the table."""
        found = flags_of(est)
        reasons.extend(f for f in found if f not in reasons)
        return ", ".join(f.split(":")[0] for f in found)

    # The cells and flags from the typed h1 (a field of another type: a DocumentError naming it):
    # ``record`` holds every field of an estimate that may say why not to trust a row.
    typed = study_results_view({"h1": h1}).h1 or H1Model()
    for iso, est in (typed.by_language or {}).items():
        info = meta.get(str(iso), {})
        joshi = as_float(info.get("joshi_class"))
        rows.append(
            (
                as_float(est.estimate),
                [
                    str(iso),
                    str(info.get("name") or ""),
                    MISSING if joshi is None else str(int(joshi)),
                    fmt_num(est.estimate),
                    fmt_ci(est.ci_low, est.ci_high),
                    fmt_int(est.n),
                    flag(est.record()),
                ],
            )
        )
    summary = []
    found = typed.summary()
    for key, label in H1_SUMMARY:
        est = found.get(key) or EstimateModel()
        summary.append(
            [
                "",
                label,
                "",
                fmt_num(est.estimate),
                fmt_ci(est.ci_low, est.ci_high),
                "",
                flag(est.record()),
            ]
        )
    flagged = bool(reasons)
    if flagged:
        table.add_column("flag", style="yellow")
        table.caption = (
            (table.caption or "") + "\n" + "\n".join(f"[yellow]flag: {escape(r)}[/yellow]" for r in reasons)
        )
    rows.sort(key=lambda r: (r[0] is None, -(r[0] or 0.0), r[1][0]))
    for _, cells in rows:
        # Names come from data: escape rich markup so "[bold]" in a name prints literally.
        table.add_row(*(escape(c) for c in (cells if flagged else cells[:-1])))
    table.add_section()
    for cells in summary:
        table.add_row(*(escape(c) for c in (cells if flagged else cells[:-1])))
    return table
