"""The granularity section prints the reasons its document carries, not its own (issue 34, item 1).

The status line used to add "(too few documents to identify them)" whenever every interval was
withheld, restating the rule (``analysis.withheld_reason``) in the report's words, whatever the
document's reasons were.
"""

from __future__ import annotations

from typing import Any

from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_studies import _render, _section, _status, _text

OWNER = "the owner's reason"


def _with_reason(value: Any) -> Any:
    """``value`` with every withheld record's ``reason`` replaced by the owner's (fake) words."""
    if isinstance(value, list):
        return [_with_reason(v) for v in value]
    if isinstance(value, dict):
        return {k: (OWNER if k == "reason" and v else _with_reason(v)) for k, v in value.items()}
    return value


def test_every_interval_withheld_points_to_the_documents_reasons() -> None:
    block = _with_reason({**fx.granularity("not_identifiable"), "status": "ok", "reason": None})
    block["caveats"] = [f"{OWNER}; every interval is withheld"]
    section = _section(_render(granularity=block), "granularity")
    level, status = _status(section)
    assert level == "warn" and "Every interval is withheld" in status and "caveats" in status
    text = _text(section)
    assert "too few" not in text  # the report composes no reason of its own
    assert OWNER in text
