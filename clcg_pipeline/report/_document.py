"""Reading the results document: languages, settings, header facts, warnings."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from clcg_pipeline.report._builder import fact_text, is_scalar
from clcg_pipeline.report._format import (
    as_float,
    estimate_of,
    fmt_value,
    mapping_at,
)
from clcg_pipeline.storage import BandView, SettingsModel, StudyResultsDocument

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


def settings_of(results: StudyResultsDocument | Mapping[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    h1 = results.get("h1")
    for source in (h1.get("settings") if isinstance(h1, Mapping) else None, results.get("settings")):
        if isinstance(source, Mapping):
            merged.update(source)
    for key in ("config_hash", "generated_at", "code_version"):
        if key in results and is_scalar(results[key]):
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
    settings = settings_of(results)
    for source in (results.get("languages_without_data"), settings.get("languages_without_data")):
        if source is not None:
            return _iso_list(source)
    langs = langs if langs is not None else languages_of(results, None)
    if not langs:
        return None
    h1 = mapping_at(results, "h1")
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


def header_facts(
    results: Mapping[str, Any],
    langs: Mapping[str, Mapping[str, Any]],
    settings: Mapping[str, Any],
    typed: SettingsModel,
) -> tuple[list[tuple[str, str]], list[dict[str, str]] | None]:
    """The header's facts (corpus, models, languages, band, date, version); ``typed`` is the
    merged settings as typed fields (``StudyResults.merged_settings``), ``settings`` the same as
    records, for the open mappings it lists (the models)."""
    h1 = mapping_at(results, "h1")
    facts: list[tuple[str, str]] = []
    sources = settings.get("sources") or results.get("sources")
    if sources:
        items = sources if isinstance(sources, list | tuple) else [sources]
        facts.append(("corpus", "; ".join(describe(s) for s in items)))
    else:
        facts.append(("corpus", "not recorded"))
    models = settings.get("models")
    if models:
        items = models if isinstance(models, list | tuple) else [models]
        facts.append(("models", "; ".join(describe(m) for m in items)))
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
            ", ".join(lang_name(e["iso"], langs) for e in with_data) if with_data else "not recorded",
        )
    )
    missing = languages_without_data(results, langs)
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


def warnings_of(results: StudyResultsDocument | Mapping[str, Any]) -> list[str]:
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


def metric_of(settings: SettingsModel) -> str:
    band = settings.band
    return band.metric if band is not None and band.metric else "band metric"


def ci_label_of(settings: SettingsModel) -> str:
    confidence = as_float(settings.confidence)
    return f"{confidence * 100:g}% CI" if confidence is not None and 0 < confidence < 1 else "95% CI"


def settings_list(settings: Mapping[str, Any]) -> list[tuple[str, str]]:
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
