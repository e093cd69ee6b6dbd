"""The identifiability rule has one owner, ``analysis.withheld_reason`` (issue 34, item 1).

The suite while it computes (``SuiteContext.qualify``), ``results`` for the sections it restates
and ``clcg compare`` all ask it, so a threshold or a reason cannot differ between two of them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.analysis import (
    NO_VALID_REPLICATE,
    WITHHELD_FIELDS,
    SuiteContext,
    leaderboard,
    run_suite,
    withheld_reason,
)
from clcg_pipeline.analysis._gaps import Roles
from clcg_pipeline.results import as_written, withhold_unidentifiable
from clcg_pipeline.synthetic import synthetic_articles, synthetic_scores
from clcg_pipeline_tests.analysis.conftest import small_config


def _ctx() -> SuiteContext:
    return SuiteContext(config=None, roles=Roles("en", "pt", ()), replicates=200, seed=1, confidence=0.95)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("estimate", "n_articles", "valid", "expected"),
    [
        (0.1, 12, 200, None),
        (0.1, None, None, None),  # not counted in articles: the rule has nothing to say
        (0.1, 9, 200, "too few articles: 9 < study.min_articles = 10"),
        (0.1, 12, 0, NO_VALID_REPLICATE),
        (None, 12, 200, "no estimate: a group or language of the contrast has no scored rows"),
    ],
)
def test_the_suite_applies_the_one_rule(
    estimate: float | None, n_articles: int | None, valid: int | None, expected: str | None
) -> None:
    assert withheld_reason(estimate, n_articles, 10, valid) == expected
    block: dict[str, Any] = {"estimate": estimate, "ci_low": 0.05, "ci_high": 0.15, "p": 0.01}
    block |= {"n_articles": n_articles, "valid_replicates": valid}
    out = _ctx().qualify(block, sided="two-sided")
    assert out["identifiable"] is (expected is None) and out["reason"] == expected
    shown = [field for field in ("ci_low", "ci_high", "p") if out[field] is not None]
    assert shown == ([] if expected else ["ci_low", "ci_high", "p"])
    if expected is not None:
        assert out["estimate"] == estimate  # the point estimate stays, as a description


def test_an_estimate_without_one_valid_replicate_is_not_identifiable() -> None:
    """Before: marked identifiable with no interval and no reason, so nothing said why."""
    out = _ctx().qualify({"estimate": 0.2, "ci_low": None, "ci_high": None, "valid_replicates": 0})
    assert out["identifiable"] is False and out["reason"] == NO_VALID_REPLICATE


def test_results_withhold_every_field_of_the_rule() -> None:
    """``results`` withholds the fields the rule names, no list of its own."""
    block = {field: 0.5 for field in WITHHELD_FIELDS} | {"estimate": 0.1, "identifiable": False}
    out = withhold_unidentifiable({"section": block})
    assert out["section"] == {field: None for field in WITHHELD_FIELDS} | {
        "estimate": 0.1,
        "identifiable": False,
    }


def _count(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[arg-type]


def test_no_number_the_rule_withholds_reaches_the_estimates_table_or_the_leaderboard(
    project, small_langs
) -> None:
    """A study of four articles (< study.min_articles): the estimates table and the leaderboard
    carry each estimand's point, never an interval, p or adjusted p the rule withholds."""
    config = small_config(project, small_langs, n_models=3, replicates=60, seed=5)
    scores = synthetic_scores(
        config.languages, n_models=3, n_articles=4, n_stability=0, items_per_level=2, seed=5
    )
    result = run_suite(scores, config, articles=synthetic_articles(4, seed=5))
    escaped = []
    for row in result.estimates.to_dict("records"):
        estimate = None if pd.isna(row["estimate"]) else float(row["estimate"])
        why = withheld_reason(
            estimate, _count(row["n_articles"]), config.study.min_articles, _count(row["valid_replicates"])
        )
        shown = [field for field in ("ci_low", "ci_high", "p", "p_adj") if not pd.isna(row[field])]
        if why is not None and shown:
            escaped.append((row["estimand"], row["group"], shown))
    assert escaped == []
    board = leaderboard(withhold_unidentifiable(as_written(result.results)))
    intervals = [column for column in board.columns if "_ci_" in column]
    assert len(board) == 3 and board[intervals].isna().all().all()
    assert not board["identifiable"].any() and board["reason"].str.startswith("too few articles: 4").all()
