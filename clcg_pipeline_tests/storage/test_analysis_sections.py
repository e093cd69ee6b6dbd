"""The ``h2`` and ``context_gain`` sections are pydantic models (issue 34): checked where the
document is written (``validate_document``) and read (``study_results_view``), a wrong-typed or
unknown field refused naming it, and read back as typed fields."""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.storage import study_results_view, validate_document
from clcg_pipeline_tests.storage.conftest import refused


def _estimate(value: float, n: int) -> dict[str, Any]:
    return {"estimate": value, "ci_low": value - 0.01, "ci_high": value + 0.01, "n": n, "flags": []}


def _document() -> dict[str, Any]:
    """The two sections as analysis/sections/h2.py and context.py write them."""

    def contrast() -> dict[str, Any]:
        return {
            "memorizable": _estimate(0.05, 300),
            "new": _estimate(0.07, 400),
            "difference": _estimate(-0.02, 700),
        }

    return {
        "h2": {
            "status": "estimated",
            "definition": "memorizable when ...",
            "alternative": "less",
            "rows_without_date_or_cutoff": 0,
            "pooled": contrast(),
            "by_model": {
                "m1": contrast(),
                "m2": {
                    "status": "not identifiable",
                    "identifiable": False,
                    "reason": "no cutoff",
                    "n_memorizable": 0,
                    "n_new": 0,
                },
            },
            "by_class_sensitivity": {"4": {**_estimate(0.01, 300), "languages": ["pt"]}},
        },
        "context_gain": {
            "selector": {"model": "m1", "doc_ids": ["d1"], "items": 6, "rule": "first six"},
            "closed_book_mean": 0.01,
            "matched_rows": 12,
            "matched_pairs": 12,
            "by_language": {"sw": {"gain": 0.2, "n": 36, "n_pairs": 6, "n_articles": 1}},
            "by_class": {"1": {"gain": 0.2, "n": 36, "n_pairs": 6, "n_articles": 1, "languages": ["sw"]}},
            "note": "descriptive",
        },
    }


def test_the_producers_sections_fit_and_read_as_typed_fields() -> None:
    document = _document()
    validate_document(document, source="run/study_results.json")
    view = study_results_view(document)
    assert view.h2 is not None and view.h2.pooled is not None and view.h2.pooled.difference is not None
    assert view.h2.pooled.difference.estimate == -0.02 and view.h2.by_model is not None
    assert view.h2.by_model["m2"].identifiable is False and view.h2.by_model["m2"].n_new == 0
    assert view.context_gain is not None and view.context_gain.by_language is not None
    assert view.context_gain.by_language["sw"].gain == 0.2 and view.context_gain.selector is not None


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_a_wrong_typed_h2_field_is_refused_naming_it(call: Any) -> None:
    document = _document()
    document["h2"]["pooled"]["difference"]["n"] = "700"
    message = refused(call, document)
    assert message.startswith("run/study_results.json: section 'h2', field h2.pooled.difference.n:")
    assert "valid integer" in message


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_a_wrong_typed_context_gain_field_is_refused_naming_it(call: Any) -> None:
    document = _document()
    document["context_gain"]["by_language"]["sw"]["gain"] = "0.2"
    message = refused(call, document)
    assert "section 'context_gain', field context_gain.by_language.sw.gain:" in message
    assert "valid number" in message


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_an_unknown_key_in_h2_is_refused_naming_it(call: Any) -> None:
    document = _document()
    document["h2"]["by_model"]["m1"]["diference"] = _estimate(0.0, 1)
    message = refused(call, document)
    assert "field h2.by_model.m1.diference: a key its shape does not declare" in message


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_a_wrong_typed_h3_field_is_refused_naming_it(call: Any) -> None:
    document = {
        "h3": {
            "standardized": {"L3": _estimate(0.1, 50)},
            "standardization": {"L3": {"mean": 0.3, "sd": "0.1"}},
            "slope": {**_estimate(0.01, 100), "alternative": "greater (one-sided)", "levels": ["L3", "L4"]},
        }
    }
    message = refused(call, document)
    assert "section 'h3', field h3.standardization.L3.sd:" in message and "valid number" in message
    document["h3"]["standardization"]["L3"]["sd"] = 0.1
    h3 = study_results_view(document).h3
    assert h3 is not None and h3.slope is not None and h3.slope.levels == ["L3", "L4"]
