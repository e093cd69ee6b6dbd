"""Mixed-effects convergent checks: crossed random intercepts for article and model.

Fitted with statsmodels ``MixedLM`` variance components (one all-encompassing group, one
variance component per crossed factor). Row-level fits on ~800k rows are far too slow, so
the model is fitted on cell means per article x model x condition; the aggregation is stated
in the output. A fit that did not converge is reported as such and gives no support.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

AGGREGATION = "cell means per article x model x condition (unweighted)"


def fit_crossed(cells: pd.DataFrame, formula: str, term: str, *, confidence: float = 0.95) -> dict[str, Any]:
    """Fit ``formula`` with crossed random intercepts (doc_id, model) and report ``term``."""
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import ConvergenceWarning

    base: dict[str, Any] = {
        "formula": formula,
        "term": term,
        "random": "crossed intercepts: article (doc_id), model",
        "aggregation": AGGREGATION,
        "n_cells": len(cells),
        "n_articles": int(cells["doc_id"].nunique()) if len(cells) else 0,
        "n_models": int(cells["model"].nunique()) if len(cells) else 0,
    }
    empty = {"estimate": None, "ci_low": None, "ci_high": None, "p": None, "converged": False}
    if len(cells) < 10 or base["n_articles"] < 2:
        return {**base, **empty, "status": "not identifiable: too few cells"}
    data = cells.assign(_all=1)
    vc = {"article": "0 + C(doc_id)"}
    if base["n_models"] > 1:
        vc["model"] = "0 + C(model)"
    caught: list[str] = []
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            model = smf.mixedlm(formula, data, groups="_all", re_formula="0", vc_formula=vc)
            fit = model.fit(reml=True, method=["lbfgs"])
        caught = sorted(
            {str(w.message).splitlines()[0] for w in record if issubclass(w.category, ConvergenceWarning)}
        )
    except (np.linalg.LinAlgError, ValueError) as exc:
        return {**base, **empty, "status": f"fit failed: {type(exc).__name__}: {exc}"}
    if term not in fit.params.index:
        return {**base, **empty, "status": f"term {term!r} not estimable"}
    se = float(fit.bse[term]) if term in fit.bse.index else float("nan")
    # statsmodels flags "MLE may be on the boundary" whenever a variance is below 0.01 in
    # absolute terms, which every Token-F1 variance is; it is kept as information, not failure.
    failures = [w for w in caught if "boundary of the parameter space" not in w]
    converged = bool(fit.converged and not failures and np.isfinite(se))
    ci = fit.conf_int(alpha=1 - confidence).loc[term]
    return {
        **base,
        "estimate": float(fit.params[term]),
        "se": se,
        "ci_low": float(ci.iloc[0]),
        "ci_high": float(ci.iloc[1]),
        "p": float(fit.pvalues[term]),
        "p_sided": "two-sided (Wald z)",
        "converged": converged,
        "warnings": caught,
        "variance_components": {
            name: float(v) for name, v in zip(model.exog_vc.names, fit.vcomp, strict=True)
        },
        "status": "converged" if converged else "not converged: no support",
    }


def cell_means(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Mean ``y`` per combination of ``by`` (observed combinations only)."""
    return rows.groupby(by, observed=True, sort=True)["y"].mean().reset_index()


def mixed_h1(rows: pd.DataFrame, reference: str, targets: list[str], confidence: float) -> dict[str, Any]:
    """``y ~ english`` on English vs pooled-target cell means; ``english`` estimates the CLCG."""
    sub = rows.loc[
        rows["language"].isin([reference, *targets]).to_numpy(), ["doc_id", "model", "language", "y"]
    ]
    sub = sub.assign(
        doc_id=sub["doc_id"].astype(str),
        model=sub["model"].astype(str),
        english=(sub["language"] == reference).astype(int).to_numpy(),
    )
    cells = cell_means(sub, ["doc_id", "model", "english"])
    return fit_crossed(cells, "y ~ english", "english", confidence=confidence)


def mixed_h2(rows: pd.DataFrame, reference: str, targets: list[str], confidence: float) -> dict[str, Any]:
    """``y ~ english * memorizable``; the interaction is the H2 contrast (memorizable - new)."""
    sub = rows.loc[
        rows["language"].isin([reference, *targets]).to_numpy(), ["doc_id", "model", "language", "memo", "y"]
    ]
    sub = sub.assign(
        doc_id=sub["doc_id"].astype(str),
        model=sub["model"].astype(str),
        english=(sub["language"] == reference).astype(int).to_numpy(),
        memorizable=(sub["memo"] == "memorizable").astype(int).to_numpy(),
    )
    cells = cell_means(sub, ["doc_id", "model", "english", "memorizable"])
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
