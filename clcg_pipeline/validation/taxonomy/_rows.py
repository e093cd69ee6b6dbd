"""One estimand of the error-taxonomy analysis written twice: a row of the long estimates table
(``add_estimate``) and an entry of the results document (``result_entry``)."""

from __future__ import annotations

from typing import Any


def add_estimate(
    est: list[dict[str, Any]], estimand: str, judge: str, group: str, s: dict[str, Any]
) -> dict[str, Any]:
    status = "estimated" if s.get("identifiable", True) else f"not identifiable: {s.get('reason')}"
    est.append(
        {
            "estimand": estimand,
            "judge": judge,
            "group": group,
            "estimate": s.get("estimate"),
            "ci_low": s.get("ci_low"),
            "ci_high": s.get("ci_high"),
            "n": s.get("n"),
            "n_articles": s.get("n_articles"),
            "status": status,
            "flags": "; ".join(s.get("flags", [])) or None,
        }
    )
    return s


def result_entry(s: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A results-dict entry: the caller's fields, then estimate, interval, counts and the
    identifiability decision of ``s`` with the rule's reason (None when identifiable), so a
    withheld entry says why, as the estimates table's status does."""
    return {
        **extra,
        "estimate": s["estimate"],
        "ci_low": s["ci_low"],
        "ci_high": s["ci_high"],
        "n": s.get("n"),
        "n_articles": s.get("n_articles"),
        "identifiable": s["identifiable"],
        "reason": s.get("reason"),
    }
