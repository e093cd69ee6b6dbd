"""storage.finite and storage.jsonable: the one conversion of results to plain JSON values."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import numpy as np
import pytest

from clcg_pipeline.storage import finite, jsonable


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), (1, 1.0), (np.float32(0.5), 0.5), (np.int64(3), 3.0), (math.nan, None), (-np.inf, None)],
)
def test_finite(value: object, expected: float | None) -> None:
    got = finite(value)
    assert got == expected and (got is None or type(got) is float)


def test_finite_rejects_what_is_not_a_number() -> None:
    with pytest.raises((TypeError, ValueError)):
        finite("abc")


def test_jsonable_unboxes_numpy_and_drops_non_finite_floats() -> None:
    doc = {
        1: np.int64(2),
        "f": [np.float64(0.25), math.nan, np.inf],
        "b": (np.bool_(True), False),
        "a": np.array([1.5, np.nan]),
        "s": np.str_("x"),
        "none": None,
    }
    out = jsonable(doc)
    assert out == {
        "1": 2,
        "f": [0.25, None, None],
        "b": [True, False],
        "a": [1.5, None],
        "s": "x",
        "none": None,
    }
    assert type(out["1"]) is int and type(out["b"][0]) is bool
    json.dumps(out, allow_nan=False)


def test_unknown_values_as_strings_or_kept() -> None:
    day = np.datetime64("2024-05-01T12:00")
    assert jsonable({"p": Path("a/b"), "d": day}) == {"p": "a/b", "d": str(day)}
    kept = jsonable({"p": Path("a/b"), "d": day, "arr": np.array([1])}, unknown="keep")
    assert kept["p"] == Path("a/b")
    assert kept["d"] == dt.datetime(2024, 5, 1, 12, 0)  # a NumPy scalar is unboxed with .item()
    assert isinstance(kept["arr"], np.ndarray)
    assert jsonable([np.float64(np.nan), np.int32(4)], unknown="keep") == [None, 4]
