"""Issue 37: ``jsonable``'s fast path for plain Python values gives what the general walk gave,
value for value and type for type."""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clcg_pipeline.storage import jsonable


def general(value: Any, *, unknown: str = "str") -> Any:
    """``jsonable`` as it was before its fast path (c7790a2): the specification it must keep."""
    if isinstance(value, dict):
        return {str(k): general(v, unknown=unknown) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [general(v, unknown=unknown) for v in value]
    if unknown == "keep" and isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, np.ndarray) and unknown == "str":
        return [general(v, unknown=unknown) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        x = float(value)
        return x if math.isfinite(x) else None
    if value is None or isinstance(value, int | str):
        return value
    return value if unknown == "keep" else str(value)


class Level(enum.IntEnum):
    L3 = 3


class Name(str):
    pass


def _exactly(got: Any, want: Any, path: str = "") -> None:
    """Equal, and of the same type at every level (``1 == 1.0 == True`` is not enough)."""
    assert type(got) is type(want), (path, got, want)
    if isinstance(want, dict):
        assert list(got) == list(want), path
        for key in want:
            assert type(next(k for k in got if k == key)) is type(key), (path, key)
            _exactly(got[key], want[key], f"{path}/{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            _exactly(g, w, f"{path}[{k}]")
    elif isinstance(want, np.ndarray):  # kept for the caller's encoder ("keep")
        assert got is want, path
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), path
    else:
        assert got == want, (path, got, want)


MIXED = {
    "plain": {"s": "x", "i": 3, "b": True, "none": None, "f": 0.25, "nan": math.nan, "inf": -math.inf},
    "numpy": [np.float64(0.5), np.float32(math.nan), np.int64(7), np.bool_(False), np.str_("y")],
    "arrays": np.array([[1.5, np.nan], [2.0, 3.0]]),
    1: "an int key",
    np.int64(2): "a NumPy key",
    Name("sub"): Name("a str subclass"),
    "enum": Level.L3,
    "tuple": (1, 2.5, (None, "z")),
    "ordered": OrderedDict([("b", 1), ("a", np.float64(math.inf))]),
    "default": defaultdict(list, {"k": [np.int32(1)]}),
    "other": [Path("/tmp/x"), dt.date(2026, 1, 2), {1.5: b"bytes"}],
    "deep": [[{"x": [1, [2.0, [float("nan")]]]}]],
}


@pytest.mark.parametrize("unknown", ["str", "keep"])
def test_the_fast_path_gives_the_general_walks_values_and_types(unknown: str) -> None:
    _exactly(jsonable(MIXED, unknown=unknown), general(MIXED, unknown=unknown))  # type: ignore[arg-type]


def test_a_suite_document_is_converted_as_before() -> None:
    from clcg_pipeline_tests.results.test_model_pairs import wide_study

    document = wide_study()[0]
    _exactly(jsonable(document), general(document))
