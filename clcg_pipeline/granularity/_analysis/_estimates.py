"""The long ``granularity_estimates`` table and the plain JSON records of the results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.storage import finite

ESTIMATE_COLUMNS = (
    "estimand",
    "group",
    "task",
    "granularity",
    "metric",
    "region",
    "position",
    "language",
    "model",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "n_documents",
    "valid_replicates",
    "identifiable",
    "status",
    "flags",
)
ESTIMATE_DIMS = ("task", "granularity", "metric", "region", "position", "language", "model")
#: Statistic keys every record carries beside its estimate.
STAT_KEYS = ("ci_low", "ci_high", "n", "n_documents", "identifiable", "reason", "flags")


#: Stands for "estimates were computed" when the rule is asked about a whole panel or bucket.
_COMPUTED = 0.0


def too_few_documents(n_documents: int, min_documents: int) -> str | None:
    """Why ``n_documents`` documents cannot carry an interval, or None when they can.

    The decision and its words are the suite's rule (``analysis.withheld_reason``, the same one
    ``SuiteContext.qualify`` applies to every estimate here); documents are this study's
    articles, and the reason names them as the tables do.
    """
    return withheld_reason(_COMPUTED, n_documents, min_documents, unit="documents")


def empty_estimates() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in ESTIMATE_COLUMNS})


class Estimates:
    """Collects the long ``granularity_estimates`` rows."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add_frame(
        self,
        estimand: str,
        frame: pd.DataFrame,
        fixed: Mapping[str, str] | None = None,
        extra: Sequence[str] = (),
    ) -> None:
        """One row per record; ``extra`` columns (e.g. ``bucket``) go into ``group`` only, since
        the table's columns are the fixed :data:`ESTIMATE_DIMS`."""
        fixed = dict(fixed or {})
        for rec in frame.to_dict(orient="records"):
            labels = {e: rec[e] for e in extra if e in rec}
            self.add(estimand, rec, {**fixed, **{d: rec[d] for d in ESTIMATE_DIMS if d in rec}}, labels)

    def add(
        self,
        estimand: str,
        stats: Mapping[str, Any],
        dims: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        dims = {d: (None if dims.get(d) is None else str(dims[d])) for d in ESTIMATE_DIMS}
        ident = stats.get("identifiable", True)
        labels = [f"{k}={v}" for k, v in (extra or {}).items()]
        labels += [f"{d}={v}" for d, v in dims.items() if v is not None]
        self.rows.append(
            {
                "estimand": estimand,
                "group": "|".join(labels),
                **dims,
                "estimate": stats.get("estimate"),
                "ci_low": stats.get("ci_low"),
                "ci_high": stats.get("ci_high"),
                "n": stats.get("n"),
                "n_documents": stats.get("n_documents"),
                "valid_replicates": stats.get("valid_replicates"),
                "identifiable": ident,
                "status": "estimated" if ident else f"not identifiable: {stats.get('reason')}",
                "flags": "; ".join(stats.get("flags", [])) or None,
            }
        )

    def frame(self) -> pd.DataFrame:
        if not self.rows:
            return empty_estimates()
        return pd.DataFrame(self.rows, columns=list(ESTIMATE_COLUMNS))


def records(frame: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for rec in frame.to_dict(orient="records"):
        out.append({c: plain(rec.get(c)) for c in columns})
    return out


def plain(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return finite(float(value))
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
