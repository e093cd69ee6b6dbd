"""The BH family reads the ``h2``, ``h3``, ``h4`` and ``mixed_effects`` sections through their
document models (storage ``H2Results``, ``H3Results``, ``H4Results``, ``MixedEffectsResults``;
issue 34): typed fields, and a section of another shape stops the suite there, naming the
field, instead of at the document's write."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from clcg_pipeline.analysis.sections.multiplicity import multiplicity
from clcg_pipeline.storage import DocumentError


def _ctx() -> Any:
    return SimpleNamespace(config=SimpleNamespace(models=SimpleNamespace(evaluated=[])))


def _results(h4_p: object, converged: bool = True) -> dict[str, Any]:
    return {
        "h2": {"pooled": {"difference": {"p": 0.04}}},
        "h3": {"slope": {"p": 0.01}},
        "h4": {"difference": {"estimate": 0.01, "p": h4_p}, "alternative": "two-sided"},
        "mixed_effects": {
            "h2": {"estimate": -0.01, "p": 0.3, "p_one_sided_less": 0.15, "converged": converged}
        },
    }


def _p(family: dict[str, Any], test: str) -> object:
    return next(row["p"] for row in family["tests"] if row["test"] == test)


def test_the_family_takes_h4_and_the_converged_mixed_fit_from_typed_fields() -> None:
    family = multiplicity(_ctx(), _results(0.3), {"all": 0.001})
    assert _p(family, "h4_difference/all") == 0.3 and _p(family, "mixed_h2/all") == 0.15
    # A fit that did not converge gives no support: left out of the family.
    family = multiplicity(_ctx(), _results(0.3, converged=False), {"all": 0.001})
    assert "mixed_h2/all" in family["not_available"]
    family = multiplicity(
        _ctx(), {**_results(0.3), "h4": {"status": "not available", "identifiable": False}}, {}
    )
    assert "h4_difference/all" in family["not_available"]


def test_a_section_of_another_shape_is_refused_naming_the_field() -> None:
    with pytest.raises(DocumentError, match=r"analysis section 'h4': field difference\.p: "):
        multiplicity(_ctx(), _results("0.3"), {"all": 0.001})
    results = _results(0.3)
    results["mixed_effects"]["h2"]["p_one_side_less"] = 0.15
    with pytest.raises(DocumentError, match=r"field h2\.p_one_side_less: a key its shape does not declare"):
        multiplicity(_ctx(), results, {"all": 0.001})


def test_the_family_takes_h2_and_h3_from_typed_fields() -> None:
    family = multiplicity(_ctx(), _results(0.3), {"all": 0.001})
    assert _p(family, "h2_difference/all") == 0.04 and _p(family, "h3_slope/all") == 0.01
    # A pooled contrast that could not be computed (a group missing) and no slope: not available.
    results = {
        **_results(0.3),
        "h2": {"pooled": {"status": "not identifiable", "identifiable": False, "n_new": 0}},
        "h3": {"status": "not available"},
    }
    family = multiplicity(_ctx(), results, {"all": 0.001})
    assert {"h2_difference/all", "h3_slope/all"} <= set(family["not_available"])


def test_an_h2_or_h3_of_another_shape_is_refused_naming_the_field() -> None:
    results = _results(0.3)
    results["h2"]["pooled"]["difference"]["p"] = "0.04"
    with pytest.raises(DocumentError, match=r"analysis section 'h2': field pooled\.difference\.p: "):
        multiplicity(_ctx(), results, {"all": 0.001})
    results = _results(0.3)
    results["h3"]["slope"]["p_vlaue"] = 0.01
    with pytest.raises(DocumentError, match=r"field slope\.p_vlaue: a key its shape does not declare"):
        multiplicity(_ctx(), results, {"all": 0.001})
