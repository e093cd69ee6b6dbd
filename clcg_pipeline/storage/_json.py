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


def jsonable(value: Any, *, unknown: Unknown = "str") -> Any:
    """``value`` in plain JSON types: dict keys as strings, NumPy scalars unboxed, NaN/inf as None.

    ``unknown`` says what becomes of a value with no JSON type (a date, a ``Path``...):
    ``"str"`` writes its string form (NumPy arrays become lists first); ``"keep"`` leaves it,
    after unboxing a NumPy scalar with ``.item()``, for the caller's encoder to handle.
    """
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
