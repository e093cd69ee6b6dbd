"""Sections that decided identifiability themselves now ask the one rule (issue 34, item 1).

``analysis.withheld_reason`` owns the decision and its words; the nomological network's
statistics without a bootstrap and the mixed-effects checks used to restate its comparison and
its reason. Each test fails where a section decides, words or withholds on its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import (
    WITHHELD_FIELDS,
    SuiteContext,
    withheld_caveat,
    withheld_for_too_few,
    withheld_reason,
)
from clcg_pipeline.analysis._gaps import Roles
from clcg_pipeline.analysis.sections import mixed as mixed_section
from clcg_pipeline.analysis.sections import nomological as nomological_section


def _ctx() -> SuiteContext:
    roles = Roles("en", "pt", ("sw",))
    return SuiteContext(config=None, roles=roles, replicates=50, seed=1, confidence=0.95)  # type: ignore[arg-type]


def test_a_statistic_without_bootstrap_withholds_every_field_the_rule_names() -> None:
    """Before: only p and r\u00b2 were nulled, so an interval the statistic carried stayed shown."""
    stat = {"rho": 0.5, "p": 0.2, "ci_low": 0.1, "ci_high": 0.9, "n": 4}
    out = nomological_section.withheld_below_min(_ctx(), stat, 3)
    assert out["identifiable"] is False and out["reason"] == withheld_reason(0.5, 3, 10)
    assert [f for f in WITHHELD_FIELDS if out.get(f) is not None] == []
    assert out["rho"] == 0.5  # the point value stays, as a description
    ols = nomological_section.withheld_below_min(_ctx(), {"n": 4, "r2": 0.7, "coefficients": {"x": 1.0}}, 3)
    assert ols["r2"] is None and ols["coefficients"] == {"x": 1.0}
    shown = nomological_section.withheld_below_min(_ctx(), stat, 12)
    assert shown["identifiable"] is True and shown["reason"] is None and shown["ci_low"] == 0.1


def test_the_nomological_network_asks_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision is the owner's: a changed rule changes the section (no comparison of its own)."""
    monkeypatch.setattr(nomological_section, "withheld_reason", lambda *_args: "the owner's reason")
    out = nomological_section.withheld_below_min(_ctx(), {"rho": 0.5, "p": 0.2, "n": 4}, 50)
    assert out["identifiable"] is False and out["reason"] == "the owner's reason" and out["p"] is None


def _band(n_articles: int) -> pd.DataFrame:
    docs = [f"d{i}" for i in range(n_articles)]
    return pd.DataFrame(
        {
            "model": "m1",
            "language": ["en", "sw"] * n_articles,
            "doc_id": np.repeat(docs, 2),
            "y": np.linspace(0.2, 0.8, 2 * n_articles),
        }
    )


def test_the_mixed_checks_below_min_articles_give_the_rules_words() -> None:
    ctx = _ctx()
    out = mixed_section.mixed(ctx, _band(3), None)
    reason = withheld_reason(0.0, 3, ctx.min_articles)
    assert out["h1"]["reason"] == reason and out["h1"]["status"] == f"not identifiable: {reason}"
    assert out["h1"]["identifiable"] is False
    assert [f for f in WITHHELD_FIELDS if out["h1"].get(f) is not None] == []
    row = next(r for r in ctx.rows if r["estimand"] == "mixed_h1")
    assert row["status"] == f"not identifiable: {reason}" and row["ci_low"] is None and row["p"] is None


def test_the_mixed_checks_ask_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the section compared with study.min_articles itself and wrote its own reason."""
    calls: list[tuple[Any, ...]] = []

    def rule(*args: Any) -> str:
        calls.append(args)
        return "the owner's reason"

    monkeypatch.setattr(mixed_section, "withheld_reason", rule)
    out = mixed_section.mixed(_ctx(), _band(3), None)
    assert out["h1"]["reason"] == "the owner's reason" and calls[0][1:] == (3, 10)


def test_one_caveat_for_the_records_the_rule_withheld_for_too_few_articles() -> None:
    records = [
        {"reason": withheld_reason(0.1, 3, 10)},
        {"reason": withheld_reason(None, 30, 10)},  # no estimate: not a count, not in the caveat
        {"reason": None},
    ]
    assert [withheld_for_too_few(r["reason"]) for r in records] == [True, False, False]
    assert withheld_caveat("study x", records, 10) == (
        "study x: 1 of 3 estimate(s) rest on fewer than study.min_articles = 10 articles; they are "
        "descriptions and their intervals and p values are withheld"
    )
    assert withheld_caveat("study x", records[1:], 10) is None
    documents = [{"reason": withheld_reason(0.1, 3, 10, unit="documents")}]
    assert withheld_caveat("g", documents, 10) is None
    assert "10 documents;" in str(withheld_caveat("g", documents, 10, unit="documents"))


def test_the_rule_names_the_unit_a_study_resamples() -> None:
    """Studies that resample items or documents used to rewrite the rule's words themselves."""
    assert withheld_reason(0.1, 3, 10, unit="items") == "too few items: 3 < study.min_articles = 10"
    assert withheld_reason(0.1, 3, 10) == "too few articles: 3 < study.min_articles = 10"
    assert withheld_reason(None, 3, 10, unit="items") == withheld_reason(None, 3, 10)
