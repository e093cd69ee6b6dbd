"""Render ``study_results.json`` and the ``estimates`` table as one self-contained HTML page.

The page is read by a researcher deciding whether to trust a result, so every section is a
labelled table (plus a chart where one helps), every estimate that is not converged, not
identifiable or otherwise flagged is marked where it appears, and the languages without data
are named in the header. Every part of the document is optional: older or partial results
files render what they have.
"""

from __future__ import annotations

import functools
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from clcg_pipeline.report._format import (
    MISSING,
    as_float,
    estimate_of,
    fmt_ci,
    fmt_int,
    fmt_num,
    fmt_p,
    fmt_value,
)
from clcg_pipeline.report._granularity_section import granularity_section
from clcg_pipeline.report._page import _VALUE_KEYS, Part, Row, Section, _pruned, flags_of
from clcg_pipeline.report._studies import tidy
from clcg_pipeline.report._svg import Bar, bar_chart_svg
from clcg_pipeline.report._validation_sections import SIMULATED_CAVEAT, human_section, taxonomy_section

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
    (("joshi_class", "by_class", "per_class", "classes"), "Per Joshi class"),
    (("h2", "memorability"), "H2: memorability"),
    (("h3", "level_profile"), "H3: level profile"),
    (("h4", "item_source"), "H4: item source"),
    (("multiplicity", "bh", "bh_family"), "Multiplicity (Benjamini-Hochberg)"),
    (("equivalence", "tost"), "Equivalence (TOST, EN-PT)"),
    (("mixed_effects", "mixed_models", "mixed", "mixed_model"), "Mixed-effects models (convergent check)"),
    (("parse_rule", "rule_sensitivity", "rules", "rule_b"), "Parse-failure rule A vs B"),
    (("metric_sensitivity", "metrics"), "Metric sensitivity"),
    (("repetitions",), "Repetitions"),
    (("context_gain",), "Context gain"),
    (("nomological", "nomological_network"), "Nomological network (exploratory)"),
    (("context_scope", "scope_probe", "context_scope_probe"), "Context-scope probe"),
    (("replication", "cross_corpus"), "Cross-corpus replication"),
    (("excluded_versions",), "Excluded article versions"),
)
# The studies of issues 10 and 11: always a section each, saying "not run" when the key is absent.
STUDY_SECTIONS = ("error_taxonomy", "human_validation", "granularity")
# Rendered elsewhere: metadata, the drill-down, definitions, and "estimands" (a flat copy of
# the estimates table, shown once as "All estimates").
_NOT_SECTIONS = {
    "h1",
    "languages",
    "languages_without_data",
    "languages_with_data",
    "warnings",
    "settings",
    "config_hash",
    "title",
    "generated_at",
    "code_version",
    "estimands",
    "definitions",
    "drilldown",
    *STUDY_SECTIONS,
}
# Readable names for keys the analysis stage uses; other keys are turned into words.
LABELS: dict[str, str] = {
    "h1_micro": "H1 micro CLCG",
    "macro": "Macro CLCG",
    "pt_gap": "Portuguese gap (EN \u2212 PT)",
    "macro_net": "Macro net",
    "micro_net": "Micro net",
    "by_model": "Per model",
    "by_language": "Per language",
    "by_class": "Per Joshi class",
    "by_class_sensitivity": "Per Joshi class (primary mapping, pooled class rows)",
    "pooled": "Pooled over models",
    "memorizable": "Memorizable articles",
    "new": "New articles",
    "difference": "Difference",
    "raw_descriptive": "Raw CLCG per level (descriptive)",
    "standardized": "Standardized CLCG per level",
    "standardization": "Standardization (per level)",
    "slope": "Slope over levels",
    "human": "Human-written items",
    "llm": "LLM-generated items",
    "primary": "Primary class mapping",
    "sensitivity": "Sensitivity class mapping",
    "raw": "Raw CLCG",
    "net": "Net CLCG",
    "per_repetition": "Per repetition",
    "pairwise_spearman": "Pairwise Spearman between repetitions",
    "kendalls_w": "Kendall's W",
    "kendall_w": "Kendall's W",
    "p_adj": "p (adj.)",
    "p_value": "p",
    "sd": "SD",
    "se": "SE",
    "n_cells": "cells",
    "n_models": "models",
    "p_sided": "p sidedness",
    "n_pairs": "pairs",
    "non_latin": "Non-Latin script",
    "valid_resamples": "valid resamples",
    "mean_pairwise_spearman": "Mean pairwise Spearman",
    "spearman": "Spearman correlation with the language CLCG",
    "partial_spearman_on_joshi": "Partial Spearman, controlling for Joshi class",
    "spearman_joshi_sensitivity": "Spearman with Joshi class (sensitivity mapping)",
    "standardized_ols": "Standardized OLS (descriptive)",
    "paired_article_means": "Paired article means (t-based TOST)",
    "bootstrap": "Bootstrap TOST",
    "closed_book_mean": "Closed-book mean",
    "matched_rows": "Matched rows",
    "selector": "Item selection",
    "n": "n",
    "n_articles": "articles",
    "ci_90": "90% CI",
    "p_lower": "p (lower bound test)",
    "p_upper": "p (upper bound test)",
    "rows_without_date_or_cutoff": "Rows without a date or cutoff",
    "A": "Rule A (parse failures score 0)",
    "B": "Rule B (parse failures dropped)",
    "difference_h1_micro": "Difference in H1 micro (A \u2212 B)",
    "variance_components": "Variance components",
    "band_metric": "metric of the band",
    "token_f1": "Token-F1",
    "rouge_l": "ROUGE-L",
    "semsim": "semantic similarity",
    "h1": "H1 model",
    "h2": "H2 model",
}
_ESTIMATE_FIELDS = {
    *_VALUE_KEYS,
    "ci_low",
    "ci_high",
    "p",
    "p_value",
    "p_adj",
    "p_bound",
    "n",
    "n_articles",
    "identifiable",
    "reason",
    "valid_replicates",
    "flags",
    "converged",
    "status",
    "warnings",
}
_ESTIMATES_COLUMNS = ("estimand", "group", "estimate", "ci_low", "ci_high", "p", "p_adj", "n")
_SECRET = re.compile(r"(api[_-]?key|secret|token|password|credential)", re.IGNORECASE)
_MAX_SECTION_ROWS = 400
_MAX_ESTIMATE_ROWS = 5000
_MAX_NOTE = 240


# ---------------------------------------------------------------------------------------------
# Small helpers


def _words(key: str) -> str:
    text = str(key).replace("_", " ").strip()
    return text[:1].upper() + text[1:] if text else str(key)


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _scalar_list(value: object) -> bool:
    return isinstance(value, list | tuple) and all(_is_scalar(v) for v in value)


def _short(text: str) -> str:
    return text if len(text) <= _MAX_NOTE else text[: _MAX_NOTE - 1] + "\u2026"


def _fact(value: object) -> str:
    """A scalar or a list of scalars as text (lists joined by commas, floats to 3 decimals)."""
    if isinstance(value, list | tuple):
        return ", ".join(_fact(v) for v in value) if value else "none"
    if isinstance(value, float):
        return fmt_num(value, 4 if abs(value) < 0.01 and value != 0 else 3)
    return fmt_value(value)


def _is_estimate(value: object) -> bool:
    if not isinstance(value, Mapping):
        return False
    if any(k in value for k in _VALUE_KEYS):
        return True
    return "p" in value and ("ci_low" in value or "n" in value)


def _is_status_only(value: object) -> bool:
    """``{"status": "not identifiable", ...}``: an estimate that could not be computed."""
    if not isinstance(value, Mapping) or _is_estimate(value):
        return False
    if value.get("identifiable") is False:
        return True
    return "status" in value and all(_is_scalar(v) or _scalar_list(v) for v in value.values())


def _p_cell(block: Mapping[str, Any]) -> str:
    return fmt_p(block.get("p", block.get("p_value")), bound=bool(block.get("p_bound")))


def _plain(text: object) -> str:
    """Definition text without the Markdown code marks it keeps for docs/ESTIMANDS.md."""
    return str(text).replace("`", "")


def _definition(definitions: Mapping[str, Any], *names: str) -> str:
    """A tooltip text for the first of ``names`` with a definition."""
    for name in names:
        entry = definitions.get(name)
        if isinstance(entry, Mapping) and entry.get("definition"):
            parts = [_plain(entry["definition"])]
            for key, label in (("direction", "direction"), ("sided", "p"), ("metric", "metric")):
                if entry.get(key):
                    parts.append(f"{label}: {_plain(entry[key])}")
            return "; ".join(parts)
        if isinstance(entry, str) and entry:
            return _plain(entry)
    return ""


# ---------------------------------------------------------------------------------------------
# The page model: sections made of parts (headings, facts, tables, charts)


class _Labeller:
    """Readable labels: language isos as names, class and repetition keys spelled out.

    ``context`` is the path of keys above ``key`` ("joshi_class/primary"), which says what a
    bare number means there.
    """

    def __init__(self, langs: Mapping[str, Mapping[str, Any]]) -> None:
        self.langs = langs

    def __call__(self, key: object, context: str = "") -> str:
        key = str(key)
        if key in self.langs:
            name = self.langs[key].get("name")
            return f"{name} ({key})" if name else key
        context = context.lower()
        if re.fullmatch(r"-?\d+", key):
            if "class" in context:
                return f"class {key}"
            if "rep" in context:
                return f"repetition {key}"
        if re.fullmatch(r"\d+-\d+", key) and "spearman" in context:
            return "repetitions " + key.replace("-", " vs ")
        if context.endswith(("by_model", "per_model")):
            return key  # a model id, spelled as configured
        if key == "spearman" and context.startswith("human_validation"):
            # LABELS' "spearman" is the nomological network's; here it is the metric vs the humans.
            return "Spearman correlation of the automatic metric with human ratings"
        if key in LABELS:
            return LABELS[key]
        if len(key) <= 2:
            return key
        return _words(key)


def _table_like(value: Mapping[str, Any]) -> bool:
    """A mapping of flat records (e.g. mean and SD per level): one table, not one list per key."""
    return len(value) >= 2 and all(
        isinstance(v, Mapping)
        and v
        and all(_is_scalar(x) or _scalar_list(x) for x in v.values())
        and not _is_estimate(v)
        and not _is_status_only(v)
        for v in value.values()
    )


class _SectionBuilder:
    """Turns any nested results value into headed fact lists and estimate tables."""

    def __init__(
        self, label: _Labeller, definitions: Mapping[str, Any], ci_label: str, replicates: int | None = None
    ) -> None:
        self.label = label
        self.definitions = definitions
        self.ci_label = ci_label
        self.replicates = replicates

    @property
    def estimate_columns(self) -> list[str]:
        return ["", "estimate", self.ci_label, "p", "p (adj.)", "n", "articles", "flags and notes"]

    def estimate_row(self, label: str, block: Mapping[str, Any], *, key: str = "", context: str = "") -> Row:
        value = next((block.get(k) for k in _VALUE_KEYS if k in block), None)
        flags = flags_of(block)
        notes = []
        valid = as_float(block.get("valid_replicates"))
        if valid is not None and (self.replicates is None or valid < self.replicates):
            # Only worth a note when some replicates were dropped (or the planned count is unknown).
            notes.append(
                f"valid replicates: {fmt_int(valid)}" + (f" of {self.replicates}" if self.replicates else "")
            )
        for k, v in block.items():
            if k in _ESTIMATE_FIELDS:
                continue
            if _is_scalar(v) or _scalar_list(v):
                notes.append(f"{self.label(k, context)}: {_fact(v)}")
            elif (
                isinstance(v, Mapping)
                and all(_is_scalar(x) for x in v.values())
                and not (_is_estimate(v) or _is_status_only(v))  # those get a table of their own
            ):
                notes.append(
                    f"{self.label(k, context)}: " + ", ".join(f"{a} {_fact(b)}" for a, b in v.items())
                )
        warnings = block.get("warnings")
        if isinstance(warnings, list | tuple):
            notes.extend(f"warning: {w}" for w in warnings)
        elif isinstance(warnings, str):
            notes.append(f"warning: {warnings}")
        return Row(
            cells=[
                label,
                fmt_num(value),
                fmt_ci(block.get("ci_low"), block.get("ci_high")),
                _p_cell(block),
                fmt_p(block.get("p_adj")),
                fmt_int(block.get("n")) if block.get("n") is not None else "",
                fmt_int(block.get("n_articles")) if block.get("n_articles") is not None else "",
                _short("; ".join(notes)),
            ],
            flags=flags,
            title=_definition(self.definitions, key) if key else "",
        )

    def estimate_table(self, rows: list[Row]) -> Part:
        return _pruned(Part("table", columns=self.estimate_columns, rows=rows))

    def walk(
        self, value: object, path: list[str], parts: list[Part], key: str = "", context: str = ""
    ) -> None:
        """Append headed parts for ``value``; ``path`` are the labels above it (its heading)."""
        heading = " \u203a ".join(path)
        if _is_status_only(value) and isinstance(value, Mapping):
            # Nothing was estimated: say why, as a flag, instead of a row of dashes.
            if heading:
                parts.append(Part("heading", text=heading))
            parts.append(Part("flags", rows=[Row(cells=[], flags=flags_of(value) or ["not available"])]))
            return
        if _is_estimate(value) and isinstance(value, Mapping):
            if heading:
                parts.append(Part("heading", text=heading))
            label = path[-1] if path else self.label(key) if key else "estimate"
            row = self.estimate_row(label, value, key=key, context=context)
            parts.append(self.estimate_table([row]))
            self._nested(value, path, parts, context)
            return
        if isinstance(value, Mapping):
            if _table_like(value):
                if heading:
                    parts.append(Part("heading", text=heading))
                records = [{"": self.label(k, context), **v} for k, v in value.items()]
                parts.append(self.record_table(records, context))
                return
            facts = [
                (self.label(k, context), _fact(v))
                for k, v in value.items()
                if _is_scalar(v) or _scalar_list(v)
            ]
            estimates = [
                self.estimate_row(self.label(k, context), v, key=str(k), context=f"{context}/{k}")
                for k, v in value.items()
                if _is_estimate(v) or _is_status_only(v)
            ]
            if (facts or estimates) and heading:
                parts.append(Part("heading", text=heading))
            if facts:
                parts.append(Part("facts", facts=facts))
            if estimates:
                parts.append(self.estimate_table(estimates))
            for k, v in value.items():
                below = f"{context}/{k}"
                if _is_estimate(v) or _is_status_only(v):
                    if isinstance(v, Mapping):
                        self._nested(v, [*path, self.label(k, context)], parts, below)
                    continue
                if isinstance(v, Mapping | list | tuple) and not _scalar_list(v):
                    name = "rows counted" if k == "n" else self.label(k, context)
                    self.walk(v, [*path, name], parts, str(k), below)
            return
        if isinstance(value, list | tuple):
            if _scalar_list(value):
                parts.append(Part("facts", facts=[(heading or "values", _fact(value))]))
                return
            if heading:
                parts.append(Part("heading", text=heading))
            parts.append(self.record_table([v for v in value if isinstance(v, Mapping)], context))
            return
        parts.append(Part("facts", facts=[(heading or "value", _fact(value))]))

    def _nested(self, block: Mapping[str, Any], path: list[str], parts: list[Part], context: str) -> None:
        """Sub-results inside an estimate (e.g. the two TOST variants) get their own tables."""
        for k, v in block.items():
            if k in _ESTIMATE_FIELDS or not isinstance(v, Mapping):
                continue
            nested = not all(_is_scalar(x) for x in v.values())
            if nested or _is_estimate(v) or _is_status_only(v):
                self.walk(v, [*path, self.label(k, context)], parts, str(k), f"{context}/{k}")

    def record_table(self, records: list[Mapping[str, Any]], context: str = "") -> Part:
        """A list of records (e.g. the BH family) as a table with one column per field."""
        columns: list[str] = []
        for record in records:
            columns.extend(k for k in record if k not in columns)
        rows = []
        for record in records:
            cells = []
            for column in columns:
                v = record.get(column)
                if (column in ("p", "p_adj", "p_value") or column.startswith("p_")) and not isinstance(
                    v, bool
                ):
                    cells.append(fmt_p(v, bound=bool(record.get("p_bound"))))
                elif _is_scalar(v) or _scalar_list(v):
                    cells.append(_short(_fact(v)))
                else:
                    cells.append(_short(json.dumps(v, default=str, sort_keys=True)))
            rows.append(Row(cells=cells, flags=flags_of(record)))
        labels = [self.label(c, context) if c else "" for c in columns]
        if any(row.flags for row in rows):
            labels.append("flags")
            for row in rows:
                row.cells.append("")
        return Part("table", columns=labels, rows=rows)


# ---------------------------------------------------------------------------------------------
# Reading the document


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


def band_text(band: Mapping[str, Any]) -> str:
    """The analysis band in words (metric, levels, item source, context), for the header and the CLI."""
    parts = [f"metric {band.get('metric', 'token_f1')}"]
    if band.get("levels"):
        parts.append("levels " + ", ".join(str(v) for v in band["levels"]))
    if band.get("item_source"):
        parts.append(f"{band['item_source']} items")
    if band.get("context_scope"):
        parts.append(f"context {band['context_scope']}")
    return "; ".join(parts)


def _settings_of(results: Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    h1 = results.get("h1")
    for source in (h1.get("settings") if isinstance(h1, Mapping) else None, results.get("settings")):
        if isinstance(source, Mapping):
            merged.update(source)
    for key in ("config_hash", "generated_at", "code_version"):
        if key in results and _is_scalar(results[key]):
            merged.setdefault(key, results[key])
    return merged


def _iso_list(value: object) -> list[dict[str, str]]:
    """``["eu", ...]`` or ``[{"iso": "eu", "reason": ...}, ...]`` as ``[{iso, reason}]``."""
    if isinstance(value, str):
        value = [value]
    out = []
    for entry in value if isinstance(value, list | tuple) else []:
        if isinstance(entry, Mapping):
            iso = entry.get("iso") or entry.get("language")
            if iso is not None:
                reason = entry.get("reason") or entry.get("status") or ""
                out.append({"iso": str(iso), "reason": str(reason)})
        elif entry is not None:
            out.append({"iso": str(entry), "reason": ""})
    return out


def languages_without_data(
    results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]] | None = None
) -> list[dict[str, str]] | None:
    """Panel languages with no scored data: as recorded, else derived; None when unknowable.

    Derived (older documents) = target languages of the panel with no H1 per-language entry.
    """
    settings = _settings_of(results)
    for source in (results.get("languages_without_data"), settings.get("languages_without_data")):
        if source is not None:
            return _iso_list(source)
    langs = langs if langs is not None else _languages(results, None)
    if not langs:
        return None
    h1 = results.get("h1") if isinstance(results.get("h1"), Mapping) else {}
    by_language = h1.get("by_language") if isinstance(h1, Mapping) else None
    scored = {
        str(iso)
        for iso, block in (by_language or {}).items()
        if as_float(estimate_of(block).get("estimate")) is not None
    }
    return [
        {"iso": iso, "reason": "no scored rows"}
        for iso, meta in langs.items()
        if meta.get("role", "target") == "target" and iso not in scored
    ]


def _lang_name(iso: str, langs: Mapping[str, Mapping[str, Any]]) -> str:
    name = langs.get(iso, {}).get("name")
    return f"{name} ({iso})" if name else iso


def _describe(entry: object) -> str:
    """A model or source entry as one line, never showing a secret-looking field."""
    if not isinstance(entry, Mapping):
        return fmt_value(entry)
    name = next((str(entry[k]) for k in ("id", "name", "source", "kind") if entry.get(k)), "")
    details = []
    for k, v in entry.items():
        if not _is_scalar(v) or _SECRET.search(str(k)) or str(v) == name:
            continue
        if k == "knowledge_cutoff":
            details.append(f"cutoff {v}" if v else "no knowledge cutoff")
        elif v in (None, ""):
            continue
        elif k in ("model", "provider", "role", "kind", "format", "type"):
            details.append(str(v))
        else:
            details.append(f"{k}: {fmt_value(v)}")
    return f"{name} ({', '.join(details)})" if details else name or fmt_value(dict(entry))


def _header(
    results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]], settings: Mapping[str, Any]
) -> tuple[list[tuple[str, str]], list[dict[str, str]] | None]:
    h1 = results.get("h1") if isinstance(results.get("h1"), Mapping) else {}
    facts: list[tuple[str, str]] = []
    sources = settings.get("sources") or results.get("sources")
    if sources:
        items = sources if isinstance(sources, list | tuple) else [sources]
        facts.append(("corpus", "; ".join(_describe(s) for s in items)))
    else:
        facts.append(("corpus", "not recorded"))
    models = settings.get("models")
    if models:
        items = models if isinstance(models, list | tuple) else [models]
        facts.append(("models", "; ".join(_describe(m) for m in items)))
    elif isinstance(h1, Mapping) and h1.get("by_model"):
        facts.append(("models", ", ".join(str(m) for m in h1["by_model"])))
    else:
        facts.append(("models", "not recorded"))
    with_data = _iso_list(settings.get("languages_with_data") or results.get("languages_with_data"))
    if not with_data and isinstance(h1, Mapping) and isinstance(h1.get("by_language"), Mapping):
        anchors = [iso for iso, meta in langs.items() if meta.get("role") in ("reference", "baseline")]
        scored = [
            str(k)
            for k, v in h1["by_language"].items()
            if as_float(estimate_of(v).get("estimate")) is not None
        ]
        with_data = _iso_list([*anchors, *scored])
    facts.append(
        (
            "languages analysed",
            ", ".join(_lang_name(e["iso"], langs) for e in with_data) if with_data else "not recorded",
        )
    )
    missing = languages_without_data(results, langs)
    if missing is None:
        facts.append(("languages without data", "not recorded"))
    elif missing:
        facts.append(
            (
                "languages without data",
                ", ".join(_lang_name(e["iso"], langs) for e in missing)
                + f" ({len(missing)} panel language{'s' if len(missing) != 1 else ''}: no estimate for them)",
            )
        )
    else:
        facts.append(("languages without data", "none: every panel language has data"))
    band = settings.get("band")
    if isinstance(band, Mapping):
        facts.append(("analysis band", band_text(band)))
    facts.append(("generated", str(settings.get("generated_at") or "not recorded")))
    facts.append(("code version", _version(settings.get("code_version"))))
    if settings.get("config_hash"):
        facts.append(("config hash", str(settings["config_hash"])[:16]))
    return facts, missing


def _version(value: object) -> str:
    """``"0.1.0"`` or ``{"package": "0.1.0", "git_commit": "03f3..."}`` as one line."""
    if isinstance(value, Mapping):
        package = value.get("package") or value.get("version")
        commit = value.get("git_commit") or value.get("commit")
        dirty = " (uncommitted changes)" if value.get("dirty") else ""
        text = " ".join(
            part for part in (str(package or ""), f"git {str(commit)[:12]}" if commit else "") if part
        )
        return (text + dirty) or "not recorded"
    return str(value) if value else "not recorded"


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


def _metric(settings: Mapping[str, Any]) -> str:
    band = settings.get("band")
    if isinstance(band, Mapping) and band.get("metric"):
        return str(band["metric"])
    return "band metric"


def _ci_label(settings: Mapping[str, Any]) -> str:
    confidence = as_float(settings.get("confidence"))
    return f"{confidence * 100:g}% CI" if confidence is not None and 0 < confidence < 1 else "95% CI"


# ---------------------------------------------------------------------------------------------
# Sections with charts


def _bar_label(iso: str, langs: Mapping[str, Mapping[str, Any]], *, with_class: bool) -> str:
    meta = langs.get(iso, {})
    label = f"{meta['name']} ({iso})" if meta.get("name") else iso
    if with_class:
        # The class is in the text too, not only in the colour, for readers who cannot tell them apart.
        joshi = _joshi(meta.get("joshi_class"))
        label += " \u00b7 unclassified" if joshi is None else f" \u00b7 class {joshi}"
    return label


def _language_rows(
    by_language: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    rows = []
    for iso, block in by_language.items():
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
                "block": est,
            }
        )
    # Largest gap first; languages whose CLCG could not be computed go last.
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["iso"]))
    return rows


def _language_section(
    key: str,
    title: str,
    by_language: Mapping[str, Any],
    langs: Mapping[str, Mapping[str, Any]],
    builder: _SectionBuilder,
    *,
    chart_title: str,
    x_label: str,
    caption: str,
) -> Section:
    rows = _language_rows(by_language, langs)
    chart = bar_chart_svg(
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
        row = builder.estimate_row(_lang_name(r["iso"], langs), r["block"])
        if langs:
            joshi = r["joshi_class"]
            row.cells.insert(1, "unclassified" if joshi is None else str(joshi))
        table_rows.append(row)
    columns = builder.estimate_columns
    columns = [columns[0] or "language", *(["Joshi class"] if langs else []), *columns[1:]]
    section = Section(key=key, title=title, caption=caption)
    if chart:
        section.parts.append(Part("chart", chart=Markup(chart)))  # built by _svg, which escapes every text
    section.parts.append(_pruned(Part("table", columns=columns, rows=table_rows)))
    return section


def _class_section(
    key: str, title: str, value: Mapping[str, Any], builder: _SectionBuilder, caption: str
) -> Section:
    section = Section(key=key, title=title, caption=caption)
    primary = value.get("primary") if isinstance(value.get("primary"), Mapping) else None
    if primary:
        bars = []
        for cls, block in sorted(
            primary.items(), key=lambda kv: (as_float(kv[0]) is None, as_float(kv[0]) or 0)
        ):
            raw = estimate_of(block.get("raw") if isinstance(block, Mapping) else None)
            number = as_float(raw.get("estimate"))
            if number is None:
                continue
            languages = block.get("languages") if isinstance(block, Mapping) else None
            label = f"class {cls}"
            if isinstance(languages, list) and languages:
                label += f" ({', '.join(str(v) for v in languages)})"
            bars.append(
                Bar(
                    label=label,
                    value=number,
                    low=as_float(raw.get("ci_low")),
                    high=as_float(raw.get("ci_high")),
                    joshi_class=_joshi(cls),
                    flagged=bool(flags_of(raw)),
                )
            )
        chart = bar_chart_svg(
            bars,
            title="Mean raw CLCG per Joshi class (primary mapping), with intervals",
            x_label="Class mean CLCG: English minus language",
            legend=False,
            chart_id=f"chart-{key}",
        )
        if chart:
            section.parts.append(Part("chart", chart=Markup(chart)))
    rest: dict[str, Any] = {}
    for mapping, classes in value.items():
        if not _class_table_like(classes):
            rest[mapping] = classes
            continue
        section.parts.append(Part("heading", text=builder.label(mapping, key)))
        section.parts.append(_class_table(classes, builder))
    builder.walk(rest, [], section.parts, key, key)
    return section


_METRIC_NAMES = {
    "token_f1": "Token-F1",
    "rouge_l": "ROUGE-L",
    "semsim": "semantic similarity",
    "exact_match": "exact match",
}


def _metric_section(
    key: str, title: str, value: Mapping[str, Any], builder: _SectionBuilder, caption: str
) -> Section:
    """H1 summary estimands under each metric, side by side (one column pair per metric)."""
    section = Section(key=key, title=title, caption=caption)
    metrics = value.get("metrics")
    if not isinstance(metrics, Mapping) or not metrics:
        builder.walk(value, [], section.parts, key, key)
        return section
    band_metric = value.get("band_metric")
    names = sorted(metrics, key=lambda m: (m != band_metric, m))  # the band's metric first
    columns = ["estimand"]
    for name in names:
        label = _METRIC_NAMES.get(name, name) + (" (band)" if name == band_metric else "")
        columns += [label, builder.ci_label]
    columns.append("flags")
    rows = []
    for estimand, label in H1_SUMMARY:
        cells, flags = [label], []
        for name in names:
            block = metrics[name] if isinstance(metrics[name], Mapping) else {}
            est = estimate_of(block.get(estimand))
            cells += [fmt_num(est.get("estimate")), fmt_ci(est.get("ci_low"), est.get("ci_high"))]
            flags += [f"{_METRIC_NAMES.get(name, name)}: {f}" for f in flags_of(est)]
        cells.append("")
        rows.append(Row(cells=cells, flags=flags))
    section.parts.append(Part("table", columns=columns, rows=rows))
    not_computed = [
        f"{_METRIC_NAMES.get(name, name)}: {block.get('reason') or block.get('status')}"
        for name, block in metrics.items()
        if isinstance(block, Mapping) and block.get("computed") is False
    ]
    if not_computed:
        section.parts.append(Part("flags", rows=[Row(cells=[], flags=not_computed)]))
    facts = [(builder.label(k, key), _fact(v)) for k, v in value.items() if _is_scalar(v) or _scalar_list(v)]
    if facts:
        section.parts.append(Part("facts", facts=facts))
    return section


def _class_table_like(value: object) -> bool:
    """``{class: {languages, raw: {...}, net: {...}}}``, the shape of each class mapping."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(v, Mapping) and ("raw" in v or "net" in v) for v in value.values())
    )


def _class_table(classes: Mapping[str, Any], builder: _SectionBuilder) -> Part:
    """One row per class: languages, raw and net class means with intervals."""
    columns = ["class", "languages", "raw CLCG", builder.ci_label, "net CLCG", builder.ci_label, "n", "flags"]
    rows = []
    for cls, block in classes.items():
        raw, net = estimate_of(block.get("raw")), estimate_of(block.get("net"))
        languages = block.get("languages")
        flags = [f"raw: {f}" for f in flags_of(raw)] + [f"net: {f}" for f in flags_of(net)]
        flags += [f for f in flags_of(block) if f not in flags]
        rows.append(
            Row(
                cells=[
                    f"class {cls}",
                    _fact(languages) if isinstance(languages, list | tuple) else MISSING,
                    fmt_num(raw.get("estimate")),
                    fmt_ci(raw.get("ci_low"), raw.get("ci_high")),
                    fmt_num(net.get("estimate")),
                    fmt_ci(net.get("ci_low"), net.get("ci_high")),
                    fmt_int(raw.get("n", net.get("n"))),
                    "",
                ],
                flags=flags,
            )
        )
    return _pruned(Part("table", columns=columns, rows=rows))


def _level_section(
    key: str, title: str, value: Mapping[str, Any], builder: _SectionBuilder, caption: str
) -> Section:
    section = Section(key=key, title=title, caption=caption)
    for sub, chart_title, x_label in (
        (
            "standardized",
            "H3 level profile: standardized CLCG per question level",
            "Standardized CLCG (z units)",
        ),
        ("raw_descriptive", "Raw CLCG per question level (descriptive)", "Raw CLCG"),
    ):
        levels = value.get(sub)
        if not isinstance(levels, Mapping):
            continue
        bars = [
            Bar(
                label=str(level),
                value=number,
                low=as_float(estimate_of(block).get("ci_low")),
                high=as_float(estimate_of(block).get("ci_high")),
                colour="#31688e",
                flagged=bool(flags_of(estimate_of(block))),
            )
            for level, block in levels.items()
            if (number := as_float(estimate_of(block).get("estimate"))) is not None
        ]
        chart = bar_chart_svg(
            bars, title=chart_title, x_label=x_label, legend=False, chart_id=f"chart-{key}-{sub}"
        )
        if chart:
            section.parts.append(Part("chart", chart=Markup(chart)))
            break  # one profile chart; the raw levels stay in the table below
    builder.walk(value, [], section.parts, key, key)
    return section


def _model_section(h1: Mapping[str, Any], builder: _SectionBuilder, ci_label: str) -> Section | None:
    by_model = h1.get("by_model")
    if not isinstance(by_model, Mapping) or not by_model:
        return None
    section = Section(
        key="by-model",
        title="Per model",
        caption="The H1 summary estimands computed on each model's responses alone.",
    )
    entries = []
    for model, block in by_model.items():
        block = block if isinstance(block, Mapping) else {}
        micro = estimate_of(block.get("h1_micro"))
        entries.append((as_float(micro.get("estimate")), str(model), block, micro))
    entries.sort(key=lambda e: (e[0] is None, -(e[0] or 0.0), e[1]))
    chart = bar_chart_svg(
        [
            Bar(
                label=m,
                value=v,
                low=as_float(mi.get("ci_low")),
                high=as_float(mi.get("ci_high")),
                colour="#3182bd",
                flagged=bool(flags_of(mi)),
            )
            for v, m, _, mi in entries
            if v is not None
        ],
        title="H1 micro CLCG per model, with intervals",
        x_label="H1 micro CLCG",
        legend=False,
        chart_id="chart-by-model",
    )
    if chart:
        section.parts.append(Part("chart", chart=Markup(chart)))
    columns = ["model"]
    for _, label in MODEL_COLUMNS:
        columns += [label, ci_label]
    columns.append("flags and notes")
    rows = []
    for _, model, block, _ in entries:
        cells = [model]
        flags: list[str] = []
        for key, _ in MODEL_COLUMNS:
            est = estimate_of(block.get(key))
            cells += [fmt_num(est.get("estimate")), fmt_ci(est.get("ci_low"), est.get("ci_high"))]
            flags += [f"{key}: {f}" for f in flags_of(est)]
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
        builder = _SectionBuilder(_Labeller(langs), {}, "95% CI")
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
                + ", ".join(_lang_name(e["iso"], langs) for e in missing)
                + " have no scored rows and no estimate (see the header).",
            )
        )
    return section


def _drilldown(
    results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]], metric: str
) -> list[dict[str, Any]]:
    raw = results.get("drilldown")
    if isinstance(raw, Mapping) and isinstance(raw.get("languages"), Mapping):
        raw = raw["languages"]
    if not isinstance(raw, Mapping):
        return []
    panels = []
    for iso, entries in raw.items():
        items = [e for e in entries if isinstance(e, Mapping)] if isinstance(entries, list) else []
        panels.append(
            {
                "iso": str(iso),
                "label": _lang_name(str(iso), langs),
                "items": [
                    {
                        "question": str(e.get("question") or MISSING),
                        "gold": str(e.get("gold") or MISSING),
                        "en_answer": MISSING if e.get("en_answer") is None else str(e.get("en_answer")),
                        "target_answer": MISSING
                        if e.get("target_answer") is None
                        else str(e.get("target_answer")),
                        "en_score": fmt_num(e.get("en_score")),
                        "target_score": fmt_num(e.get("target_score")),
                        "difference": fmt_num(e.get("difference")),
                        "where": " \u00b7 ".join(
                            str(e[k]) for k in ("model", "doc_id", "item_id", "level") if e.get(k) is not None
                        ),
                        "reps": fmt_value(e.get("reps")) if e.get("reps") is not None else "",
                    }
                    for e in items
                ],
            }
        )
    # Languages with evidence first, in panel order where known.
    order = {iso: i for i, iso in enumerate(langs)}
    panels.sort(key=lambda p: (not p["items"], order.get(p["iso"], len(order)), p["iso"]))
    return panels


def _estimate_rows(
    estimates: pd.DataFrame | None, results: Mapping[str, Any], definitions: Mapping[str, Any]
) -> tuple[list[Row], int, bool]:
    if estimates is None or estimates.empty:
        return [], 0, False
    extra = [c for c in ("n_articles",) if c in estimates.columns]
    frame = estimates.reindex(
        columns=[
            *_ESTIMATES_COLUMNS,
            *extra,
            *(
                c
                for c in (
                    "identifiable",
                    "reason",
                    "converged",
                    "flags",
                    "p_bound",
                    "status",
                    "valid_replicates",
                )
                if c in estimates.columns
            ),
        ]
    )
    by_estimand = results.get("estimands") if isinstance(results.get("estimands"), Mapping) else {}
    mixed = results.get("mixed_effects") if isinstance(results.get("mixed_effects"), Mapping) else {}
    shown = frame.head(_MAX_ESTIMATE_ROWS)
    rows = []
    for record in shown.to_dict(orient="records"):
        record = {k: (None if _is_na(v) else v) for k, v in record.items()}
        estimand, group = str(record["estimand"]), record["group"]
        flags = flags_of(record)
        # The results document may know more about a row than the table does (e.g. convergence).
        groups = by_estimand.get(estimand) if isinstance(by_estimand, Mapping) else None
        extra_block = groups.get(str(group)) if isinstance(groups, Mapping) and group is not None else None
        sources: list[object] = [extra_block]
        if estimand.startswith("mixed_") and isinstance(mixed, Mapping):
            sources.append(mixed.get(estimand.removeprefix("mixed_")))
        p_bound = bool(record.get("p_bound"))
        for source in sources:
            if isinstance(source, Mapping):
                flags += [f for f in flags_of(source) if f not in flags]
                p_bound = p_bound or bool(source.get("p_bound"))
        cells = [
            estimand,
            "" if group is None else str(group),
            fmt_num(record["estimate"]),
            fmt_ci(record["ci_low"], record["ci_high"]),
            fmt_p(record["p"], bound=p_bound),
            fmt_p(record["p_adj"]),
            fmt_int(record["n"]),
        ]
        if extra:
            cells.append(fmt_int(record.get("n_articles")))
        cells.append("")
        rows.append(Row(cells=cells, flags=flags, title=_definition(definitions, estimand)))
    return rows, max(len(frame) - _MAX_ESTIMATE_ROWS, 0), bool(extra)


def _is_na(value: object) -> bool:
    if isinstance(value, list | tuple) or (hasattr(value, "__len__") and not isinstance(value, str)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _definitions_table(definitions: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, entry in definitions.items():
        if isinstance(entry, Mapping):
            rows.append(
                [
                    str(name),
                    _plain(entry.get("definition") or ""),
                    _plain(entry.get("direction") or ""),
                    _plain(entry.get("sided") or ""),
                    _plain(entry.get("metric") or ""),
                ]
            )
        elif isinstance(entry, str):
            rows.append([str(name), _plain(entry), "", "", ""])
    return rows


def _settings_list(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
    first = ("seed", "replicates", "bootstrap_replicates", "confidence", "config_hash", "rule", "band")
    ordered = [k for k in first if k in settings] + sorted(k for k in settings if k not in first)
    out = []
    for key in ordered:
        if _SECRET.search(str(key)):
            continue
        value = settings[key]
        if isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
            text = "; ".join(_describe(v) for v in value)
        elif isinstance(value, Mapping):
            text = ", ".join(f"{k}: {_fact(v)}" for k, v in value.items() if not _SECRET.search(str(k)))
        else:
            text = _fact(value)
        out.append((str(key), text))
    return out


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("clcg_pipeline.report", "templates"),
        autoescape=True,  # everything from data is escaped; only the prebuilt SVG is Markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _sections(
    results: Mapping[str, Any],
    langs: Mapping[str, Mapping[str, Any]],
    builder: _SectionBuilder,
    missing: list[dict[str, str]] | None,
    metric: str,
) -> list[Section]:
    definitions = builder.definitions
    sections: list[Section] = []
    used: set[str] = set(_NOT_SECTIONS)
    for names, title in KNOWN_SECTIONS:
        for name in names:
            if name not in results or name in used:
                continue
            used.add(name)
            value = results[name]
            caption = _definition(definitions, name)
            if name == "excluded_versions":
                sections.append(_excluded_section(value, missing, langs))
            elif name in ("language_net", "net_by_language") and isinstance(value, Mapping):
                sections.append(
                    _language_section(
                        name,
                        title,
                        value,
                        langs,
                        builder,
                        chart_title="Net CLCG per language (its gap minus the PT gap), with intervals",
                        x_label=f"Net CLCG: (EN \u2212 language) \u2212 (EN \u2212 PT), {metric}",
                        caption=caption
                        or "Each language's gap minus the Portuguese gap: the cost beyond a high-resource "
                        "non-English language.",
                    )
                )
            elif name in ("joshi_class", "by_class", "per_class", "classes") and isinstance(value, Mapping):
                sections.append(_class_section(name, title, value, builder, caption))
            elif name in ("metric_sensitivity", "metrics") and isinstance(value, Mapping):
                sections.append(_metric_section(name, title, value, builder, caption))
            elif name in ("h3", "level_profile") and isinstance(value, Mapping):
                sections.append(_level_section(name, title, value, builder, caption))
            else:
                section = Section(key=name, title=title, caption=caption)
                builder.walk(value, [], section.parts, name, name)
                sections.append(section)
    for name in results:
        if name not in used:
            section = Section(
                key=str(name), title=_words(str(name)), caption=_definition(definitions, str(name))
            )
            builder.walk(results[name], [], section.parts, str(name), str(name))
            sections.append(section)
    for section in sections:
        _truncate(section)
    # The studies cap their own long tables (each table separately), so no table starves another.
    sections += _study_sections(results, langs, builder)
    return sections


def _study_sections(
    results: Mapping[str, Any], langs: Mapping[str, Mapping[str, Any]], builder: _SectionBuilder
) -> list[Section]:
    def block(name: str) -> Mapping[str, Any] | None:
        value = results.get(name)
        if value is None or isinstance(value, Mapping):
            return value
        return {"status": "unreadable", "reason": f"{name} is a {type(value).__name__}, not a mapping"}

    sections = [
        taxonomy_section(block("error_taxonomy"), builder.walk, langs),
        human_section(block("human_validation"), builder.walk),
        granularity_section(block("granularity"), builder.walk),
    ]
    for section in sections:
        section.parts = tidy(section.parts)
    return sections


def _truncate(section: Section) -> None:
    """Keep a pathological section readable; the rest stays in study_results.json."""
    budget = _MAX_SECTION_ROWS
    for part in section.parts:
        if part.kind == "table":
            if len(part.rows) > budget:
                section.truncated += len(part.rows) - budget
                part.rows = part.rows[:budget]
            budget = max(budget - len(part.rows), 0)


def render_report(
    results: Mapping[str, Any],
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
    h1 = results.get("h1")
    h1 = h1 if isinstance(h1, Mapping) else {}
    langs = _languages(results, languages)
    settings = _settings_of(results)
    definitions = results.get("definitions") if isinstance(results.get("definitions"), Mapping) else {}
    ci_label = _ci_label(settings)
    metric = _metric(settings)
    replicates = as_float(settings.get("replicates", settings.get("bootstrap_replicates")))
    builder = _SectionBuilder(
        _Labeller(langs), definitions, ci_label, int(replicates) if replicates is not None else None
    )
    header, missing = _header(results, langs, settings)

    summary = [
        builder.estimate_row(label, estimate_of(h1.get(key)), key=key)
        for key, label in H1_SUMMARY
        if key in h1
    ]
    for row, (key, _) in zip(summary, [kv for kv in H1_SUMMARY if kv[0] in h1], strict=True):
        row.cells.append(_definition(definitions, key))
    summary_columns = [*builder.estimate_columns[:-1], "flags and notes", "what it is"]
    counts = h1.get("n") if isinstance(h1.get("n"), Mapping) else {}
    language_section = None
    if isinstance(h1.get("by_language"), Mapping) and h1["by_language"]:
        language_section = _language_section(
            "by-language",
            "CLCG per target language",
            h1["by_language"],
            langs,
            builder,
            chart_title="CLCG per target language (English minus language), with intervals",
            x_label=f"CLCG: English minus language ({metric})",
            caption=_definition(definitions, "clcg_language")
            or "English score minus the language's score on the same items; higher = larger loss.",
        )
    model_section = _model_section(h1, builder, ci_label)
    sections = _sections(results, langs, builder, missing, metric)
    estimate_rows, estimates_truncated, with_articles = _estimate_rows(estimates, results, definitions)
    estimate_columns = ["estimand", "group", "estimate", ci_label, "p", "p (adjusted)", "n"]
    if with_articles:
        estimate_columns.append("articles")
    estimate_columns.append("flags")
    warnings = _warnings(results)
    human = results.get("human_validation")
    if isinstance(human, Mapping) and human.get("simulated") is True:
        warnings.insert(0, SIMULATED_CAVEAT)
    if missing and not any(all(e["iso"] in w for e in missing) for w in warnings):
        warnings.insert(
            0,
            f"{len(missing)} panel language(s) have no data and no estimate: "
            + ", ".join(
                _lang_name(e["iso"], langs) + (f" ({e['reason']})" if e["reason"] else "") for e in missing
            ),
        )
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        header=header,
        warnings=warnings,
        summary=_pruned(Part("table", columns=summary_columns, rows=summary)),
        ci_label=ci_label,
        counts=[(LABELS.get(str(k), _words(str(k))), fmt_value(v)) for k, v in counts.items()],
        language_section=language_section,
        model_section=model_section,
        sections=sections,
        drilldown=_drilldown(results, langs, metric),
        metric=metric,
        definitions=_definitions_table(definitions),
        estimate_columns=estimate_columns,
        estimate_rows=estimate_rows,
        estimates_truncated=estimates_truncated,
        settings=_settings_list(settings),
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
