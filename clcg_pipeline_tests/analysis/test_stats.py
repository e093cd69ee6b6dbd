from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_paired

from clcg_pipeline.analysis import bootstrap_p, percentile_ci
from clcg_pipeline.analysis._stats import (
    _row_spearman,
    benjamini_hochberg,
    bootstrap_tost,
    kendalls_w,
    paired_tost,
    partial_spearman,
    spearman,
    spearman_bootstrap,
    standardized_ols,
)


def test_bh_matches_multipletests_and_skips_missing():
    ps = {"a": 0.001, "b": 0.04, "c": None, "d": 0.03, "e": 0.2, "f": 0.012}
    out = benjamini_hochberg(ps)
    known = [k for k, v in ps.items() if v is not None]
    reject, adj, _, _ = multipletests([ps[k] for k in known], method="fdr_bh")
    got = {row["test"]: row for row in out["tests"]}
    for k, a, r in zip(known, adj, reject, strict=True):
        assert got[k]["p_adj"] == pytest.approx(a)
        assert got[k]["reject"] == bool(r)
    assert got["c"]["p_adj"] is None and out["not_available"] == ["c"]
    assert out["m"] == 5 and out["planned"] == 6


def test_bootstrap_p_and_percentile():
    reps = np.array([-1.0, 0.5, 1.0, 2.0, 3.0])
    assert bootstrap_p(reps, "greater") == pytest.approx(2 / 6)
    assert bootstrap_p(reps, "less") == pytest.approx(5 / 6)
    assert bootstrap_p(reps, "two-sided") == pytest.approx(min(1.0, 2 * 2 / 6))
    assert percentile_ci(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    assert np.isnan(percentile_ci(np.array([np.nan]), 0.95)[0])


def test_bootstrap_tost_and_paired_tost():
    rng = np.random.default_rng(0)
    inside = bootstrap_tost(rng.normal(0.0, 0.005, 2000), (-0.02, 0.02))
    outside = bootstrap_tost(rng.normal(0.04, 0.005, 2000), (-0.02, 0.02))
    assert inside["equivalent"] is True and inside["p"] < 0.05
    assert outside["equivalent"] is False and outside["p"] > 0.5
    x, y = rng.normal(0.5, 0.1, 40), rng.normal(0.5, 0.1, 40)
    got = paired_tost(x, y, (-0.05, 0.05))
    assert got["p"] == pytest.approx(ttost_paired(x, y, -0.05, 0.05)[0])


def test_spearman_helpers_agree_with_scipy():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=16), rng.normal(size=16)
    res = spearman(x, y)
    exp = stats.spearmanr(x, y)
    assert res["rho"] == pytest.approx(exp.statistic) and res["p"] == pytest.approx(exp.pvalue)
    xs, ys = rng.normal(size=(5, 9)), rng.normal(size=(5, 9))
    rows = _row_spearman(xs, ys)
    for i in range(5):
        assert rows[i] == pytest.approx(stats.spearmanr(xs[i], ys[i]).statistic)
    boot = spearman_bootstrap(x, x + rng.normal(0, 0.5, 16), resamples=300, seed=3, confidence=0.95)
    assert boot["ci_low"] < boot["rho"] < boot["ci_high"]
    again = spearman_bootstrap(x, x + rng.normal(0, 0.5, 16), resamples=300, seed=3, confidence=0.95)
    assert again["resamples"] == 300
    assert spearman(np.ones(5), np.arange(5.0))["rho"] is None


def test_partial_spearman_by_rank_residualization():
    rng = np.random.default_rng(2)
    z = rng.integers(0, 5, 16).astype(float)
    x = z + rng.normal(0, 1, 16)
    y = -z + rng.normal(0, 1, 16)
    got = partial_spearman(x, y, z)
    rz = stats.rankdata(z)
    ex = stats.rankdata(x) - np.polyval(np.polyfit(rz, stats.rankdata(x), 1), rz)
    ey = stats.rankdata(y) - np.polyval(np.polyfit(rz, stats.rankdata(y), 1), rz)
    assert got["rho"] == pytest.approx(stats.pearsonr(ex, ey).statistic)
    assert got["n"] == 16 and 0 <= got["p"] <= 1


def test_kendalls_w_against_friedman():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(3, 6))
    w = kendalls_w(scores)
    chi2 = stats.friedmanchisquare(*scores.T).statistic
    assert w == pytest.approx(chi2 / (3 * (6 - 1)))
    assert kendalls_w(np.tile(np.arange(5.0), (4, 1))) == pytest.approx(1.0)


def test_standardized_ols_recovers_standardized_slope():
    rng = np.random.default_rng(4)
    a = rng.normal(size=30)
    out = standardized_ols(2 * a, {"a": a, "const": np.ones(30)})
    assert out["coefficients"] == {"a": pytest.approx(1.0)} and out["r2"] == pytest.approx(1.0)


def test_standardized_ols_does_not_import_the_statsmodels_api_namespace():
    """The nomological OLS imports its two names alone: ``statsmodels.api`` (every model family,
    the datasets) cost ~0.4 CPU s of each run of the suite, a new model's refresh included."""
    code = (
        "import sys, numpy as np\n"
        "from clcg_pipeline.analysis._stats import standardized_ols\n"
        "a = np.random.default_rng(4).normal(size=30)\n"
        "out = standardized_ols(2 * a + a**2, {'a': a})\n"
        "assert out['r2'] is not None, out\n"
        "print(sorted(m for m in sys.modules if m == 'statsmodels.api'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_standardized_ols_equals_the_statsmodels_api_fit_bit_for_bit():
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=40), rng.normal(size=40)
    y = 0.5 * a - b + rng.normal(size=40)
    out = standardized_ols(y, {"a": a, "b": b})
    z = [(v - v.mean()) / v.std(ddof=1) for v in (y, a, b)]
    fit = sm.OLS(z[0], sm.add_constant(np.column_stack(z[1:]), has_constant="add")).fit()
    assert out["r2"] == float(fit.rsquared)
    assert out["coefficients"] == {"a": float(fit.params[1]), "b": float(fit.params[2])}
