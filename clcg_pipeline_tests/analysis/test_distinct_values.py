"""Issue 37: the sections' model lists and date lookups work per distinct value, not per band row
(a tenth of a refresh at a hundred models), with the values of the per-row forms."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from clcg_pipeline.analysis._prepare import as_str, distinct_strs, map_strs
from clcg_pipeline.analysis.sections import h2 as sec_h2

_COLUMNS = {
    "object": pd.Series(["b", "a", "b", "c"] * 3, dtype=object),
    "categorical, an unused category": pd.Series(
        pd.Categorical(["b", "a", "b"] * 4, categories=["a", "b", "z"])
    ),
    "integers": pd.Series([3, 1, 2, 3] * 3),
    "a missing object": pd.Series(["a", None, "b", np.nan], dtype=object),
    "a missing category": pd.Series(pd.Categorical(["a", None, "b", "a"])),
    "empty": pd.Series([], dtype=object),
}


@pytest.mark.parametrize("column", list(_COLUMNS.values()), ids=list(_COLUMNS))
def test_distinct_strs_is_the_set_of_every_rows_string(column: pd.Series) -> None:
    assert distinct_strs(column) == set(as_str(column))


@pytest.mark.parametrize("column", list(_COLUMNS.values()), ids=list(_COLUMNS))
@pytest.mark.parametrize(
    "mapping",
    [
        {"a": pd.Timestamp("2020-01-01"), "b": pd.Timestamp("2021-06-30")},
        pd.Series({"a": pd.Timestamp("2020-01-01"), "3": pd.Timestamp("2019-01-01")}),
        {},
    ],
    ids=["dict", "series", "nothing known"],
)
def test_map_strs_maps_as_every_rows_string_does(column: pd.Series, mapping: object) -> None:
    got = map_strs(column, mapping)  # type: ignore[arg-type]
    want = as_str(column).map(mapping)  # type: ignore[arg-type]
    pd.testing.assert_series_equal(got, want)
    np.testing.assert_array_equal(got.to_numpy(dtype="datetime64[ns]"), want.to_numpy(dtype="datetime64[ns]"))


def test_h2_looks_up_each_article_and_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memorability labels: one date lookup per distinct article and model, not per row."""
    docs = [f"d{k}" for k in range(6)]
    band = pd.DataFrame(
        {
            "model": pd.Categorical(["m1", "m2"] * 30),
            "language": ["en"] * 60,
            "doc_id": [docs[k % 6] for k in range(60)],
            "item_id": [f"i{k}" for k in range(60)],
            "y": np.linspace(0, 1, 60),
        }
    )
    published = pd.Series(pd.to_datetime(["2020-01-01"] * 6), index=docs)
    cutoffs = {"m1": pd.Timestamp("2021-01-01"), "m2": pd.Timestamp("2019-01-01")}
    mapped: list[int] = []
    series_map = pd.Series.map

    def counting(self: pd.Series, *args: object, **kwargs: object) -> pd.Series:
        mapped.append(len(self))
        return series_map(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pd.Series, "map", counting)
    rows, undated = sec_h2._memorability_rows(band, published, cutoffs)
    assert undated == 0 and mapped and max(mapped) <= len(docs)
    assert list(rows["memo"].astype(str)) == ["memorizable" if k % 2 == 0 else "new" for k in range(60)]
