"""Statistical tests around the estimators: BH, TOST, rank correlations, Kendall's W, OLS.

scipy and statsmodels are imported inside the functions so that ``clcg estimate`` (H1
only) does not pay their import time.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def benjamini_hochberg(tests: dict[str, float | None], alpha: float = 0.05) -> dict[str, Any]:
    """BH over the tests whose p is known (statsmodels ``multipletests``, ``fdr_bh``)."""
    from statsmodels.stats.multitest import multipletests

    names = [k for k, p in tests.items() if p is not None and np.isfinite(p)]
    rows: list[dict[str, Any]] = []
    if names:
        reject, p_adj, _, _ = multipletests([tests[k] for k in names], alpha=alpha, method="fdr_bh")
        adj = dict(zip(names, p_adj, strict=True))
        rej = dict(zip(names, reject, strict=True))
    else:
        adj, rej = {}, {}
    for name, p in tests.items():
        known = name in adj
        rows.append(
            {
                "test": name,
                "p": p if known else None,
                "p_adj": float(adj[name]) if known else None,
                "reject": bool(rej[name]) if known else None,
            }
        )
    return {
        "method": "fdr_bh",
        "alpha": alpha,
        "m": len(names),
        "planned": len(tests),
        "not_available": [k for k in tests if k not in adj],
        "tests": rows,
    }


def bootstrap_tost(reps: np.ndarray, bounds: tuple[float, float], confidence: float = 0.95) -> dict[str, Any]:
    """TOST on a bootstrap distribution: both one-sided tests against the bounds.

    ``p = max(p_low, p_high)``; equivalence is shown when ``p < 1 - confidence`` (equivalently
    the ``1 - 2 alpha`` percentile interval lies inside the bounds).
    """
    finite = reps[np.isfinite(reps)]
    low, high = bounds
    if finite.size == 0:
        return {"bounds": [low, high], "p_lower": None, "p_upper": None, "p": None, "equivalent": None}
    b = finite.size
    p_lower = (1 + np.count_nonzero(finite <= low)) / (b + 1)
    p_upper = (1 + np.count_nonzero(finite >= high)) / (b + 1)
    alpha = 1 - confidence
    ci = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)])
    p = float(max(p_lower, p_upper))
    return {
        "bounds": [low, high],
        "p_lower": float(p_lower),
        "p_upper": float(p_upper),
        "p": p,
        "ci_90": [float(ci[0]), float(ci[1])],
        "equivalent": bool(p < alpha),
    }


def paired_tost(x: np.ndarray, y: np.ndarray, bounds: tuple[float, float]) -> dict[str, Any]:
    """statsmodels paired TOST of ``x - y`` (per-article means) as a convergent check."""
    from statsmodels.stats.weightstats import ttost_paired

    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3:
        return {"p": None, "n": int(ok.sum())}
    p, lower, upper = ttost_paired(x[ok], y[ok], bounds[0], bounds[1])
    return {"p": float(p), "p_lower": float(lower[1]), "p_upper": float(upper[1]), "n": int(ok.sum())}


def spearman(x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """scipy Spearman rho and two-sided p; ``None`` where undefined (n < 3 or a constant)."""
    from scipy.stats import spearmanr

    ok = np.isfinite(x) & np.isfinite(y)
    n = int(ok.sum())
    if n < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return {"rho": None, "p": None, "n": n}
    res = spearmanr(x[ok], y[ok])
    return {"rho": float(res.statistic), "p": float(res.pvalue), "n": n}


def _row_spearman(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Spearman of each row pair (average ranks; NaN for constant rows)."""
    from scipy.stats import rankdata

    rx = rankdata(xs, axis=1)
    ry = rankdata(ys, axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    num = (rx * ry).sum(axis=1)
    den = np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def spearman_bootstrap(
    x: np.ndarray, y: np.ndarray, *, resamples: int, seed: int, confidence: float
) -> dict[str, Any]:
    """Spearman with a percentile CI over language-level resamples (units drawn with replacement)."""
    out = spearman(x, y)
    ok = np.isfinite(x) & np.isfinite(y)
    xs, ys = x[ok], y[ok]
    if out["rho"] is None:
        return {**out, "ci_low": None, "ci_high": None, "resamples": resamples}
    idx = np.random.default_rng(seed).integers(0, len(xs), size=(resamples, len(xs)))
    rhos = _row_spearman(xs[idx], ys[idx])
    finite = rhos[np.isfinite(rhos)]
    alpha = (1 - confidence) / 2
    low, high = np.percentile(finite, [100 * alpha, 100 * (1 - alpha)]) if finite.size else (np.nan, np.nan)
    return {
        **out,
        "ci_low": float(low),
        "ci_high": float(high),
        "resamples": resamples,
        "valid_resamples": int(finite.size),
    }


def partial_spearman(x: np.ndarray, y: np.ndarray, control: np.ndarray) -> dict[str, Any]:
    """Spearman of x and y after rank residualization on ``control``.

    Ranks of x and y are each regressed (OLS) on the ranks of ``control``; the residuals are
    correlated (Pearson) and tested with n - 3 degrees of freedom.
    """
    from scipy.stats import rankdata, t

    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(control)
    n = int(ok.sum())
    if n < 4:
        return {"rho": None, "p": None, "n": n}
    rc = rankdata(control[ok])
    design = np.column_stack([np.ones(n), rc])

    def resid(v: np.ndarray) -> np.ndarray:
        r = rankdata(v)
        beta, *_ = np.linalg.lstsq(design, r, rcond=None)
        return r - design @ beta

    ex, ey = resid(x[ok]), resid(y[ok])
    den = np.sqrt((ex**2).sum() * (ey**2).sum())
    if den == 0:
        return {"rho": None, "p": None, "n": n}
    rho = float(np.clip((ex * ey).sum() / den, -1.0, 1.0))
    df = n - 3
    stat = rho * np.sqrt(df / max(1e-300, 1 - rho**2))
    p = float(2 * t.sf(abs(stat), df)) if abs(rho) < 1 else 0.0
    return {"rho": rho, "p": p, "n": n, "control": "rank residualization"}


def kendalls_w(rankings: np.ndarray) -> float | None:
    """Kendall's coefficient of concordance for ``raters x objects`` scores (higher = better rank).

    Hand-written: neither scipy nor statsmodels ship W; this is the standard formula with the
    tie correction.
    """
    from scipy.stats import rankdata

    m, n = rankings.shape
    if m < 2 or n < 2:
        return None
    ranks = rankdata(rankings, axis=1)
    totals = ranks.sum(axis=0)
    s = float(((totals - totals.mean()) ** 2).sum())
    ties = 0.0
    for row in rankings:
        _, counts = np.unique(row, return_counts=True)
        ties += float((counts**3 - counts).sum())
    den = m**2 * (n**3 - n) - m * ties
    return float(12 * s / den) if den > 0 else None


def standardized_ols(y: np.ndarray, predictors: dict[str, np.ndarray]) -> dict[str, Any]:
    """OLS of z-scored y on z-scored predictors (statsmodels); descriptive only."""
    # The two names from their own modules, not ``statsmodels.api``: importing that whole
    # namespace (datasets, distributions, every model family) was most of the nomological
    # section, 0.3 to 0.5 s of every run of the suite, a new model's refresh included (issue 37);
    # they are the same functions.
    from statsmodels.regression.linear_model import OLS
    from statsmodels.tools.tools import add_constant

    cols = [k for k, v in predictors.items() if v.size > 1 and np.isfinite(v).all() and np.std(v) > 0]
    ok = np.isfinite(y)
    n = int(ok.sum())
    if n <= len(cols) + 1 or not cols or np.ptp(y[ok]) == 0:
        return {"n": n, "r2": None, "coefficients": {}}

    def z(v: np.ndarray) -> np.ndarray:
        return (v - v.mean()) / v.std(ddof=1)

    design = add_constant(np.column_stack([z(predictors[c][ok]) for c in cols]), has_constant="add")
    fit = OLS(z(y[ok]), design).fit()
    return {
        "n": n,
        "r2": float(fit.rsquared),
        "coefficients": {c: float(b) for c, b in zip(cols, fit.params[1:], strict=True)},
        "note": "descriptive only: standardized OLS of language CLCG on the listed predictors",
    }
