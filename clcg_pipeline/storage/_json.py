"""Plain JSON values from NumPy and pandas results: finite floats, Python scalars, string keys.

Kept to the standard library and NumPy so that light callers (``clcg estimate``) pay nothing
extra for it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

Unknown = Literal["str", "keep"]


def finite(x: Any) -> float | None:
    """``float(x)`` when it is finite; None for None, NaN and infinities.

    Anything ``float`` cannot convert raises, as it would have before the number reached JSON.
    """
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


#: Types returned as they are, whatever ``unknown`` says (exact types: a subclass takes the long way).
_PLAIN = frozenset({str, int, bool, type(None)})


def jsonable(value: Any, *, unknown: Unknown = "str") -> Any:
    """``value`` in plain JSON types: dict keys as strings, NumPy scalars unboxed, NaN/inf as None.

    ``unknown`` says what becomes of a value with no JSON type (a date, a ``Path``...):
    ``"str"`` writes its string form (NumPy arrays become lists first); ``"keep"`` leaves it,
    after unboxing a NumPy scalar with ``.item()``, for the caller's encoder to handle.

    Plain Python values, most of a document, take a fast path by exact type (issue 37: the
    chain of ``isinstance`` checks was 11 s on a 500-model document); anything else the
    general one (``_converted``), with the same result.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {
            key if type(key) is str else str(key): jsonable(item, unknown=unknown)
            for key, item in value.items()
        }
    if kind is list:
        return [jsonable(item, unknown=unknown) for item in value]
    return _converted(value, unknown)


def _converted(value: Any, unknown: Unknown) -> Any:
    """``jsonable`` of a value that is not of a plain type: NumPy scalars and arrays, subclasses,
    tuples, and the values with no JSON type."""
    if isinstance(value, dict):
        return {str(k): jsonable(v, unknown=unknown) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, unknown=unknown) for v in value]
    if unknown == "keep" and isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, np.ndarray) and unknown == "str":
        return [jsonable(v, unknown=unknown) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return finite(value)
    if value is None or isinstance(value, int | str):
        return value
    return value if unknown == "keep" else str(value)
