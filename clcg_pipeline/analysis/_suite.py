"""The whole estimator suite of STUDY.md section 6: ``study_results.json`` and ``estimates``.

Every bootstrapped section resamples the articles of its own rows with the study seed; when
two sections use the same article set (the usual case) their draws are identical, so
cross-section identities also hold replicate by replicate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import REPLICATE_RULE, SuiteContext, num, usable
from clcg_pipeline.analysis._definitions import DEFINITIONS, definition_of, definitions_for
from clcg_pipeline.analysis._h1 import h1_core, roles_of
from clcg_pipeline.analysis._prepare import apply_rule, score_values, select_rows
from clcg_pipeline.analysis.sections import context as sec_context
from clcg_pipeline.analysis.sections import h1 as sec_h1
from clcg_pipeline.analysis.sections import h2 as sec_h2
from clcg_pipeline.analysis.sections import h3 as sec_h3
from clcg_pipeline.analysis.sections import h4 as sec_h4
from clcg_pipeline.analysis.sections import mixed as sec_mixed
from clcg_pipeline.analysis.sections import multiplicity as sec_multiplicity
from clcg_pipeline.analysis.sections import nomological as sec_nomological
from clcg_pipeline.analysis.sections import repetitions as sec_repetitions
from clcg_pipeline.analysis.sections import replication as sec_replication
from clcg_pipeline.analysis.sections import sensitivity as sec_sensitivity
from clcg_pipeline.config import ProjectConfig

# The ``estimates`` contract's columns (storage/_tables.py; a test keeps them equal). Not
# imported from there because ``clcg_pipeline.storage`` imports dagster, and ``clcg estimate``
# must start fast.
ESTIMATE_COLUMNS = [
    "estimand",
    "group",
    "estimate",
    "ci_low",
    "ci_high",
    "p",
    "p_adj",
    "n",
    "n_articles",
    "valid_replicates",
    "p_bound",
    "identifiable",
    "status",
    "flags",
]


@dataclass
class StudyResults:
    """``results``: the JSON document; ``estimates``: the long table; ``timings``: seconds per part."""

    results: dict[str, Any]
    estimates: pd.DataFrame
    timings: dict[str, float] = field(default_factory=dict)


def run_suite(
    scores: pd.DataFrame,
    config: ProjectConfig,
    *,
    articles: pd.DataFrame | None = None,
    fertility: pd.DataFrame | None = None,
    replication_scores: pd.DataFrame | None = None,
    replicates: int | None = None,
    seed: int | None = None,
) -> StudyResults:
    """Run every estimator and test of STUDY.md section 6 on a ``scores`` frame."""
    study = config.study
    ctx = SuiteContext(
        config=config,
        roles=roles_of(config.languages),
        replicates=int(replicates if replicates is not None else study.bootstrap_replicates),
        seed=int(seed if seed is not None else study.seed),
        confidence=study.confidence,
        min_articles=int(getattr(study, "min_articles", 10)),
    )
    timings: dict[str, float] = {}

    @contextmanager
    def timed(name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - start

    band = study.band
    with timed("prepare"):
        scores = usable(scores, band.metric)
        panel_langs = [ctx.roles.reference, ctx.roles.baseline, *ctx.roles.targets]
        scores = _canonical_order(scores.loc[scores["language"].isin(panel_langs).to_numpy()], band.metric)
        rows_a = apply_rule(scores, score_values(scores, band.metric), "A")
        band_sel = {
            "levels": band.levels,
            "item_source": band.item_source,
            "context_scope": band.context_scope,
        }
        band_a = select_rows(rows_a, **band_sel)
        band_raw = select_rows(scores, **band_sel)  # before a parse rule: rule B, other metrics

    results: dict[str, Any] = {}
    with timed("h1"):
        core = h1_core(scores, config.languages, study, replicates=ctx.replicates, seed=ctx.seed, rows=band_a)
        results["h1"] = core.result
        p_h1 = sec_h1.h1_estimates(ctx, core)
        results["language_net"] = sec_h1.language_net(ctx, core)
    with timed("joshi_class"):
        results["joshi_class"] = sec_h1.joshi_classes(ctx, core)
    with timed("h3"):
        results["h3"] = sec_h3.h3(
            ctx, select_rows(rows_a, item_source=band.item_source, context_scope=band.context_scope)
        )
    with timed("h2"):
        h2, h2_rows = sec_h2.h2(ctx, band_a, articles)
        results["h2"] = h2
    with timed("h4"):
        human = select_rows(rows_a, item_source="human", context_scope=band.context_scope)
        results["h4"] = sec_h4.h4(ctx, band_a, human)
    with timed("parse_rule"):
        band_b = apply_rule(band_raw, score_values(band_raw, band.metric), "B")
        results["parse_rule"] = sec_h1.parse_rule(ctx, core, band_b)
    with timed("equivalence"):
        results["equivalence"] = sec_h1.equivalence(ctx, core, band_a)
    with timed("mixed_effects"):
        results["mixed_effects"] = sec_mixed.mixed(ctx, band_a, h2_rows)
    with timed("multiplicity"):
        results["multiplicity"] = sec_multiplicity.multiplicity(ctx, results, p_h1)
    with timed("repetitions"):
        results["repetitions"] = sec_repetitions.repetitions(ctx, band_a)
    with timed("context_gain"):
        results["context_gain"] = sec_context.context_gain(ctx, scores, band.metric)
    with timed("nomological"):
        results["nomological"] = sec_nomological.nomological(ctx, core.result, fertility)
    with timed("context_scope"):
        scope_rows = select_rows(rows_a, levels=band.levels, item_source=band.item_source)
        results["context_scope"] = sec_context.context_scope(ctx, scope_rows, band.context_scope)
    with timed("replication"):
        results["replication"] = sec_replication.replication(ctx, core.result, replication_scores)
    with timed("metric_sensitivity"):
        results["metric_sensitivity"] = sec_sensitivity.metric_sensitivity(ctx, band_raw, band.metric, core)

    with_data, without_data = _language_coverage(config, scores)
    results["settings"] = {
        "seed": ctx.seed,
        "replicates": ctx.replicates,
        "confidence": ctx.confidence,
        "min_articles": ctx.min_articles,
        "band": band.model_dump(),
        "rule": "A",
        "replicate_rule": REPLICATE_RULE,
        "config_hash": config.config_hash,
        "bootstrap": "article-cluster, percentile interval; each section resamples the articles of its rows",
        "n_rows": len(scores),
        "n_band_rows": len(band_a),
        "models": [
            {
                "id": m.id,
                "provider": m.provider,
                "model": m.model,
                "knowledge_cutoff": None if m.knowledge_cutoff is None else str(m.knowledge_cutoff),
            }
            for m in config.models.evaluated
        ],
        "sources": [_source(s) for s in config.sources.sources],
        "languages_with_data": with_data,
        "languages_without_data": without_data,
        "code_version": code_version(),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    results["languages"] = [
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
    results["languages_without_data"] = without_data
    results["excluded_versions"] = []
    if len(band_a) == 0:
        reason = (
            "no scored rows at all (nothing was scored: e.g. a source with no item bank)"
            if len(scores) == 0
            else "no scored rows in the study band (item_source="
            f"{band.item_source}, levels={list(band.levels)}, context_scope={band.context_scope}); "
            f"the scored rows are {_scored_kinds(scores)}: set study.band to match them"
        )
        results["h1"].update(
            {"identifiable": False, "reason": reason, "status": f"not identifiable: {reason}"}
        )
    results["warnings"] = _warnings(results)
    if len(band_a) == 0:
        results["warnings"].insert(0, f"H1 not identifiable: {results['h1']['reason']}")
    if without_data:
        names = ", ".join(e["iso"] for e in without_data)
        results["warnings"].append(f"{len(without_data)} panel language(s) without scored rows: {names}")
    results["warnings"].extend(ctx.warnings)
    estimates = pd.DataFrame(ctx.rows, columns=ESTIMATE_COLUMNS)
    sec_multiplicity.fill_p_adj(estimates, results["multiplicity"])
    estimates = _typed(estimates)
    results["warnings"].extend(_estimate_warnings(estimates))
    results["definitions"] = definitions_for(list(estimates["estimand"]), band.metric)
    # Flat index of every estimand (same content as the estimates table) so two runs can be
    # compared key by key.
    results["estimands"] = {
        f"{r.estimand}/{r.group}": {
            "estimate": num(r.estimate),
            "ci_low": num(r.ci_low),
            "ci_high": num(r.ci_high),
            "p": num(r.p),
            "p_adj": num(r.p_adj),
            "p_bound": bool(r.p_bound) if not pd.isna(r.p_bound) else False,
            "n": None if pd.isna(r.n) else int(r.n),
            "n_articles": None if pd.isna(r.n_articles) else int(r.n_articles),
            "identifiable": bool(r.identifiable) if not pd.isna(r.identifiable) else True,
            "reason": None if pd.isna(r.identifiable) or bool(r.identifiable) else _reason(str(r.status)),
            "valid_replicates": None if pd.isna(r.valid_replicates) else int(r.valid_replicates),
            "status": r.status,
            "flags": [] if r.flags is None or pd.isna(r.flags) else str(r.flags).split("; "),
            "metric": definition_of(r.estimand, r.group, band.metric)["metric"],
            "sided": DEFINITIONS[r.estimand]["sided"],
        }
        for r in estimates.itertuples(index=False)
    }
    results = {"settings": results.pop("settings"), **results}
    return StudyResults(results=results, estimates=estimates, timings=timings)


def _reason(status: str) -> str:
    return status.split(": ", 1)[1] if status.startswith("not identifiable: ") else status


def _scored_kinds(scores: pd.DataFrame) -> str:
    """What the scored rows are, e.g. ``item_source belebele at level MC (full_body)``."""
    columns = [c for c in ("item_source", "level", "context_scope") if c in scores]
    kinds = scores[columns].astype(str).drop_duplicates().sort_values(columns).head(6)
    return ", ".join(
        f"item_source {row.get('item_source')} at level {row.get('level')} ({row.get('context_scope')})"
        for row in kinds.to_dict("records")
    )


def _estimate_warnings(estimates: pd.DataFrame) -> list[str]:
    """One line per kind of caveat found in the estimates table."""
    out: list[str] = []
    few = estimates.loc[estimates["status"].str.startswith("not identifiable: too few articles", na=False)]
    if len(few):
        out.append(
            f"{len(few)} estimand(s) not identifiable with too few articles (below study.min_articles): "
            "their intervals and p values are withheld"
        )
    flagged = estimates.loc[estimates["flags"].str.contains("outside its own", na=False)]
    for r in flagged.itertuples(index=False):
        out.append(f"{r.estimand}/{r.group}: estimate outside its own percentile interval")
    bound = estimates.loc[estimates["p_bound"].fillna(False).astype(bool)]
    if len(bound):
        out.append(
            f"{len(bound)} p value(s) are the smallest the bootstrap can give (p <= 1/(B+1)); "
            "they are bounds, not exact values"
        )
    return out


def _language_coverage(config: ProjectConfig, scores: pd.DataFrame) -> tuple[list[str], list[dict[str, str]]]:
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


def _warnings(results: dict[str, Any]) -> list[str]:
    """Plain-language notes on estimands that are missing, not identifiable or not converged."""
    out: list[str] = []
    for name, section in results.items():
        if isinstance(section, dict) and str(section.get("status", "")).startswith("not"):
            out.append(f"{name}: {section['status']}")
    for model, entry in results.get("h2", {}).get("by_model", {}).items():
        if entry.get("status") == "not identifiable":
            out.append(f"h2 {model}: not identifiable ({entry.get('reason', 'one memorability group')})")
    for metric, entry in results.get("metric_sensitivity", {}).get("metrics", {}).items():
        if not entry.get("computed"):
            out.append(f"metric sensitivity {metric}: not computed ({entry['reason']})")
    for name, fit in results.get("mixed_effects", {}).items():
        if isinstance(fit, dict) and not fit.get("converged", True):
            out.append(f"mixed model {name}: {fit.get('status', 'not converged')}; it gives no support")
    if results.get("multiplicity", {}).get("not_available"):
        missing = ", ".join(results["multiplicity"]["not_available"])
        out.append(f"BH family: not available and left out: {missing}")
    return out


def _canonical_order(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Rows sorted by their key and score, so every float sum is independent of input row order.

    The integer keys are folded into one mixed-radix int64 (most significant first), which
    sorts exactly like the lexicographic sort of the separate keys at a fraction of its cost.
    """
    if scores.empty:
        return scores
    from clcg_pipeline.analysis._bootstrap import sorted_factorize

    keys = [
        sorted_factorize(scores[c])[0] for c in ("model", "language", "doc_id", "item_id", "context_scope")
    ]
    keys.append(sorted_factorize(scores["status"])[0])
    reps, rep_codes = np.unique(scores["rep"].to_numpy(), return_inverse=True)
    keys.append(rep_codes.astype(np.int64))
    sizes = [int(k.max()) + 1 for k in keys[:-1]] + [len(reps)]
    values = scores[metric].to_numpy(dtype=np.float64, na_value=np.nan)
    if math.prod(sizes) < 2**62:
        combined = np.zeros(len(scores), dtype=np.int64)
        for k, size in zip(keys, sizes, strict=True):
            combined = combined * size + k
        order = np.lexsort((values, combined))
    else:  # too many distinct keys to fold into one integer
        order = np.lexsort([values, *keys[::-1]])
    return scores.iloc[order].reset_index(drop=True)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in ("estimate", "ci_low", "ci_high", "p", "p_adj"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("float64")
    for col in ("n", "n_articles", "valid_replicates"):
        out[col] = pd.array(out[col], dtype="Int64")
    for col in ("p_bound", "identifiable"):
        out[col] = pd.array(out[col], dtype="boolean")
    for col in ("status", "flags"):
        out[col] = out[col].astype(object).where(out[col].notna(), None)
    out["estimand"] = out["estimand"].astype(str)
    out["group"] = out["group"].astype(str)
    return out
