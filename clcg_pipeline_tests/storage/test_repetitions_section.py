"""The ``repetitions`` section is a pydantic model (issue 34): checked where the document is written
(``validate_document``) and read (``study_results_view``), a wrong-typed or unknown field refused
naming it, and read back as typed fields."""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.storage import study_results_view, validate_document
from clcg_pipeline_tests.storage.conftest import refused


def _repetitions() -> dict[str, Any]:
    """``repetitions`` as analysis/sections/repetitions.py writes it."""
    estimate = {"estimate": 0.06, "ci_low": None, "ci_high": None, "n": 524, "n_articles": 6}
    return {
        "articles": 6,
        "per_repetition": {"0": {**estimate, "identifiable": False, "reason": "too few"}, "1": estimate},
        "summary": {"mean": 0.07, "sd": 0.01, "min": 0.06, "max": 0.08},
        "by_model": {"m1": {"0": 0.03, "1": None}},
        "kendalls_w": 0.82,
        "pairwise_spearman": {"0-1": {"rho": 0.8, "p": 0.2, "n": 4}},
        "mean_pairwise_spearman": 0.8,
    }


def test_the_producers_repetitions_fit_and_read_as_typed_fields() -> None:
    document = {"repetitions": _repetitions()}
    validate_document(document, source="run/study_results.json")
    typed = study_results_view(document).repetitions
    assert typed is not None and typed.per_repetition is not None and typed.summary is not None
    assert typed.per_repetition["0"].identifiable is False and typed.summary.sd == 0.01
    assert typed.pairwise_spearman is not None and typed.pairwise_spearman["0-1"].n == 4
    # A section that could not be computed says why only.
    validate_document({"repetitions": {"status": "not available: no rows"}}, source="run/study_results.json")


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_a_wrong_typed_repetitions_field_is_refused_naming_it(call: Any) -> None:
    document = {"repetitions": _repetitions()}
    document["repetitions"]["pairwise_spearman"]["0-1"]["n"] = "4"
    message = refused(call, document)
    assert "section 'repetitions', field repetitions.pairwise_spearman.0-1.n" in message, message


@pytest.mark.parametrize("call", [validate_document, study_results_view], ids=["written", "read"])
def test_an_unknown_repetitions_key_is_refused_naming_it(call: Any) -> None:
    document = {"repetitions": {**_repetitions(), "kendall_w": 0.8}}
    assert "field repetitions.kendall_w: a key its shape does not declare" in refused(call, document)
