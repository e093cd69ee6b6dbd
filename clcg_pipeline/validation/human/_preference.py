"""The paired arm of the human-validation study: is the higher-resource response preferred?

Only decisive judgments (A or B) enter. Three views of the same proportion (docs/HUMAN_VALIDATION.md):

- raw: count and proportion with the exact (Clopper-Pearson) interval and the one-sided exact
  binomial p against 0.5 (``scipy.stats.binomtest``);
- mixed: a logistic model with crossed random intercepts for annotator and pair, because
  judgments repeat within both. Fitted with statsmodels' ``BinomialBayesMixedGLM`` by
  variational Bayes (``fit_vb``, L-BFGS-B: same optimum as its default BFGS at a third of the
  time; the Laplace ``fit_map`` diverges on data of this shape): the
  probability is the inverse logit of the intercept's posterior mean, the interval and the
  one-sided p come from its posterior normal approximation (p = posterior probability that the
  intercept is <= 0). This is not the frequentist GLMM (lme4 ``glmer``) the study used; the
  ``method`` field says so wherever it is reported;
- bootstrap: the proportion with annotators resampled as clusters.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import binomtest, norm

from clcg_pipeline.analysis import draw_multiplicities, percentile_ci
from clcg_pipeline.storage import finite
from clcg_pipeline.validation.human._agreement import withhold

MIXED_METHOD = (
    "statsmodels BinomialBayesMixedGLM (variational Bayes, fit_vb with L-BFGS-B), crossed random "
    "intercepts for annotator and pair, default priors (fixed effect N(0, 2^2), log-SD N(0, 1)); "
    "interval and p from the intercept's normal posterior approximation"
)


def decisive(frame: pd.DataFrame) -> pd.DataFrame:
    """Decisive judgments with ``higher`` = 1 when the higher-resource response was chosen.

    ``frame`` has ``annotator_id``, ``task_id``, ``preference`` (A, B or none) and
    ``higher_side`` (A or B: where the higher-resource response was shown).
    """
    rows = frame[frame["preference"].isin(["A", "B"])].copy()
    bad = ~rows["higher_side"].isin(["A", "B"])
    if bad.any():
        first = rows[bad].iloc[0]
        raise ValueError(
            f"pair task {first['task_id']!r}: higher_side {first['higher_side']!r} is not A or B "
            "(the annotation sample must say where the higher-resource response was shown)"
        )
    rows["higher"] = (rows["preference"] == rows["higher_side"]).astype(int)
    return rows.reset_index(drop=True)


def exact(k: int, n: int, confidence: float) -> dict[str, Any]:
    """Raw proportion, exact two-sided interval and one-sided exact p (H1: proportion > 0.5)."""
    if n == 0:
        return {
            "decisive": 0,
            "higher_preferred": 0,
            "proportion": None,
            "exact_ci_low": None,
            "exact_ci_high": None,
            "p_one_sided": None,
        }
    test = binomtest(k, n, 0.5, alternative="greater")
    ci = binomtest(k, n, 0.5).proportion_ci(confidence_level=confidence, method="exact")
    return {
        "decisive": n,
        "higher_preferred": k,
        "proportion": k / n,
        "exact_ci_low": float(ci.low),
        "exact_ci_high": float(ci.high),
        "p_one_sided": float(test.pvalue),
    }


def mixed_model(rows: pd.DataFrame, confidence: float, seed: int) -> dict[str, Any]:
    """Crossed-random-intercept logistic model of ``higher`` (see the module docstring)."""
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

    out: dict[str, Any] = {
        "probability": None,
        "ci_low": None,
        "ci_high": None,
        "odds_ratio": None,
        "or_ci_low": None,
        "or_ci_high": None,
        "p_one_sided": None,
        "method": MIXED_METHOD,
    }
    if len(rows) < 2 or rows["higher"].nunique() < 2:
        out["status"] = "not fitted: fewer than two judgments or all on one side"
        return out
    data = pd.DataFrame(
        {
            "y": rows["higher"].astype(float),
            "annotator": rows["annotator_id"].astype(str),
            "pair": rows["task_id"].astype(str),
        }
    )
    vc = {"annotator": "0 + C(annotator)", "pair": "0 + C(pair)"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = BinomialBayesMixedGLM.from_formula("y ~ 1", vc, data).fit_vb(fit_method="L-BFGS-B", rng=seed)
    mean, sd = float(fit.fe_mean[0]), float(fit.fe_sd[0])
    z = norm.ppf(0.5 + confidence / 2)
    out.update(
        probability=float(expit(mean)),
        ci_low=float(expit(mean - z * sd)),
        ci_high=float(expit(mean + z * sd)),
        odds_ratio=float(np.exp(mean)),
        or_ci_low=float(np.exp(mean - z * sd)),
        or_ci_high=float(np.exp(mean + z * sd)),
        p_one_sided=float(norm.cdf(-mean / sd)) if sd > 0 else None,
        annotator_sd=float(np.exp(fit.vcp_mean[0])),
        pair_sd=float(np.exp(fit.vcp_mean[1])),
        status="ok",
    )
    issues = sorted({str(w.message).splitlines()[0] for w in caught})
    if issues:
        out["status"] = "fitted with warnings: " + "; ".join(issues)
    return out


def annotator_bootstrap(
    rows: pd.DataFrame, *, replicates: int, seed: int, confidence: float, min_clusters: int
) -> dict[str, Any]:
    """The proportion with annotators resampled as clusters (percentile interval)."""
    out: dict[str, Any] = {"estimate": None, "ci_low": None, "ci_high": None, "annotators": 0}
    if rows.empty:
        return out
    per = rows.groupby("annotator_id", sort=True)["higher"].agg(["sum", "count"])
    weights = draw_multiplicities(len(per), replicates, seed)
    k, n = per["sum"].to_numpy(float), per["count"].to_numpy(float)
    reps = (weights @ k) / (weights @ n)
    low, high = percentile_ci(reps, confidence)
    out.update(
        estimate=float(k.sum() / n.sum()), ci_low=finite(low), ci_high=finite(high), annotators=len(per)
    )
    return withhold(out, len(per), min_clusters, "annotators")


def preference(
    frame: pd.DataFrame, *, replicates: int, seed: int, confidence: float, min_clusters: int
) -> dict[str, Any]:
    """The ``preference`` block of ``human_validation_results``."""
    rows = decisive(frame)
    k, n = int(rows["higher"].sum()), len(rows)
    out = exact(k, n, confidence)
    out["judgments"] = len(frame)
    out["non_decisive"] = int((frame["preference"] == "none").sum())
    out["mixed"] = mixed_model(rows, confidence, seed)
    out["bootstrap"] = annotator_bootstrap(
        rows, replicates=replicates, seed=seed, confidence=confidence, min_clusters=min_clusters
    )
    return out
