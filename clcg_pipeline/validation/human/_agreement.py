"""Agreement statistics of the human-validation study: Krippendorff's alpha and Cohen's kappa.

The point estimates come from maintained implementations: the ``krippendorff`` package for
alpha and ``statsmodels.stats.inter_rater.cohens_kappa`` for kappa. Their bootstrap
intervals are computed here, because calling either package 2,000 times per dimension is
needlessly slow: both statistics are functions of per-unit sufficient statistics (alpha of
the coincidence matrix, kappa of the contingency table), so a replicate is a vector of unit
multiplicities and every replicate follows from one matrix product, as in
``analysis/_bootstrap.py``. Tests check the vectorized form against the packages on the full
sample and against an independent implementation (NLTK) and a textbook example.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import krippendorff
import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import cohens_kappa

from clcg_pipeline.analysis import draw_multiplicities, percentile_ci, withheld_reason, withhold_fields
from clcg_pipeline.storage import finite

Level = Literal["nominal", "ordinal", "interval"]


#: Stands for "a value was computed" when the rule is asked about a block: a block without one
#: already says why in its own ``status`` (no items with two ratings, a single value observed).
_COMPUTED = 0.0


def withhold(out: dict[str, Any], clusters: int, min_clusters: int, what: str) -> dict[str, Any]:
    """The project's identifiability rule applied to a bootstrap over ``what`` (items, annotators).

    The rule is the suite's (``analysis.withheld_reason``): below ``min_clusters``
    (``study.min_articles``) resampled units the percentile interval is degenerate, so it is
    withheld (with every other interval and p field) and the reason says so; the point estimate
    stays. The units resampled here are ``what``, not articles: the rule's words name them (``unit``).
    """
    reason = withheld_reason(_COMPUTED, clusters, min_clusters, unit=what)
    if reason is not None:
        out["ci_low"] = out["ci_high"] = None
        withhold_fields(out)
        out["identifiable"] = False
        out["reason"] = reason
    else:
        out.setdefault("identifiable", True)
        out.setdefault("reason", None)
    return out


# ---------------------------------------------------------------------------------------------
# Krippendorff's alpha


def value_counts(
    frame: pd.DataFrame,
    *,
    unit: str,
    value: str,
    coder: str,
    domain: Sequence[Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(units, domain, counts)``: per unit, how many coders gave each value of ``domain``.

    Only non-missing values count, and only units with at least two of them are kept (alpha
    is defined on pairable values). ``domain`` orders the values (required for an ordinal
    string scale); by default the sorted distinct values. A coder rating a unit twice, or a
    value outside ``domain``, is an error naming the unit.
    """
    rows = frame.loc[frame[value].notna(), [unit, coder, value]]
    dup = rows.duplicated([unit, coder])
    if dup.any():
        first = rows[dup].iloc[0]
        raise ValueError(
            f"alpha of {value!r}: coder {first[coder]!r} rated unit {first[unit]!r} more than once "
            "(deduplicate before computing agreement)"
        )
    if domain is None:
        domain_arr = np.array(sorted(rows[value].unique().tolist()), dtype=object)
    else:
        domain_arr = np.asarray(list(domain), dtype=object)
    index = {v: i for i, v in enumerate(domain_arr.tolist())}
    codes = rows[value].map(index)
    if codes.isna().any():
        bad = rows[codes.isna()].iloc[0]
        raise ValueError(
            f"alpha of {value!r}: value {bad[value]!r} (unit {bad[unit]!r}) is outside the domain "
            f"{domain_arr.tolist()}"
        )
    unit_codes, units = pd.factorize(rows[unit], sort=True)
    counts = np.zeros((len(units), len(domain_arr)), dtype=np.float64)
    np.add.at(counts, (unit_codes, codes.to_numpy(dtype=np.int64)), 1.0)
    keep = counts.sum(axis=1) >= 2
    return np.asarray(units, dtype=object)[keep], domain_arr, counts[keep]


def _unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-unit coincidence matrices, flattened to ``units x V*V`` (Krippendorff 2011, eq. 2)."""
    m = counts.sum(axis=1)
    outer = counts[:, :, None] * counts[:, None, :]
    outer -= counts[:, :, None] * np.eye(counts.shape[1])[None, :, :]
    return (outer / (m - 1)[:, None, None]).reshape(len(counts), -1)


def _alpha_from_coincidences(o: np.ndarray, domain: np.ndarray, level: Level) -> np.ndarray:
    """Alpha for each row of ``o`` (``R x V x V`` coincidence matrices); NaN where undefined."""
    n_v = o.sum(axis=2)
    n = n_v.sum(axis=1)
    v = o.shape[1]
    if level == "nominal":
        delta = np.broadcast_to(1.0 - np.eye(v), o.shape)
    elif level == "interval":
        vals = domain.astype(np.float64)
        delta = np.broadcast_to((vals[:, None] - vals[None, :]) ** 2, o.shape)
    elif level == "ordinal":
        # delta_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2, from each replicate's own marginals.
        cum = np.concatenate([np.zeros((len(o), 1)), np.cumsum(n_v, axis=1)], axis=1)
        lo = np.minimum.outer(np.arange(v), np.arange(v))
        hi = np.maximum.outer(np.arange(v), np.arange(v))
        between = cum[:, hi + 1] - cum[:, lo]
        delta = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2.0) ** 2
    else:
        raise ValueError(f"unknown level of measurement {level!r}")
    expected = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(v)[None]) / (n - 1)[
        :, None, None
    ]
    d_o = (o * delta).sum(axis=(1, 2))
    d_e = (expected * delta).sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d_e > 0, 1.0 - d_o / np.where(d_e > 0, d_e, 1.0), np.nan)


def alpha_replicates(counts: np.ndarray, domain: np.ndarray, level: Level, weights: np.ndarray) -> np.ndarray:
    """Alpha on the full sample (row 0) and on each replicate of unit multiplicities ``weights``."""
    flat = _unit_coincidences(counts)
    v = counts.shape[1]
    stack = (
        np.vstack([flat.sum(axis=0, keepdims=True), weights @ flat]) if len(weights) else flat.sum(0)[None]
    )
    return _alpha_from_coincidences(stack.reshape(-1, v, v), domain, level)


def _undefined(out: dict[str, Any], why: str) -> dict[str, Any]:
    """``out`` for a statistic that cannot be computed: ``why`` is its status and its reason, so
    the report states the reason once with the section's other reasons (issue 34)."""
    return {**out, "status": why, "identifiable": False, "reason": why}


def krippendorff_alpha(
    frame: pd.DataFrame,
    *,
    value: str,
    level: Level,
    unit: str = "task_id",
    coder: str = "annotator_id",
    domain: Sequence[Any] | None = None,
    replicates: int = 2000,
    seed: int = 42,
    confidence: float = 0.95,
    min_units: int = 10,
) -> dict[str, Any]:
    """Krippendorff's alpha of one rubric field with an item (unit) bootstrap interval.

    ``alpha`` is the ``krippendorff`` package's value; the interval resamples units with
    replacement (percentile). ``status`` is ``ok`` or says why there is no alpha (fewer than
    one unit with two ratings, or a single value observed: alpha is then undefined).
    """
    units, dom, counts = value_counts(frame, unit=unit, value=value, coder=coder, domain=domain)
    out: dict[str, Any] = {
        "dimension": value,
        "level": level,
        "alpha": None,
        "ci_low": None,
        "ci_high": None,
        "items": len(units),
        "ratings": int(counts.sum()),
    }
    observed = counts.sum(axis=0) > 0
    if len(units) == 0:
        return _undefined(out, "no items with two valid ratings")
    if observed.sum() < 2:
        return _undefined(out, "undefined: a single value observed")
    # Only observed values enter (an unobserved value changes nothing but would need a
    # numeric domain the package accepts); the ordinal order is kept.
    counts, dom = counts[:, observed], dom[observed]
    level_arg = level
    point = float(
        krippendorff.alpha(
            value_counts=counts,
            value_domain=dom.astype(np.float64) if level == "interval" else np.arange(len(dom)),
            level_of_measurement=level_arg,
        )
    )
    weights = draw_multiplicities(len(units), replicates, seed)
    vec = alpha_replicates(counts, dom, level, weights)
    low, high = percentile_ci(vec[1:], confidence)
    out.update(
        alpha=finite(point),
        ci_low=finite(low),
        ci_high=finite(high),
        valid_replicates=int(np.isfinite(vec[1:]).sum()),
        status="ok",
    )
    return withhold(out, len(units), min_units, "items")


# ---------------------------------------------------------------------------------------------
# Cohen's kappa (human vs judge)


def _kappa_rows(tables: np.ndarray) -> np.ndarray:
    """Unweighted kappa of each ``K x K`` table in ``tables`` (``R x K x K``); NaN if undefined."""
    n = tables.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(tables, axis1=1, axis2=2) / n
        pe = (tables.sum(axis=2) * tables.sum(axis=1)).sum(axis=1) / n**2
        return np.where((n > 0) & (pe < 1), (po - pe) / (1 - pe), np.nan)


def cohen_kappa(
    first: Sequence[Any],
    second: Sequence[Any],
    *,
    clusters: Sequence[Any] | None = None,
    replicates: int = 2000,
    seed: int = 42,
    confidence: float = 0.95,
    min_clusters: int = 10,
) -> dict[str, Any]:
    """Percent agreement and Cohen's kappa of two label sequences, with a cluster bootstrap.

    ``kappa`` comes from statsmodels; ``clusters`` (default: each pair its own) are resampled
    for the interval (the human-vs-judge rows are annotator x item rows clustered by item).
    """
    a = pd.Series(list(first), dtype=object).astype(str)
    b = pd.Series(list(second), dtype=object).astype(str)
    if len(a) != len(b):
        raise ValueError(f"cohen_kappa: {len(a)} labels against {len(b)}")
    out: dict[str, Any] = {"percent": None, "kappa": None, "ci_low": None, "ci_high": None, "n": len(a)}
    if len(a) == 0:
        return _undefined(out, "no overlap rows")
    cats = sorted(set(a) | set(b))
    index = {c: i for i, c in enumerate(cats)}
    ia, ib = a.map(index).to_numpy(), b.map(index).to_numpy()
    k = len(cats)
    table = np.zeros((k, k))
    np.add.at(table, (ia, ib), 1.0)
    percent = float(np.trace(table) / table.sum())
    # The point estimate only: ``return_results=True`` adds an asymptotic variance and z value we
    # never use, which are 0/0 on a table with an empty row or column (numpy RuntimeWarnings on
    # every run). One category on both sides (k == 1, the only table with pe == 1) is undefined.
    kappa = float(cohens_kappa(table, return_results=False)) if k > 1 else float("nan")
    cl = np.arange(len(a)) if clusters is None else pd.factorize(pd.Series(list(clusters)), sort=True)[0]
    n_cl = int(cl.max()) + 1
    per = np.zeros((n_cl, k * k))
    np.add.at(per, (cl, ia * k + ib), 1.0)
    weights = draw_multiplicities(n_cl, replicates, seed)
    vec = _kappa_rows((weights @ per).reshape(-1, k, k)) if replicates else np.array([])
    low, high = percentile_ci(vec, confidence)
    out.update(
        percent=percent,
        kappa=finite(kappa),
        ci_low=finite(low),
        ci_high=finite(high),
        clusters=n_cl,
        status="ok" if np.isfinite(kappa) else "undefined: a single category on both sides",
    )
    return withhold(out, n_cl, min_clusters, "items")
