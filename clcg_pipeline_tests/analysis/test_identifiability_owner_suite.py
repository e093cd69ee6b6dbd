"""The suite's caveat and the cluster bootstrap's unit ask the one rule (issue 34, item 1).

``analysis.withheld_reason`` owns the decision and its words, ``withheld_caveat`` the line that
sums them up. The suite used to find its withheld rows by the rule's text and write its own
caveat; the cluster bootstrap used to rewrite the rule's reason with ``str.replace``. Each test
fails where the place decides or words on its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis import ClusterBootstrap, SuiteContext, withheld_caveat, withheld_reason
from clcg_pipeline.analysis import _context as context_module
from clcg_pipeline.analysis import _suite as suite_module
from clcg_pipeline.analysis._gaps import Roles

REPLICATES = 40


def _ctx() -> SuiteContext:
    roles = Roles("en", "pt", ("sw",))
    return SuiteContext(config=None, roles=roles, replicates=REPLICATES, seed=1, confidence=0.95)  # type: ignore[arg-type]


def _estimates(*statuses: str) -> pd.DataFrame:
    n = len(statuses)
    return pd.DataFrame({"status": list(statuses), "flags": [None] * n, "p_bound": [False] * n})


def test_the_suite_caveat_is_the_owners_line() -> None:
    """Before: the suite wrote "N estimand(s) not identifiable with too few articles ..." itself."""
    few, none = withheld_reason(0.1, 3, 10), withheld_reason(None, 30, 10)
    estimates = _estimates(f"not identifiable: {few}", "estimated", f"not identifiable: {none}")
    expected = withheld_caveat("estimates", [{"reason": few}, {"reason": None}, {"reason": none}], 10)
    assert expected is not None and "1 of 3 estimate(s)" in expected
    assert suite_module._estimate_warnings(estimates, 10) == [expected]
    assert suite_module._estimate_warnings(_estimates("estimated"), 10) == []


def test_the_suite_asks_the_owner_for_its_caveat(monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner decides which rows count and words the line: a changed owner changes the suite."""
    calls: list[tuple[Any, ...]] = []

    def caveat(subject: str, records: list[dict[str, Any]], min_articles: int) -> str:
        calls.append((subject, [r["reason"] for r in records], min_articles))
        return "the owner's caveat"

    monkeypatch.setattr(suite_module, "withheld_caveat", caveat)
    estimates = _estimates("not identifiable: the owner's reason", "estimated")
    assert suite_module._estimate_warnings(estimates, 7) == ["the owner's caveat"]
    assert calls == [("estimates", ["the owner's reason", "estimated"], 7)]


def _vec(estimate: float) -> np.ndarray:
    return np.full(REPLICATES + 1, estimate)


def test_a_document_bootstrap_gets_the_rules_words_for_documents() -> None:
    boot = ClusterBootstrap([f"d{i}" for i in range(3)], _ctx(), unit="documents")
    one = boot.summary(_vec(0.4), n=6, n_clusters=3)
    assert one["reason"] == withheld_reason(0.4, 3, 10, unit="documents") and one["n_documents"] == 3
    many = boot.summaries(np.column_stack([_vec(0.4), _vec(0.2)]), [6, 4], [3, 2])
    assert [m["reason"] for m in many] == [
        withheld_reason(v, k, 10, unit="documents") for v, k in ((0.4, 3), (0.2, 2))
    ]


def test_the_bootstrap_passes_its_unit_to_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the rule was asked about articles and its reason edited with ``str.replace``."""

    def rule(*_args: Any, unit: str = "articles") -> str:
        return f"the owner's reason, in {unit}"

    monkeypatch.setattr(context_module, "withheld_reason", rule)
    boot = ClusterBootstrap([f"d{i}" for i in range(3)], _ctx(), unit="documents")
    assert boot.summary(_vec(0.4), n=6, n_clusters=3)["reason"] == "the owner's reason, in documents"
    many = boot.summaries(_vec(0.4)[:, None], [6], [3])
    assert many[0]["reason"] == "the owner's reason, in documents" and many[0]["identifiable"] is False
    articles = ClusterBootstrap([f"a{i}" for i in range(3)], _ctx())
    assert articles.summary(_vec(0.4), n=6, n_clusters=3)["reason"] == "the owner's reason, in articles"
