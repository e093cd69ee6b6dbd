"""What a publisher must know before publishing: simulated parts, headline estimates not identifiable.

Read from the study's ``study_results.json`` alone (the document the release publishes), so
the release's output, manifest and card say what a reader of that document would find.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: the sections holding the study's headline estimates (its hypotheses)
HEADLINE = ("h1", "h2", "h3", "h4")


def _simulated(value: Any, where: str) -> Iterator[str]:
    """Every place (dotted path) whose ``simulated`` flag is true."""
    if isinstance(value, dict):
        if value.get("simulated") is True:
            yield where
        for key, item in value.items():
            yield from _simulated(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for item in value:
            yield from _simulated(item, where)


def _estimates(value: Any) -> Iterator[dict[str, Any]]:
    """Every estimate (a dict saying whether it is identifiable) inside ``value``."""
    if isinstance(value, dict):
        if "identifiable" in value:
            yield value
        for item in value.values():
            yield from _estimates(item)
    elif isinstance(value, list):
        for item in value:
            yield from _estimates(item)


def caveats(results: dict[str, Any]) -> list[str]:
    """One sentence per thing a reader of the release must be told first (empty: none)."""
    out = []
    simulated = sorted(set(_simulated(results, "")))
    if simulated:
        out.append(
            "SIMULATED data: "
            + ", ".join(simulated)
            + " come from simulated annotators (the demo's set), not from people; do not cite them as "
            "human validation"
        )
    estimates = [e for section in HEADLINE for e in _estimates(results.get(section))]
    blind = [e for e in estimates if e.get("identifiable") is False]
    if blind:
        reasons = sorted({str(e.get("reason") or e.get("status") or "no reason given") for e in blind})
        out.append(
            f"headline estimates NOT IDENTIFIABLE: {len(blind)} of the {len(estimates)} estimate "
            f"blocks of sections {', '.join(HEADLINE)} of study_results.json (the report's count "
            "covers every row of the estimates table; intervals and p values withheld; "
            f"{'; '.join(reasons[:3])}); "
            "their point estimates are descriptions, not findings"
        )
    return out
