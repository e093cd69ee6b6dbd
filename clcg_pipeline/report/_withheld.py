"""What the estimates table says is not identifiable, for the report's first screen (issue 34).

The estimator suite decides per row whether an estimate's interval and p may be shown
(``analysis.withheld_reason``) and writes that decision into the ``estimates`` table: its
``identifiable`` and ``status`` columns ("not identifiable: <reason>"). That table is the one
place that holds every estimate the document shows (H2's per-model groups included) and the one
the document's caveat ("estimates: 7 of 95 estimate(s) rest on fewer than ...") counts. The
first screen asks it here rather than counting the document's blocks again, so its count, the
caveat and the appendix's table agree. Without the table (an old call with ``estimates=None``)
the document's ``estimands`` index stands in for it (``results.withheld_reasons``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from clcg_pipeline.analysis import reason_of
from clcg_pipeline.results import withheld_reasons
from clcg_pipeline.storage import EstimateModel

# Groups named per estimand on the first screen; the rest are counted (the appendix lists them).
_MAX_GROUPS = 4


@dataclass
class Withheld:
    """The estimates table's rows that are not identifiable, by reason, and the table's size."""

    total: int = 0  # rows of the table
    by_reason: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # reason -> estimand -> groups

    @property
    def count(self) -> int:
        return sum(len(groups) for families in self.by_reason.values() for groups in families.values())

    def add(self, estimand: str, group: str, reason: str) -> None:
        self.by_reason.setdefault(reason, {}).setdefault(estimand, []).append(group)

    def line(self, reason: str) -> str:
        """``reason``'s estimands with their groups: "h2_clcg_new (all, model-a)"."""
        return "; ".join(f"{name} ({_groups(groups)})" for name, groups in self.by_reason[reason].items())


def _groups(groups: list[str]) -> str:
    shown = ", ".join(groups[:_MAX_GROUPS])
    more = len(groups) - _MAX_GROUPS
    return f"{shown} and {more} more" if more > 0 else shown


def _from_table(estimates: pd.DataFrame) -> Withheld:
    out = Withheld(total=len(estimates))
    if "identifiable" in estimates.columns:
        withheld = estimates["identifiable"].eq(False)
    else:
        withheld = estimates["status"].astype(str).str.startswith("not identifiable")
    for row in estimates.loc[withheld].itertuples(index=False):
        status = getattr(row, "status", None)
        reason = reason_of(str(status)) if isinstance(status, str) and status else "no reason recorded"
        group = getattr(row, "group", None)
        out.add(str(row.estimand), "" if group is None or pd.isna(group) else str(group), reason)
    return out


def _from_index(estimands: Mapping[str, EstimateModel]) -> Withheld:
    out = Withheld(total=len(estimands))
    records = {key: block.record() for key, block in estimands.items()}
    for key, reason in withheld_reasons(records).items():
        estimand, _, group = key.partition("/")
        out.add(estimand, group, reason)
    return out


def withheld_estimates(
    estimates: pd.DataFrame | None, estimands: Mapping[str, EstimateModel] | None
) -> Withheld | None:
    """The not identifiable rows of the estimates table (else of the document's index), or None
    when the report has neither."""
    decided = estimates is not None and bool({"identifiable", "status"} & set(estimates.columns))
    if estimates is not None and decided:
        return _from_table(estimates)
    if estimands:
        return _from_index(estimands)
    return None
