"""The granularity study's asset check decides "too few documents" by the one rule (issue 34, item 1).

The check compared ``documents < min_documents`` itself and wrote its own words; it now asks
``too_few_documents`` (``analysis.withheld_reason`` with documents as the unit), as every
estimate of the document does, and says the rule's reason.
"""

from __future__ import annotations

import pytest

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.granularity import _analysis_assets
from clcg_pipeline.granularity._analysis_assets import granularity_results_check


def _doc(documents: int) -> dict[str, object]:
    return {
        "status": "ok",
        "reason": None,
        "settings": {"rows": 40, "documents": documents, "min_documents": 10},
    }


def test_the_check_says_the_rules_reason_below_min_documents() -> None:
    check = granularity_results_check(_doc(4))
    reason = withheld_reason(0.0, 4, 10, unit="documents")
    assert reason == "too few documents: 4 < study.min_articles = 10"
    assert not check.passed and f"; {reason}: every interval is withheld" in str(check.description)
    assert granularity_results_check(_doc(10)).passed


def test_the_check_asks_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed rule changes the check: it holds no comparison of its own."""
    monkeypatch.setattr(_analysis_assets, "too_few_documents", lambda *_args: "the owner's reason")
    check = granularity_results_check(_doc(40))
    assert not check.passed and "the owner's reason" in str(check.description)
