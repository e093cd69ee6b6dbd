"""The report reads ``mixed_effects`` as its typed section (storage ``MixedEffectsResults``, issue 34):
each ``mixed_<fit>`` row of the estimates table takes the fit's flags from typed fields, and a
fit of another shape is refused naming the field instead of being read as a blank."""

from __future__ import annotations

import re
from html import unescape

import pandas as pd
import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.storage import DocumentError


def _estimates() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "estimand": ["mixed_h1", "mixed_h2"],
            "group": ["all", "all"],
            "estimate": [0.08, -0.01],
            "ci_low": [0.06, -0.03],
            "ci_high": [0.10, 0.01],
            "p": [0.001, 0.4],
            "p_adj": [None, 0.5],
            "n": [120, 120],
        }
    )


def _fit(**extra: object) -> dict[str, object]:
    return {"estimate": 0.08, "ci_low": 0.06, "ci_high": 0.10, "p": 0.001, "converged": True, **extra}


def _all_estimates(html: str) -> str:
    start = html.index('id="all-estimates"') if 'id="all-estimates"' in html else 0
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html[start:])).split())


def test_the_estimates_rows_take_each_fits_flags_from_the_typed_section() -> None:
    results = {
        "mixed_effects": {
            "aggregation": "cell means",
            "h1": _fit(formula="y ~ english", n_cells=40, variance_components={"article": 0.01}),
            "h2": _fit(
                estimate=-0.01,
                ci_low=-0.03,
                ci_high=0.01,
                converged=False,
                status="not converged: no support",
                # analysis/sections/mixed.py copies the fit's warnings into its flags.
                warnings=["optimizer: ABNORMAL_TERMINATION"],
                flags=["not converged: gives no support", "optimizer: ABNORMAL_TERMINATION"],
                p_one_sided_less=0.2,
            ),
        }
    }
    text = _all_estimates(render_report(results, _estimates()))
    assert "mixed_h2 all -0.010" in text
    h2_row = text[text.index("mixed_h2 all") :]
    assert "not converged: no support" in h2_row and "optimizer: ABNORMAL_TERMINATION" in h2_row


def test_a_fit_of_another_shape_is_refused_naming_the_field() -> None:
    results = {"mixed_effects": {"h1": _fit(converged="no"), "h2": _fit()}}
    with pytest.raises(DocumentError, match=r"section 'mixed_effects', field mixed_effects\.h1\.converged"):
        render_report(results, _estimates())
    results = {"mixed_effects": {"h1": _fit(convereged=True)}}
    with pytest.raises(
        DocumentError, match=r"field mixed_effects\.h1\.convereged: a key its shape does not declare"
    ):
        render_report(results, _estimates())
