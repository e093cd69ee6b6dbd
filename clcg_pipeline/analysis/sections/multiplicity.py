"""Benjamini-Hochberg over the study's test family."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import pandas as pd

from clcg_pipeline.analysis._context import SuiteContext
from clcg_pipeline.storage import (
    H2Results,
    H3Results,
    H4Results,
    MixedEffectsResults,
    finite,
    jsonable,
    validate_model,
)


def multiplicity(ctx: SuiteContext, results: dict[str, Any], p_h1: dict[str, float | None]) -> dict[str, Any]:
    """BH over the study's 10-test family (fewer when a test is not available, listed as such)."""
    from clcg_pipeline.analysis._stats import benjamini_hochberg

    tests: dict[str, float | None] = {"h1_micro/all": p_h1.get("all")}
    for model in (m.id for m in ctx.config.models.evaluated):
        tests[f"h1_micro_model/{model}"] = p_h1.get(model)
    for model in p_h1:
        if model != "all" and f"h1_micro_model/{model}" not in tests:
            tests[f"h1_micro_model/{model}"] = p_h1[model]
    pooled = _typed(H2Results, results, "h2").pooled
    h2 = pooled.difference if pooled is not None else None
    tests["h2_difference/all"] = h2.p if h2 is not None else None
    mixed_h2 = _typed(MixedEffectsResults, results, "mixed_effects").h2
    # A non-converged mixed model gives no support, so it does not enter the family.
    tests["mixed_h2/all"] = mixed_h2.p_one_sided_less if mixed_h2 is not None and mixed_h2.converged else None
    slope = _typed(H3Results, results, "h3").slope
    tests["h3_slope/all"] = slope.p if slope is not None else None
    h4 = _typed(H4Results, results, "h4").difference
    tests["h4_difference/all"] = h4.p if h4 is not None else None
    return benjamini_hochberg({k: finite(v) for k, v in tests.items()})


_Section = TypeVar("_Section", H2Results, H3Results, MixedEffectsResults, H4Results)


def _typed(model: type[_Section], results: dict[str, Any], name: str) -> _Section:
    """The section ``name`` the suite just computed, read through its document model: a shape
    the document would refuse on write fails here, naming the field, before the family is built."""
    return validate_model(model, jsonable(results[name], unknown="keep"), source=f"analysis section {name!r}")


def fill_p_adj(estimates: pd.DataFrame, family: dict[str, Any]) -> None:
    """Each family test's BH-adjusted p into its ``estimates`` rows (and mixed H2's p itself).

    Rows are matched on ``estimand/group`` in one pass, not one scan per test: the family
    grows with the models and the table with their pairs.
    """
    tests = {row["test"]: row for row in family["tests"]}
    if estimates.empty or not tests:
        return
    keys = (estimates["estimand"].astype(str) + "/" + estimates["group"].astype(str)).to_numpy()
    p_adj, p = estimates.columns.get_loc("p_adj"), estimates.columns.get_loc("p")
    for position in np.flatnonzero(pd.Series(keys).isin(list(tests)).to_numpy()):
        row = tests[keys[position]]
        estimates.iat[position, p_adj] = row["p_adj"]
        if row["test"].split("/", 1)[0] == "mixed_h2":
            estimates.iat[position, p] = row["p"]
