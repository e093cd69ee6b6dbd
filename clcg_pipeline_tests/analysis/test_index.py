"""The per-estimand Python values built column by column (issue 37): the flat index equals the
row-by-row reading it replaced, and the garbage collector is paused while such objects are built."""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis._definitions import DEFINITIONS, definition_of
from clcg_pipeline.analysis._index import estimand_index, finite_values, paused_collection, reason_of
from clcg_pipeline.analysis._suite import ESTIMATE_COLUMNS, _typed
from clcg_pipeline.storage import finite


def _row_by_row(estimates: pd.DataFrame, metric: str) -> dict[str, dict[str, Any]]:
    """The index as the suite built it before issue 37: one ``itertuples`` row at a time."""
    return {
        f"{r.estimand}/{r.group}": {
            "estimate": finite(r.estimate),
            "ci_low": finite(r.ci_low),
            "ci_high": finite(r.ci_high),
            "p": finite(r.p),
            "p_adj": finite(r.p_adj),
            "p_bound": bool(r.p_bound) if not pd.isna(r.p_bound) else False,
            "n": None if pd.isna(r.n) else int(r.n),
            "n_articles": None if pd.isna(r.n_articles) else int(r.n_articles),
            "identifiable": bool(r.identifiable) if not pd.isna(r.identifiable) else True,
            "reason": None if pd.isna(r.identifiable) or bool(r.identifiable) else reason_of(str(r.status)),
            "valid_replicates": None if pd.isna(r.valid_replicates) else int(r.valid_replicates),
            "status": r.status,
            "flags": [] if r.flags is None or pd.isna(r.flags) else str(r.flags).split("; "),
            "metric": definition_of(r.estimand, r.group, metric)["metric"],
            "sided": DEFINITIONS[r.estimand]["sided"],
        }
        for r in estimates.itertuples(index=False)
    }


def _estimates() -> pd.DataFrame:
    """Rows with every kind of missing or odd value, of estimands whose metric names the group
    (``{group}``) and of estimands whose metric does not."""
    grouped = next(name for name, d in DEFINITIONS.items() if "{group}" in d["metric"])
    plain = [name for name, d in DEFINITIONS.items() if "{group}" not in d["metric"]][:3]
    rows = []
    values = [0.25, np.nan, np.inf, -np.inf, -0.0, 1e-300]
    for k, name in enumerate([grouped, *plain, grouped, plain[0]] * 4):
        rows.append(
            {
                "estimand": name,
                "group": f"g{k % 5}",  # repeated keys: the last row wins, as in a dict
                "estimate": values[k % 6],
                "ci_low": values[(k + 1) % 6],
                "ci_high": None if k % 7 == 0 else values[(k + 2) % 6],
                "p": values[(k + 3) % 6],
                "p_adj": None,
                "n": None if k % 3 == 0 else 100 + k,
                "n_articles": None if k % 4 == 0 else k,
                "valid_replicates": None if k % 5 == 0 else 2000 - k,
                "p_bound": None if k % 3 == 1 else bool(k % 2),
                "identifiable": None if k % 4 == 1 else bool(k % 3),
                "status": None if k % 9 == 0 else "not identifiable: too few articles: 3 < 10",
                "flags": None if k % 2 else "first flag; second flag",
            }
        )
    return _typed(pd.DataFrame(rows, columns=ESTIMATE_COLUMNS))


@pytest.mark.parametrize("metric", ["token_f1", "accuracy"])
def test_the_index_equals_the_row_by_row_reading(metric):
    estimates = _estimates()
    got, want = estimand_index(estimates, metric), _row_by_row(estimates, metric)
    assert list(got) == list(want)
    assert got == want
    # Same Python types too (a NumPy scalar would write the same JSON but is another value).
    for key, entry in got.items():
        assert [type(v) for v in entry.values()] == [type(v) for v in want[key].values()]


def test_the_index_of_no_estimate_is_empty():
    assert estimand_index(_typed(pd.DataFrame([], columns=ESTIMATE_COLUMNS)), "token_f1") == {}


def test_finite_values_are_finites_values():
    values = np.array([1.5, np.nan, np.inf, -np.inf, 0.0, -2.0])
    assert finite_values(values) == [finite(v) for v in values]
    assert all(type(v) is float for v in finite_values(values) if v is not None)


def test_the_collector_is_paused_in_the_block_and_resumes_after():
    assert gc.isenabled()
    with paused_collection():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_collection():
        raise RuntimeError("an error inside")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    try:
        with paused_collection():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_suite_builds_pair_entries_and_the_index_with_the_collector_paused(
    monkeypatch, project, small_langs
):
    from clcg_pipeline.analysis import _suite, run_suite
    from clcg_pipeline.analysis.sections import model_contrasts
    from clcg_pipeline_tests.analysis.conftest import band_scores, small_config

    seen: dict[str, bool] = {}

    def recording(name: str, function: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen[name] = gc.isenabled()
            return function(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(model_contrasts, "pair_entries", recording("pairs", model_contrasts.pair_entries))
    monkeypatch.setattr(_suite, "estimand_index", recording("index", _suite.estimand_index))
    config = small_config(project, small_langs, 3, replicates=20, seed=3)
    result = run_suite(band_scores(small_langs, 3, 12, seed=2), config)
    assert seen == {"pairs": False, "index": False}
    assert len(result.results["model_contrasts"]["pairs"]) == 3
    assert gc.isenabled()
