"""Render ``study_results.json`` and the ``estimates`` table as one self-contained HTML page."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from clcg_pipeline.report._format import (
    as_float,
    estimate_of,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_value,
)
from clcg_pipeline.report._svg import Bar, bar_chart_svg

# The five H1 summary estimands, in the order STUDY.md section 6 defines them.
H1_SUMMARY: tuple[tuple[str, str], ...] = (
    ("h1_micro", "H1 micro CLCG"),
    ("macro", "Macro CLCG"),
    ("pt_gap", "Portuguese gap"),
    ("macro_net", "Macro net"),
    ("micro_net", "Micro net"),
)
MODEL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("h1_micro", "H1 micro"),
    ("pt_gap", "PT gap"),
    ("macro_net", "Macro net"),
)

# Sections for the other parts of the results document, by every name the analysis stage
# may use for them; keys not listed here still render, under their own name.
KNOWN_SECTIONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("language_net", "net_by_language"), "Net gap per language (vs Portuguese)"),
    (("by_class", "per_class", "joshi_class", "classes"), "Per Joshi class"),
    (("h2", "memorability"), "H2: memorability"),
    (("h3", "level_profile"), "H3: level profile"),
    (("h4", "item_source"), "H4: item source"),
    (("bh", "bh_family", "multiplicity"), "Multiplicity (Benjamini-Hochberg)"),
    (("tost", "equivalence"), "Equivalence (TOST, EN-PT)"),
    (("mixed_effects", "mixed_models", "mixed", "mixed_model"), "Mixed-effects models (convergent check)"),
    (("rule_sensitivity", "parse_rule", "rules", "rule_b"), "Parse-failure rule A vs B"),
    (("repetitions",), "Repetitions"),
    (("context_gain",), "Context gain"),
    (("nomological", "nomological_network"), "Nomological network (exploratory)"),
    (("context_scope", "scope_probe", "context_scope_probe"), "Context-scope probe"),
    (("replication", "cross_corpus"), "Cross-corpus replication"),
)
# Rendered elsewhere: metadata, and "estimands" (a flat copy of the estimates table, shown once).
_NOT_SECTIONS = {
    "h1",
    "languages",
    "warnings",
    "settings",
    "config_hash",
    "title",
    "generated_at",
    "estimands",
}
_ESTIMATE_KEYS = {"estimate", "ci_low", "ci_high", "p", "p_adj", "p_value", "n"}
_ESTIMATES_COLUMNS = ("estimand", "group", "estimate", "ci_low", "ci_high", "p", "p_adj", "n")
_MAX_SECTION_ROWS = 400
_MAX_ESTIMATE_ROWS = 5000


@dataclass
class _Row:
    """One row of a generic results table."""

    name: str
    estimate: str = ""
    ci: str = ""
    p: str = ""
    p_adj: str = ""
    n: str = ""
    note: str = ""


@dataclass
class _Section:
    key: str
    title: str
    rows: list[_Row] = field(default_factory=list)
    truncated: int = 0


def _languages(
    results: Mapping[str, Any], fallback: Sequence[Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    listed = results.get("languages")
    for entry in [*(fallback or []), *(listed if isinstance(listed, list) else [])]:
        if isinstance(entry, Mapping) and entry.get("iso") is not None:
            found[str(entry["iso"])] = dict(entry)
    return found


def _joshi(value: object) -> int | None:
    number = as_float(value)
    return None if number is None else int(number)


def _fmt_n(value: object) -> str:
    if value is None:
        return ""
    return fmt_int(value) if as_float(value) is not None else fmt_value(value)


def _flatten(value: object, path: str, rows: list[_Row]) -> None:
    """Walk nested results: a dict holding an estimate becomes one row, scalars become notes."""
    if isinstance(value, Mapping):
        if _ESTIMATE_KEYS & set(value) and any(k in value for k in ("estimate", "p", "p_value")):
            notes = [
                f"{k}: {fmt_value(v)}"
                for k, v in value.items()
                if k not in _ESTIMATE_KEYS and not isinstance(v, Mapping | list)
            ]
            rows.append(
                _Row(
                    name=path or "value",
                    estimate=fmt_num(value.get("estimate")),
                    ci=fmt_ci(value.get("ci_low"), value.get("ci_high")),
                    p=fmt_p(value.get("p", value.get("p_value"))),
                    p_adj=fmt_p(value.get("p_adj")),
                    n=_fmt_n(value.get("n")),
                    note="; ".join(notes),
                )
            )
            for k, v in value.items():
                if isinstance(v, Mapping | list):
                    _flatten(v, f"{path} / {k}" if path else str(k), rows)
            return
        for k, v in value.items():
            _flatten(v, f"{path} / {k}" if path else str(k), rows)
        return
    if isinstance(value, list):
        if value and all(not isinstance(v, Mapping | list) for v in value):
            rows.append(_Row(name=path, note=fmt_value(value)))
            return
        for i, v in enumerate(value):
            label = str(i)
            if isinstance(v, Mapping):
                label = next(
                    (str(v[k]) for k in ("name", "test", "estimand", "label", "group", "iso") if k in v),
                    label,
                )
            _flatten(v, f"{path} / {label}" if path else label, rows)
        return
    rows.append(_Row(name=path or "value", note=fmt_value(value)))


def _section(key: str, title: str, value: object) -> _Section:
    rows: list[_Row] = []
    _flatten(value, "", rows)
    for row in rows:
        if row.name == "value":  # the section's value itself is one estimate or scalar
            row.name = key
    section = _Section(key=key, title=title, rows=rows[:_MAX_SECTION_ROWS])
    section.truncated = max(len(rows) - _MAX_SECTION_ROWS, 0)
    return section


def _other_sections(results: Mapping[str, Any]) -> list[_Section]:
    sections: list[_Section] = []
    used: set[str] = set(_NOT_SECTIONS)
    for names, title in KNOWN_SECTIONS:
        for name in names:
            if name in results and name not in used:
                sections.append(_section(name, title, results[name]))
                used.add(name)
    for name in results:
        if name not in used:
            sections.append(_section(str(name), str(name).replace("_", " ").capitalize(), results[name]))
    return sections


def _settings(results: Mapping[str, Any], h1: Mapping[str, Any]) -> list[tuple[str, str]]:
    merged: dict[str, Any] = {}
    for source in (h1.get("settings"), results.get("settings")):
        if isinstance(source, Mapping):
            merged.update(source)
    if "config_hash" in results:
        merged.setdefault("config_hash", results["config_hash"])
    first = ("seed", "replicates", "bootstrap_replicates", "config_hash", "rule", "band")
    ordered = [k for k in first if k in merged] + sorted(k for k in merged if k not in first)
    return [(str(k), fmt_value(merged[k])) for k in ordered]


def _warnings(results: Mapping[str, Any]) -> list[str]:
    raw = results.get("warnings") or []
    if isinstance(raw, str | Mapping):
        raw = [raw]
    out = []
    for item in raw:
        if isinstance(item, Mapping):
            out.append(str(item.get("message") or fmt_value(item)))
        else:
            out.append(str(item))
    return out


def _language_rows(h1: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for iso, block in (h1.get("by_language") or {}).items():
        est = estimate_of(block)
        meta = langs.get(str(iso), {})
        rows.append(
            {
                "iso": str(iso),
                "name": str(meta.get("name") or ""),
                "joshi_class": _joshi(meta.get("joshi_class")),
                "value": as_float(est.get("estimate")),
                "low": as_float(est.get("ci_low")),
                "high": as_float(est.get("ci_high")),
                "estimate": fmt_num(est.get("estimate")),
                "ci": fmt_ci(est.get("ci_low"), est.get("ci_high")),
                "n": fmt_int(est.get("n")),
            }
        )
    # Largest gap first; languages whose CLCG could not be computed go last.
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["iso"]))
    return rows


def _metric(results: Mapping[str, Any], h1: Mapping[str, Any]) -> str:
    for source in (results.get("settings"), h1.get("settings")):
        band = source.get("band") if isinstance(source, Mapping) else None
        if isinstance(band, Mapping) and band.get("metric"):
            return str(band["metric"])
    return "band metric"


def _bar_label(row: Mapping[str, Any], *, with_class: bool) -> str:
    label = f"{row['name']} ({row['iso']})" if row["name"] else row["iso"]
    if with_class:
        # The class is in the text too, not only in the colour, for readers who cannot tell them apart.
        joshi = row["joshi_class"]
        label += " \u00b7 unclassified" if joshi is None else f" \u00b7 class {joshi}"
    return label


def _model_rows(h1: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for model, block in (h1.get("by_model") or {}).items():
        block = block if isinstance(block, Mapping) else {}
        cells = []
        for key, _ in MODEL_COLUMNS:
            est = estimate_of(block.get(key))
            cells.append((fmt_num(est.get("estimate")), fmt_ci(est.get("ci_low"), est.get("ci_high"))))
        micro = estimate_of(block.get("h1_micro"))
        rows.append(
            {
                "model": str(model),
                "cells": cells,
                "value": as_float(micro.get("estimate")),
                "low": as_float(micro.get("ci_low")),
                "high": as_float(micro.get("ci_high")),
            }
        )
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["model"]))
    return rows


def _estimate_rows(estimates: pd.DataFrame | None) -> tuple[list[list[str]], int]:
    if estimates is None or estimates.empty:
        return [], 0
    frame = estimates.reindex(columns=list(_ESTIMATES_COLUMNS))
    shown = frame.head(_MAX_ESTIMATE_ROWS)
    rows = [
        [
            fmt_value(r.estimand),
            "" if pd.isna(r.group) else str(r.group),
            fmt_num(r.estimate),
            fmt_ci(r.ci_low, r.ci_high),
            fmt_p(r.p),
            fmt_p(r.p_adj),
            fmt_int(r.n),
        ]
        for r in shown.itertuples(index=False)
    ]
    return rows, max(len(frame) - _MAX_ESTIMATE_ROWS, 0)


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clcg_pipeline.report", "templates"),
        autoescape=True,  # everything from data is escaped; only the prebuilt SVG is Markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_report(
    results: Mapping[str, Any],
    estimates: pd.DataFrame | None,
    *,
    title: str = "Cross-Lingual Comprehension Gap",
    languages: Sequence[Mapping[str, Any]] | None = None,
) -> str:
    """One self-contained HTML page (inline CSS and SVG, no scripts, no external resources).

    Language names and Joshi classes come from ``results["languages"]`` (a list of
    ``{iso, name, joshi_class}``); ``languages`` supplies them when the document lacks them
    (e.g. from the panel config), and entries in the document win.
    """
    if not isinstance(results, Mapping):
        raise TypeError(f"results must be the study_results mapping, got {type(results).__name__}")
    h1 = results.get("h1")
    h1 = h1 if isinstance(h1, Mapping) else {}
    langs = _languages(results, languages)
    summary = [
        {
            "label": label,
            "estimate": fmt_num(estimate_of(h1.get(key)).get("estimate")),
            "ci": fmt_ci(estimate_of(h1.get(key)).get("ci_low"), estimate_of(h1.get(key)).get("ci_high")),
        }
        for key, label in H1_SUMMARY
        if key in h1
    ]
    language_rows = _language_rows(h1, langs)
    language_chart = bar_chart_svg(
        [
            Bar(
                label=_bar_label(r, with_class=bool(langs)),
                value=r["value"],
                low=r["low"],
                high=r["high"],
                joshi_class=r["joshi_class"],
            )
            for r in language_rows
            if r["value"] is not None
        ],
        title="CLCG per target language (English minus language), 95% CI",
        x_label=f"CLCG: English minus language ({_metric(results, h1)})",
        legend=bool(langs),
    )
    model_rows = _model_rows(h1)
    model_chart = bar_chart_svg(
        [
            Bar(label=r["model"], value=r["value"], low=r["low"], high=r["high"], colour="#3182bd")
            for r in model_rows
            if r["value"] is not None
        ],
        title="H1 micro CLCG per model, 95% CI",
        x_label="H1 micro CLCG",
        legend=False,
    )
    estimate_rows, estimates_truncated = _estimate_rows(estimates)
    counts = h1.get("n") if isinstance(h1.get("n"), Mapping) else {}
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        warnings=_warnings(results),
        summary=summary,
        has_h1=bool(h1),
        language_rows=language_rows,
        show_class=bool(langs),
        language_chart=Markup(language_chart),  # built by _svg, which escapes every text
        model_columns=[label for _, label in MODEL_COLUMNS],
        model_rows=model_rows,
        model_chart=Markup(model_chart),
        counts=[(str(k), fmt_value(v)) for k, v in counts.items()],
        settings=_settings(results, h1),
        sections=_other_sections(results),
        estimate_columns=["estimand", "group", "estimate", "95% CI", "p", "p (adjusted)", "n"],
        estimate_rows=estimate_rows,
        estimates_truncated=estimates_truncated,
    )


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
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".report-", suffix=".html.tmp")
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
