"""The ``settings`` and ``languages`` sections of ``study_results.json``: what a run was run on.

Provenance only (seed, band, models, sources, code version); no estimate depends on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from clcg_pipeline.analysis._context import REPLICATE_RULE, SuiteContext
from clcg_pipeline.config import ProjectConfig


def suite_settings(
    ctx: SuiteContext,
    scores: pd.DataFrame,
    band_rows: pd.DataFrame,
    with_data: list[str],
    without_data: list[dict[str, str]],
) -> dict[str, Any]:
    """The run's settings: bootstrap, band and rule, row counts, models, sources and code version."""
    config = ctx.config
    return {
        "seed": ctx.seed,
        "replicates": ctx.replicates,
        "confidence": ctx.confidence,
        "min_articles": ctx.min_articles,
        "band": config.study.band.model_dump(),
        "rule": "A",
        "replicate_rule": REPLICATE_RULE,
        "config_hash": config.config_hash,
        "bootstrap": "article-cluster, percentile interval; each section resamples the articles of its rows",
        "n_rows": len(scores),
        "n_band_rows": len(band_rows),
        "models": [
            {
                "id": m.id,
                "provider": m.provider,
                "model": m.model,
                "knowledge_cutoff": None if m.knowledge_cutoff is None else str(m.knowledge_cutoff),
                **_simulated(m.options),
            }
            for m in config.models.evaluated
        ],
        "sources": [_source(s) for s in config.sources.sources],
        "languages_with_data": with_data,
        "languages_without_data": without_data,
        "code_version": code_version(),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _simulated(options: Mapping[str, object]) -> dict[str, str]:
    """A ``simulated`` note for a model whose answers carry the demo's simulated gap, else nothing.

    The offline reader's ``simulated_drop_<iso>`` options (calls/_lexical.py) invent a
    per-language gap; every document that names the model says so next to its name.
    """
    rates = {
        k.removeprefix("simulated_drop_"): v for k, v in options.items() if k.startswith("simulated_drop_")
    }
    if not rates:
        return {}
    listed = ", ".join(f"{iso} {rate}" for iso, rate in sorted(rates.items()))
    return {
        "simulated": f"SIMULATED per-language gap on the demo corpus (drop rates {listed}): the offline "
        "reader drops words at these rates, so its gap describes no real model"
    }


def panel_languages(config: ProjectConfig) -> list[dict[str, Any]]:
    """Every configured language with what the estimators group it by."""
    return [
        {
            "iso": lang.iso,
            "name": lang.name,
            "script": lang.script,
            "joshi_class": lang.joshi_class,
            "joshi_class_sensitivity": lang.joshi_class_sensitivity,
            "role": lang.role,
            "non_latin": lang.non_latin,
            "isolate": lang.isolate,
        }
        for lang in config.languages.languages
    ]


def language_coverage(config: ProjectConfig, scores: pd.DataFrame) -> tuple[list[str], list[dict[str, str]]]:
    """Panel languages with scored rows, and the others with the reason."""
    have = {str(v) for v in scores["language"].unique()} if len(scores) else set()
    with_data = [lang.iso for lang in config.languages.languages if lang.iso in have]
    without = [
        {"iso": lang.iso, "name": lang.name, "role": lang.role, "reason": "no scored rows"}
        for lang in config.languages.languages
        if lang.iso not in have
    ]
    return with_data, without


def _source(spec: Any) -> dict[str, Any]:
    """A corpus source for the settings; credentials in a URL never leave the config."""
    path = spec.path
    if path and "@" in path and "://" in path:
        scheme, rest = path.split("://", 1)
        path = f"{scheme}://{rest.split('@', 1)[1]}"
    return {"name": spec.name, "kind": spec.kind, "role": spec.role, "path": path, "split": spec.split}


def code_version() -> dict[str, str | None]:
    """Package version and, when the code runs from a git checkout, its commit (never fails)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        package = version("clcg-pipeline")
    except PackageNotFoundError:
        package = None
    return {"package": package, "git_commit": _git_commit()}


def _git_commit() -> str | None:
    """HEAD of the checkout this package lives in, read from .git without running git."""
    from pathlib import Path

    try:
        root = Path(__file__).resolve().parents[2] / ".git"
        if not root.is_dir():
            return None
        head = (root / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[5:]
        loose = root / ref
        if loose.is_file():
            return loose.read_text().strip() or None
        packed = root / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line.endswith(" " + ref):
                    return line.split(" ", 1)[0]
    except OSError:
        return None
    return None
