"""The mixed model's REML criterion eliminates the factor with more levels (issue 37).

At hundreds of models on 150 articles the model block is eliminated and the article block's
Schur complement factorised; a panel with no more models than articles keeps the arithmetic
it always had. Both ways must give the same criterion and the same fit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis._bootstrap import sorted_factorize
from clcg_pipeline.analysis._mixed import _CrossedReml, _design, fit_crossed, fit_crossed_statsmodels


def _cells(n_articles: int, n_models: int, seed: int = 3) -> pd.DataFrame:
    """Cell means of a crossed panel, a few cells missing (unbalanced)."""
    rng = np.random.default_rng(seed)
    art, mod = rng.normal(0, 0.1, n_articles), rng.normal(0, 0.05, n_models)
    rows = [
        (f"d{a:02d}", f"m{m:02d}", eng, 0.5 + 0.08 * eng + art[a] + mod[m] + rng.normal(0, 0.05))
        for a in range(n_articles)
        for m in range(n_models)
        for eng in (0, 1)
        if not ((a + m) % 5 == 0 and eng == 0)
    ]
    return pd.DataFrame(rows, columns=["doc_id", "model", "english", "y"])


def _reml(cells: pd.DataFrame, eliminate: str) -> _CrossedReml:
    x, _ = _design(cells, "y ~ english")
    article, _ = sorted_factorize(cells["doc_id"])
    model, _ = sorted_factorize(cells["model"])
    return _CrossedReml(cells["y"].to_numpy(), x, article, model, eliminate=eliminate)


def test_more_models_than_articles_eliminate_the_models() -> None:
    assert _reml(_cells(6, 12), "auto").models_eliminated
    assert not _reml(_cells(12, 6), "auto").models_eliminated
    assert not _reml(_cells(8, 8), "auto").models_eliminated  # a tie keeps the articles' way
    with pytest.raises(ValueError, match="eliminate must be"):
        _reml(_cells(8, 8), "models")


@pytest.mark.parametrize("shape", [(6, 12), (12, 6)])
def test_both_eliminations_give_the_same_criterion(shape: tuple[int, int]) -> None:
    cells = _cells(*shape)
    by_article, by_model = _reml(cells, "article"), _reml(cells, "model")
    for theta in ([0.5, 1.0], [2.0, 0.3], [0.0, 0.7], [1.3, 0.0]):
        a, m = by_article.profile(np.array(theta)), by_model.profile(np.array(theta))
        assert m["crit"] == pytest.approx(a["crit"], rel=1e-12)
        np.testing.assert_allclose(m["beta"], a["beta"], rtol=1e-10)
        np.testing.assert_allclose(m["xtvx"], a["xtvx"], rtol=1e-10)


def test_a_panel_of_more_models_than_articles_fits_as_statsmodels() -> None:
    cells = _cells(6, 14)
    fast = fit_crossed(cells, "y ~ english", "english")
    slow = fit_crossed_statsmodels(cells, "y ~ english", "english")
    assert fast["converged"] and slow["converged"]
    assert fast["estimate"] == pytest.approx(slow["estimate"], rel=1e-6)
    assert fast["se"] == pytest.approx(slow["se"], rel=1e-3)
    for name in ("article", "model"):
        assert fast["variance_components"][name] == pytest.approx(slow["variance_components"][name], rel=1e-2)
