"""``clcg compare`` shows no interval the identifiability rule withholds (issue 34, item 1).

A run's document is read as it was written; the comparison applies the suite's rule
(``analysis.withheld_reason``, with its own ``study.min_articles``) to each of its rows, as to
the rows it recomputes from scores.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.results import RunSide, compare_runs
from clcg_pipeline_tests.analysis.conftest import small_config

FEW = "too few articles: 6 < study.min_articles = 10"
SHOWN = {
    "group": "all",
    "estimate": 0.10,
    "ci_low": 0.05,
    "ci_high": 0.15,
    "p": 0.01,
    "n_articles": 40,
    "valid_replicates": 200,
    "identifiable": True,
    "status": "estimated",
}


@pytest.fixture(scope="module")
def cfg(project, small_langs):
    config = small_config(project, small_langs, 1, replicates=60)
    assert config.study.min_articles == 10
    return config


def _side(label: str, shift: float) -> RunSide:
    rows: list[dict[str, Any]] = [
        {**SHOWN, "estimand": "h1_micro"},
        # Marked not identifiable by its run, its interval left in (an older document).
        {
            **SHOWN,
            "estimand": "pt_gap",
            "identifiable": False,
            "reason": FEW,
            "status": f"not identifiable: {FEW}",
        },
        # Written under study.min_articles = 5: identifiable there, not under this comparison's 10.
        {**SHOWN, "estimand": "macro", "n_articles": 6},
    ]
    frame = pd.DataFrame([{**row, "estimate": row["estimate"] + shift} for row in rows])
    return RunSide(label, frame, document=f"{label}.json")


def _row(table: pd.DataFrame, estimand: str) -> dict[str, Any]:
    return table[table["estimand"] == estimand].iloc[0].to_dict()


@pytest.fixture(scope="module")
def table(cfg) -> pd.DataFrame:
    return compare_runs(_side("A", 0.0), _side("B", 0.02), cfg)[0]


def test_an_identifiable_documents_interval_is_read(table) -> None:
    shown = _row(table, "h1_micro")  # identifiable in both runs: read and differenced
    assert shown["a_ci_low"] == pytest.approx(0.05) and shown["difference_ci_low"] is not None


@pytest.mark.parametrize("estimand", ["pt_gap", "macro"])
def test_a_documents_interval_the_rule_withholds_is_not_shown(table, estimand: str) -> None:
    row = _row(table, estimand)
    intervals = {k: row[k] for k in ("a_ci_low", "a_ci_high", "b_ci_low", "b_ci_high", "difference_ci_low")}
    assert set(intervals.values()) == {None}, intervals
    assert row["p"] is None and row["reason"] == f"run A: {FEW}"
    assert row["difference"] == pytest.approx(0.02)  # the point estimates stay, as descriptions
