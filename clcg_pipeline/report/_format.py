"""Number formatting and tolerant readers for the results document."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

MISSING = "\u2014"  # an em dash for "not computed"


def as_float(value: object) -> float | None:
    """A finite float, or None for null / NaN / non-numeric values."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def fmt_num(value: object, digits: int = 3) -> str:
    """A number with fixed decimals, or an em dash when missing; never ``-0.000``."""
    number = as_float(value)
    if number is None:
        return MISSING
    text = f"{number:.{digits}f}"
    # A tiny negative (e.g. -7.7e-19 from floating-point cancellation) rounds to zero: no sign.
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fmt_ci(low: object, high: object, digits: int = 3) -> str:
    """``[low, high]``, or an em dash when either end is missing."""
    lo, hi = as_float(low), as_float(high)
    if lo is None or hi is None:
        return MISSING
    return f"[{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


def fmt_p(value: object, *, bound: bool = False) -> str:
    """A p value: three decimals, ``<0.001`` below that.

    ``bound`` marks the smallest p a bootstrap can give (1/(B+1)): the true p may be
    smaller, so it prints as ``≤value`` with enough digits to show the bound itself.
    """
    number = as_float(value)
    if number is None:
        return MISSING
    if bound:
        return "≤" + (f"{number:.2g}" if number < 0.001 else f"{number:.3f}")
    return "<0.001" if number < 0.001 else f"{number:.3f}"


def is_p_name(name: str) -> bool:
    """Whether a field holds a p value (``p``, ``p_adj``, ``p_lower``, ``p_value``; not ``p_bound``)."""
    return name == "p" or (name.startswith("p_") and name != "p_bound")


def fmt_bootstrap_p(value: object, replicates: int | None) -> str:
    """A bootstrap p: marked ``≤`` when it is the floor ``1/(B+1)`` of ``replicates`` B, where the
    true p may be smaller (the (k+1)/(B+1) convention never gives less)."""
    number = as_float(value)
    floor = 1.0 / (replicates + 1) if replicates else None
    at_floor = number is not None and floor is not None and number <= floor * (1 + 1e-9)
    return fmt_p(value, bound=at_floor)


def fmt_int(value: object) -> str:
    number = as_float(value)
    return MISSING if number is None else f"{int(number):,}"


def fmt_value(value: object) -> str:
    """Any scalar or container as short text (floats to 3 decimals, containers as JSON)."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return fmt_num(value, 4 if abs(value) < 0.01 and value != 0 else 3)
    if isinstance(value, list | tuple) and not any(isinstance(v, Mapping | list | tuple) for v in value):
        return "[" + ", ".join(fmt_value(v) for v in value) + "]"
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


def mapping_at(document: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``document[key]`` when it is a mapping, else an empty one (a section absent or of another shape)."""
    value = document.get(key)
    return value if isinstance(value, Mapping) else {}


def estimate_of(block: object) -> dict[str, Any]:
    """An ``{estimate, ci_low, ci_high, ...}`` dict from whatever the results hold (or empty)."""
    return dict(block) if isinstance(block, Mapping) else {}
