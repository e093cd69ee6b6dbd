"""Mixed-effects convergent checks: crossed random intercepts for article and model.

The model is ``y = X beta + Z_article a + Z_model m + e`` with independent normal article
intercepts, model intercepts and residuals, fitted by REML on cell means per article x model x
condition (row-level fits on ~800k rows are far too slow; the aggregation is stated in the
output). A fit that did not converge is reported as such and gives no support.

Why not statsmodels ``MixedLM`` here: it fits crossed factors as variance components of one
all-encompassing group and builds dense ``cells x (articles + models)`` matrices at every
likelihood and score evaluation, so its cost grew with about articles^2.2 (23 s at 600
articles, several minutes for the suite on the CI machine). The likelihood below is the same
REML criterion, written on sufficient statistics: the design is two indicator matrices, the
article block of ``Z'Z`` is diagonal (and so is the model block), so every evaluation reduces
to a Schur complement on the factor with fewer levels, the few model columns of a usual panel:
O(articles x models^2), or O(models x articles^2) once models outnumber articles (see
:class:`_CrossedReml`). :func:`fit_crossed_statsmodels` keeps the
statsmodels fit for comparison; a test checks that both give the same estimates.
"""

from __future__ import annotations

import importlib
import warnings
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._prepare import as_str

AGGREGATION = "cell means per article x model x condition (unweighted)"
RANDOM = "crossed intercepts: article (doc_id), model"


def _design(cells: pd.DataFrame, formula: str) -> tuple[np.ndarray, list[str]]:
    """Fixed-effects design of the two formulas the suite uses (intercept first)."""
    english = cells["english"].to_numpy(dtype=np.float64)
    ones = np.ones(len(cells))
    if formula == "y ~ english":
        return np.column_stack([ones, english]), ["Intercept", "english"]
    if formula == "y ~ english * memorizable":
        memo = cells["memorizable"].to_numpy(dtype=np.float64)
        return (
            np.column_stack([ones, english, memo, english * memo]),
            ["Intercept", "english", "memorizable", "english:memorizable"],
        )
    raise ValueError(f"unsupported mixed-model formula {formula!r}")


class _CrossedReml:
    """Profiled REML of the crossed-intercepts model from sufficient statistics.

    With ``theta = (sd_article, sd_model) / sd_residual`` and ``A = [Z_article, Z_model]``,
    ``V / sigma^2 = H = I + A L^2 A'``; by Woodbury ``H^-1 = I - A L M^-1 L A'`` with
    ``M = I + L A'A L``, whose article block and model block are each diagonal. Hand-written
    for the reason in the module docstring.

    The block of the factor with more levels is eliminated (its diagonal inverted) and the
    other one's Schur complement is factorised: ``O(articles x models^2 + models^3)`` per
    evaluation with articles eliminated, ``O(models x articles^2 + articles^3)`` the other way.
    Articles are eliminated unless models outnumber them, so a panel with no more models than
    articles is evaluated with exactly the arithmetic it always was; at 500 models on 150
    articles the other way fits H1 in 0.5 CPU s instead of 6.6 s (issue 37). The two give the
    same criterion up to rounding (a test checks both ways against each other), but the REML
    optimum is flat: rounding moves the variance components by up to ~1e-5 relative (the
    standard errors ~1e-8, the fixed effects of a balanced panel not at all), as the BLAS
    thread count moves them by ~1e-6 (see :func:`_one_blas_thread`).
    """

    def __init__(
        self, y: np.ndarray, x: np.ndarray, article: np.ndarray, model: np.ndarray, *, eliminate: str = "auto"
    ) -> None:
        self.n, self.p = x.shape
        n_a, n_m = int(article.max()) + 1, int(model.max()) + 1
        self.n_m = n_m
        count_a = np.bincount(article, minlength=n_a).astype(np.float64)
        count_m = np.bincount(model, minlength=n_m).astype(np.float64)
        cross = np.zeros((n_a, n_m))
        np.add.at(cross, (article, model), 1.0)
        xy = np.column_stack([x, y])
        axy_a = np.zeros((n_a, self.p + 1))
        np.add.at(axy_a, article, xy)
        axy_m = np.zeros((n_m, self.p + 1))
        np.add.at(axy_m, model, xy)
        self.xy_xy = xy.T @ xy
        if eliminate not in ("auto", "article", "model"):
            raise ValueError(f"eliminate must be 'auto', 'article' or 'model', got {eliminate!r}")
        if eliminate == "auto":
            eliminate = "model" if n_m > n_a else "article"
        # The eliminated (diagonal) factor first: its counts, its rows of A'[X y], and the
        # coupling counts with its levels as rows.
        self.models_eliminated = eliminate == "model"
        if self.models_eliminated:
            self.count_d, self.count_s, self.cross = count_m, count_a, np.ascontiguousarray(cross.T)
            self.axy_d, self.axy_s = axy_m, axy_a
        else:
            self.count_d, self.count_s, self.cross = count_a, count_m, cross
            self.axy_d, self.axy_s = axy_a, axy_m
        self.n_s = len(self.count_s)

    def _solve(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """``[X y]' H^-1 [X y]`` and ``log|H|`` at ``theta``."""
        ta, tm = float(theta[0]), float(theta[1]) if self.n_m > 1 else 0.0
        td, ts = (tm, ta) if self.models_eliminated else (ta, tm)
        d = 1.0 + td * td * self.count_d  # diagonal block of M of the eliminated factor
        c = ta * tm * self.cross  # coupling block
        e = np.eye(self.n_s) + np.diag(ts * ts * self.count_s)
        schur = e - c.T @ (c / d[:, None])
        u_d = td * self.axy_d  # L A' [X y], rows of the eliminated factor
        u_s = ts * self.axy_s
        # M^-1 u by block elimination on the diagonal block.
        rhs_s = u_s - c.T @ (u_d / d[:, None])
        z_s = np.linalg.solve(schur, rhs_s)
        z_d = (u_d - c @ z_s) / d[:, None]
        quad = self.xy_xy - (u_d.T @ z_d + u_s.T @ z_s)
        sign, ld_schur = np.linalg.slogdet(schur)
        if sign <= 0:
            return quad, float("inf")
        return quad, float(np.log(d).sum() + ld_schur)

    def profile(self, theta: np.ndarray) -> dict[str, Any]:
        quad, logdet_h = self._solve(theta)
        p = self.p
        xtx, xty, yty = quad[:p, :p], quad[:p, p], float(quad[p, p])
        beta = np.linalg.solve(xtx, xty)
        rss = yty - float(xty @ beta)
        dof = self.n - p
        sigma2 = rss / dof
        sign, logdet_x = np.linalg.slogdet(xtx)
        crit = logdet_h + logdet_x + dof * np.log(rss) if sign > 0 and rss > 0 else float("inf")
        return {"crit": float(crit), "beta": beta, "sigma2": sigma2, "xtvx": xtx}

    def objective(self, theta: np.ndarray) -> float:
        try:
            return self.profile(theta)["crit"]
        except np.linalg.LinAlgError:
            # X'H^-1X (or the Schur block) is exactly singular at this theta: a degenerate corner
            # the optimiser may probe (e.g. near-constant scores), never the REML optimum.
            return float("inf")


def fit_crossed(cells: pd.DataFrame, formula: str, term: str, *, confidence: float = 0.95) -> dict[str, Any]:
    """Fit ``formula`` with crossed random intercepts (doc_id, model) by REML; report ``term``.

    Standard errors are the GLS covariance of the fixed effects at the REML estimate
    (``sigma^2 (X'H^-1 X)^-1``, as in lme4 and nlme); p is the two-sided Wald z test.
    """
    from clcg_pipeline.analysis._bootstrap import sorted_factorize

    base = _base(cells, formula, term)
    empty = {"estimate": None, "ci_low": None, "ci_high": None, "p": None, "converged": False}
    if len(cells) < 10 or base["n_articles"] < 2:
        return {**base, **empty, "status": "not identifiable: too few cells"}
    x, names = _design(cells, formula)
    if np.linalg.matrix_rank(x) < x.shape[1]:
        return {**base, **empty, "status": f"term {term!r} not estimable (design not of full rank)"}
    article, _ = sorted_factorize(cells["doc_id"].astype(str))
    model, _ = sorted_factorize(cells["model"].astype(str))
    reml = _CrossedReml(cells["y"].to_numpy(dtype=np.float64), x, article, model)
    n_theta = 2 if base["n_models"] > 1 else 1
    with _one_blas_thread():
        best, theta = _reml_theta(reml, n_theta)
        fit = reml.profile(theta)
    return {**base, **_term_fit(fit, best, theta, names.index(term), n_theta, confidence)}


def _one_blas_thread() -> AbstractContextManager[object]:
    """BLAS on one thread while the optimiser evaluates the criterion (threadpoolctl, a core
    dependency; an environment without it keeps the BLAS's own setting).

    Each evaluation is a few products of matrices of about articles x models; split over
    threads, their synchronisation dominates, and on a busy 2-core machine a waiting thread
    made every evaluation about 25 times slower (14 s against 0.4 s for one fit at a hundred
    models). The thread count also moves the criterion's last bits, and the flat REML optimum
    with them: at a hundred models two threads and one give variance components that differ
    by about 1e-6 relative (standard errors 1e-8). One thread gives every machine the same.
    """
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:
        return nullcontext()
    return cast(AbstractContextManager[object], threadpoolctl.threadpool_limits(limits=1, user_api="blas"))


def _reml_theta(reml: _CrossedReml, n_theta: int) -> tuple[Any, np.ndarray]:
    """The optimiser's best result and the relative standard deviations (model's 0 if one model)."""
    from scipy.optimize import minimize

    def objective(t: np.ndarray) -> float:
        return reml.objective(np.append(t, 0.0) if n_theta == 1 else t)

    # Several starts guard against a local optimum on the boundary of the parameter space;
    # Nelder-Mead then polishes the best one (L-BFGS-B's finite-difference gradient stops
    # about 1e-5 short in theta).
    bounds = [(0.0, None)] * n_theta
    best = None
    for start in (0.5, 1.0, 0.1):
        res = minimize(
            objective,
            np.full(n_theta, start),
            method="L-BFGS-B",
            bounds=bounds,
            options={"ftol": 1e-12, "gtol": 1e-9, "maxiter": 500},
        )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    polished = minimize(
        objective,
        best.x,
        method="Nelder-Mead",
        bounds=bounds,
        # The criterion is ~1e3-1e5 and exact to ~1e-12 relative: tighter tolerances chase noise.
        options={"xatol": 1e-9, "fatol": 1e-9, "maxiter": 2000},
    )
    if polished.fun <= best.fun and polished.success:
        best = polished
    return best, np.append(best.x, 0.0) if n_theta == 1 else best.x


def _term_fit(
    fit: dict[str, Any], best: Any, theta: np.ndarray, j: int, n_theta: int, confidence: float
) -> dict[str, Any]:
    """Estimate, Wald interval and p of fixed effect ``j``, with the variance components."""
    from scipy.stats import norm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cov = fit["sigma2"] * np.linalg.inv(fit["xtvx"])
    se = float(np.sqrt(cov[j, j])) if cov[j, j] > 0 else float("nan")
    estimate = float(fit["beta"][j])
    z = norm.ppf(0.5 + confidence / 2)
    notes: list[str] = []
    if not best.success:
        notes.append(f"optimizer: {best.message}")
    # Informational, as statsmodels reports it: a zero variance is a valid REML estimate.
    info = [
        f"variance component {name} estimated at the boundary (0)"
        for name, t in zip(("article", "model")[:n_theta], theta[:n_theta], strict=True)
        if t <= 1e-8
    ]
    bounded = bool(np.isfinite(se))
    if not bounded:
        # JSON has no NaN: the interval and p are left out, and the fit says why.
        notes.append("standard error undefined: the fixed effects' covariance is not positive")
    converged = bool(best.success and bounded and np.isfinite(fit["crit"]))
    vcomp = {"article": float(theta[0] ** 2 * fit["sigma2"])}
    if n_theta == 2:
        vcomp["model"] = float(theta[1] ** 2 * fit["sigma2"])
    return {
        "estimate": estimate,
        "se": se if bounded else None,
        "ci_low": estimate - z * se if bounded else None,
        "ci_high": estimate + z * se if bounded else None,
        "p": float(2 * norm.sf(abs(estimate / se))) if bounded and se > 0 else None,
        "p_sided": "two-sided (Wald z)",
        "converged": converged,
        "warnings": notes + info,
        "variance_components": vcomp,
        "residual_variance": float(fit["sigma2"]),
        "method": "REML (profiled, sufficient statistics)",
        "status": "converged" if converged else "not converged: no support",
    }


def _base(cells: pd.DataFrame, formula: str, term: str) -> dict[str, Any]:
    return {
        "formula": formula,
        "term": term,
        "random": RANDOM,
        "aggregation": AGGREGATION,
        "n_cells": len(cells),
        "n_articles": int(cells["doc_id"].nunique()) if len(cells) else 0,
        "n_models": int(cells["model"].nunique()) if len(cells) else 0,
    }


def fit_crossed_statsmodels(cells: pd.DataFrame, formula: str, term: str) -> dict[str, Any]:
    """The same model with statsmodels ``MixedLM`` variance components (slow; for comparison)."""
    import statsmodels.formula.api as smf

    data = cells.assign(_all=1)
    vc = {"article": "0 + C(doc_id)"}
    if cells["model"].nunique() > 1:
        vc["model"] = "0 + C(model)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = smf.mixedlm(formula, data, groups="_all", re_formula="0", vc_formula=vc)
        fit = model.fit(reml=True, method=["lbfgs"])
    return {
        "estimate": float(fit.params[term]),
        "se": float(fit.bse[term]),
        "variance_components": {
            name: float(v) for name, v in zip(model.exog_vc.names, fit.vcomp, strict=True)
        },
        "residual_variance": float(fit.scale),
        "converged": bool(fit.converged),
    }


def cell_means(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean ``y`` per combination of ``by`` (observed combinations only)."""
    return rows.groupby(by, observed=True, sort=True)["y"].mean().reset_index()


def mixed_h1(rows: pd.DataFrame, reference: str, targets: list[str], confidence: float) -> dict[str, Any]:
    """``y ~ english`` on English vs pooled-target cell means; ``english`` estimates the CLCG."""
    keep = rows["language"].isin([reference, *targets]).to_numpy()
    english = (rows["language"] == reference).to_numpy().astype(np.int64)
    cells = _labelled_cell_means(rows, keep, {"english": english})
    return fit_crossed(cells, "y ~ english", "english", confidence=confidence)


def _labelled_cell_means(rows: pd.DataFrame, keep: np.ndarray, flags: dict[str, np.ndarray]) -> pd.DataFrame:
    """:func:`cell_means` of the ``keep`` rows per ``doc_id``, ``model`` and the 0/1 ``flags``.

    Articles and models are grouped by their codes sorted by string form, then labelled: the
    same cells, in the same order, with the same row order inside each cell as grouping the
    rows' strings, without one string per row (millions of rows at a hundred models).
    """
    doc, doc_labels = _string_codes(rows["doc_id"], keep)
    model, model_labels = _string_codes(rows["model"], keep)
    if doc_labels is None or model_labels is None:  # a missing id: grouped by its string "nan"
        sub = rows.loc[keep, ["doc_id", "model", "y"]]
        sub = sub.assign(
            doc_id=as_str(sub["doc_id"]),
            model=as_str(sub["model"]),
            **{name: flag[keep] for name, flag in flags.items()},
        )
        return cell_means(sub, ["doc_id", "model", *flags])
    return _coded_cell_means(rows["y"].to_numpy()[keep], doc, doc_labels, model, model_labels, flags, keep)


def _coded_cell_means(
    y: np.ndarray,
    doc: np.ndarray,
    doc_labels: np.ndarray,
    model: np.ndarray,
    model_labels: np.ndarray,
    flags: dict[str, np.ndarray],
    keep: np.ndarray,
) -> pd.DataFrame:
    """:func:`cell_means` grouped by one int64 key folding the codes (most significant first).

    The key sorts like the columns it folds, and a group's rows are visited in the same order,
    so the cells, their order and their means are those of grouping by the columns; pandas
    then factorizes one key over the rows rather than one per column (issue 37: the section's
    peak memory at a hundred models). The flags are 0/1.
    """
    key = doc.astype(np.int64)
    key *= len(model_labels)
    key += model
    for flag in flags.values():
        key *= 2
        key += flag[keep]
    means = pd.Series(y).groupby(key, sort=True).mean()
    del key
    rest = means.index.to_numpy()
    parts: dict[str, np.ndarray] = {}
    for name in reversed(list(flags)):
        parts[name] = rest % 2
        rest = rest // 2
    parts["model"] = model_labels[rest % len(model_labels)]
    parts["doc_id"] = doc_labels[rest // len(model_labels)]
    columns = {c: parts[c] for c in ("doc_id", "model", *flags)}
    return pd.DataFrame({**columns, "y": means.to_numpy()})


def _string_codes(series: pd.Series, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Codes of the ``keep`` rows ordered like the values' strings, and those strings.

    ``None`` for the strings when a kept value is missing (the caller falls back to strings).
    """
    from clcg_pipeline.analysis._bootstrap import sorted_factorize

    codes, uniques = sorted_factorize(series, narrow=True)
    kept = codes[keep]
    if (kept < 0).any():
        return kept, None
    return kept, np.array([str(u) for u in uniques], dtype=object)


def mixed_h2(rows: pd.DataFrame, reference: str, targets: list[str], confidence: float) -> dict[str, Any]:
    """``y ~ english * memorizable``; the interaction is the H2 contrast (memorizable - new)."""
    keep = rows["language"].isin([reference, *targets]).to_numpy()
    english = (rows["language"] == reference).to_numpy().astype(np.int64)
    memorizable = (rows["memo"] == "memorizable").to_numpy().astype(np.int64)
    cells = _labelled_cell_means(rows, keep, {"english": english, "memorizable": memorizable})
    if cells["memorizable"].nunique() < 2:
        return {
            "formula": "y ~ english * memorizable",
            "term": "english:memorizable",
            "estimate": None,
            "ci_low": None,
            "ci_high": None,
            "p": None,
            "converged": False,
            "status": "not identifiable: one memorability group",
        }
    return fit_crossed(cells, "y ~ english * memorizable", "english:memorizable", confidence=confidence)
