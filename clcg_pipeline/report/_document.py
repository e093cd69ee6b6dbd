"""Reading the results document: languages, settings, header facts, warnings."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from clcg_pipeline.report._builder import fact_text, is_scalar
from clcg_pipeline.report._format import (
    as_float,
    fmt_value,
)
from clcg_pipeline.storage import (
    BandView,
    CodeVersion,
    LanguageWithoutData,
    SettingsModel,
    StudyResults,
    StudyResultsDocument,
)

_SECRET = re.compile(r"(api[_-]?key|secret|token|password|credential)", re.IGNORECASE)


def languages_of(
    results: Mapping[str, Any], fallback: Sequence[Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    listed = results.get("languages")
    for entry in [*(fallback or []), *(listed if isinstance(listed, list) else [])]:
        if isinstance(entry, Mapping) and entry.get("iso") is not None:
            found[str(entry["iso"])] = dict(entry)
    return found


def joshi_of(value: object) -> int | None:
    number = as_float(value)
    return None if number is None else int(number)


def band_text(band: BandView) -> str:
    """The analysis band in words (metric, levels, item source, context), for the header and the CLI."""
    parts = [f"metric {band.metric if band.metric is not None else 'token_f1'}"]
    if band.levels:
        parts.append("levels " + ", ".join(str(v) for v in band.levels))
    if band.item_source:
        parts.append(f"{band.item_source} items")
    if band.context_scope:
        parts.append(f"context {band.context_scope}")
    return "; ".join(parts)


def _iso_list(entries: Sequence[LanguageWithoutData | str] | None) -> list[dict[str, str]]:
    """``["eu", ...]`` or ``[{"iso": "eu", "reason": ...}, ...]`` (typed) as ``[{iso, reason}]``."""
    out = []
    for entry in entries or []:
        if isinstance(entry, str):
            out.append({"iso": entry, "reason": ""})
        elif entry.iso is not None:
            out.append({"iso": entry.iso, "reason": entry.reason or ""})
    return out


def _scored(view: StudyResults) -> list[str]:
    """The languages of ``h1.by_language`` with an estimate."""
    by_language = (view.h1.by_language if view.h1 is not None else None) or {}
    return [iso for iso, block in by_language.items() if block.estimate is not None]


def languages_without_data(
    view: StudyResults, langs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, str]] | None:
    """Panel languages with no scored data: as recorded, else derived; None when unknowable.

    Recorded at the top of the document or in its (merged) settings; derived (older documents)
    = target languages of the panel with no H1 per-language estimate.
    """
    for source in (view.languages_without_data, view.merged_settings().languages_without_data):
        if source is not None:
            return _iso_list(source)
    if not langs:
        return None
    scored = set(_scored(view))
    return [
        {"iso": iso, "reason": "no scored rows"}
        for iso, meta in langs.items()
        if meta.get("role", "target") == "target" and iso not in scored
    ]


def lang_name(iso: str, langs: Mapping[str, Mapping[str, Any]]) -> str:
    name = langs.get(iso, {}).get("name")
    return f"{name} ({iso})" if name else iso


def describe(entry: object) -> str:
    """A model or source entry as one line, never showing a secret-looking field."""
    if not isinstance(entry, Mapping):
        return fmt_value(entry)
    name = next((str(entry[k]) for k in ("id", "name", "source", "kind") if entry.get(k)), "")
    details = []
    for k, v in entry.items():
        if not is_scalar(v) or _SECRET.search(str(k)) or str(v) == name:
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


def _models_fact(view: StudyResults, typed: SettingsModel) -> str:
    """The models as recorded in the settings, else the models H1 has estimates for."""
    if typed.models:
        return "; ".join(describe(m.record()) for m in typed.models)
    by_model = view.h1.by_model if view.h1 is not None else None
    return ", ".join(by_model) if by_model else "not recorded"


def header_facts(
    view: StudyResults, langs: Mapping[str, Mapping[str, Any]], typed: SettingsModel
) -> tuple[list[tuple[str, str]], list[dict[str, str]] | None]:
    """The header's facts (corpus, models, languages, band, date, version), from typed fields:
    ``view`` is the document, ``typed`` its merged settings (``StudyResults.merged_settings``)."""
    facts: list[tuple[str, str]] = []
    sources = "; ".join(describe(s) for s in typed.sources or [])
    facts.append(("corpus", sources or "not recorded"))
    facts.append(("models", _models_fact(view, typed)))
    with_data = typed.languages_with_data or view.languages_with_data
    if not with_data and view.h1 is not None and view.h1.by_language is not None:
        anchors = [iso for iso, meta in langs.items() if meta.get("role") in ("reference", "baseline")]
        with_data = [*anchors, *_scored(view)]
    facts.append(
        (
            "languages analysed",
            ", ".join(lang_name(iso, langs) for iso in with_data) if with_data else "not recorded",
        )
    )
    missing = languages_without_data(view, langs)
    if missing is None:
        facts.append(("languages without data", "not recorded"))
    elif missing:
        facts.append(
            (
                "languages without data",
                ", ".join(lang_name(e["iso"], langs) for e in missing)
                + f" ({len(missing)} panel language{'s' if len(missing) != 1 else ''}: no estimate for them)",
            )
        )
    else:
        facts.append(("languages without data", "none: every panel language has data"))
    if typed.band is not None:
        facts.append(("analysis band", band_text(typed.band)))
    facts.append(("generated", str(typed.generated_at or "not recorded")))
    facts.append(("code version", _version(typed.code_version)))
    if typed.config_hash:
        facts.append(("config hash", typed.config_hash[:16]))
    return facts, missing


def _version(value: CodeVersion | str | None) -> str:
    """``settings.code_version``, typed: ``"0.1.0"`` (older documents) or its package and commit
    (``CodeVersion``) as one line."""
    if isinstance(value, CodeVersion):
        commit = f"git {value.git_commit[:12]}" if value.git_commit else ""
        return " ".join(part for part in (value.package or "", commit) if part) or "not recorded"
    return value or "not recorded"


def warnings_of(results: StudyResultsDocument | Mapping[str, Any]) -> list[str]:
    """The document's ``warnings``, a list of strings (``StudyResultsDocument.warnings``)."""
    raw = results.get("warnings") or []
    return [raw] if isinstance(raw, str) else [str(item) for item in raw]


def metric_of(settings: SettingsModel) -> str:
    band = settings.band
    return band.metric if band is not None and band.metric else "band metric"


def ci_label_of(settings: SettingsModel) -> str:
    confidence = as_float(settings.confidence)
    return f"{confidence * 100:g}% CI" if confidence is not None and 0 < confidence < 1 else "95% CI"


def settings_list(typed: SettingsModel) -> list[tuple[str, str]]:
    """Every recorded setting as (key, text), never a secret-looking one (the appendix)."""
    settings = typed.model_dump(exclude_unset=True)
    first = ("seed", "replicates", "bootstrap_replicates", "confidence", "config_hash", "rule", "band")
    ordered = [k for k in first if k in settings] + sorted(k for k in settings if k not in first)
    out = []
    for key in ordered:
        if _SECRET.search(str(key)):
            continue
        value = settings[key]
        if isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
            text = "; ".join(describe(v) for v in value)
        elif isinstance(value, Mapping):
            text = ", ".join(f"{k}: {fact_text(v)}" for k, v in value.items() if not _SECRET.search(str(k)))
        else:
            text = fact_text(value)
        out.append((str(key), text))
    return out
