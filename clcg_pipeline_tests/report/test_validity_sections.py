"""The report's ``nomological``, ``replication``, ``joshi_class`` and ``metric_sensitivity``
sections read their typed models (issue 34): a field of another type is refused naming it, each
row shows typed fields, and what could not be computed says why."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.storage import DocumentError
from clcg_pipeline_tests.report.test_report import _section_html, _text

GOLDEN = Path(__file__).parents[1] / "analysis" / "golden_suite.json"
SECTIONS = ("nomological", "replication", "joshi_class", "metric_sensitivity")


@functools.cache
def _golden_text() -> str:
    return GOLDEN.read_text(encoding="utf-8")


def _results() -> dict[str, Any]:
    """The suite's own sections on the golden synthetic panel, with its h1 and languages."""
    golden = json.loads(_golden_text())["results"]
    return {name: golden[name] for name in ("h1", "languages", *SECTIONS)}


def test_the_suites_sections_render_from_their_typed_fields() -> None:
    results = _results()
    html = render_report(results, None)
    replication = _text(_section_html(html, "result-replication"))
    rho = results["replication"]["spearman"]["estimate"]
    assert f"Spearman of the two corpora's language rankings {rho:.3f}" in replication
    assert "H1 on the replication corpus" in replication and "rows counted" in replication
    micro = results["replication"]["h1"]["h1_micro"]["estimate"]
    assert f"H1 micro CLCG {micro:.3f}" in replication
    nomological = _text(_section_html(html, "result-nomological"))
    assert "Spearman correlation with the language CLCG" in nomological
    assert "Spearman with Joshi class (sensitivity mapping)" in nomological
    classes = _section_html(html, "result-joshi_class")
    bars = re.search(r'<svg[^>]*id="chart-joshi_class"[^>]*data-bars="(\d+)"', classes) or re.search(
        r'<svg[^>]*data-bars="(\d+)"[^>]*id="chart-joshi_class"', classes
    )
    assert bars is not None and int(bars.group(1)) == len(results["joshi_class"]["primary"])
    assert "Sensitivity" in _text(classes) or "sensitivity" in _text(classes)
    metrics = _text(_section_html(html, "result-metric_sensitivity"))
    reason = results["metric_sensitivity"]["metrics"]["semsim"]["reason"]
    assert reason in metrics and metrics.count(reason) == 1


def test_an_ols_that_could_not_be_fitted_says_why() -> None:
    # The golden panel has four languages for three predictors: no r2, no coefficient, no reason
    # in the document; the section said "r2 —" and nothing else.
    results = _results()
    assert results["nomological"]["standardized_ols"]["r2"] is None
    text = _text(_section_html(render_report(results, None), "result-nomological"))
    assert "Standardized OLS (descriptive) \u26a0 not fitted: no more languages with data" in text


def test_a_replication_without_scores_says_why_once() -> None:
    results = _results()
    reason = "no replication scores (study.replication_scores not set or empty)"
    results["replication"] = {"status": "not available: no replication scores", "identifiable": False}
    results["replication"]["reason"] = reason
    text = _text(_section_html(render_report(results, None), "result-replication"))
    assert text.count(reason) == 1 and "Spearman of the two" not in text


@pytest.mark.parametrize(
    ("section", "path", "value", "field"),
    [
        ("nomological", ("spearman", "fertility", "n"), "4", r"nomological\.spearman\.fertility\.n"),
        ("replication", ("h1", "by_language", "sw", "ci_low"), "0.01", r"replication\.h1\.by_language\.sw"),
        ("joshi_class", ("primary", "2", "languages"), "sw", r"joshi_class\.primary\.2\.languages"),
        ("replication", ("band", "levles"), ["L3"], r"replication\.band\.levles: a key"),
    ],
)
def test_a_wrong_field_is_refused_naming_it(
    section: str, path: tuple[str, ...], value: object, field: str
) -> None:
    results = _results()
    target = results[section]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(DocumentError, match=rf"section '{section}', field {field}"):
        render_report(results, None)


def test_a_replication_with_no_band_rows_says_why() -> None:
    results = _results()
    reason = "no scored rows in the band"
    results["replication"] = {
        "h1": {"identifiable": False, "reason": reason, "status": "not identifiable"},
        "rows": "study band",
        "n_rows": 0,
    }
    text = _text(_section_html(render_report(results, None), "result-replication"))
    assert f"not identifiable: {reason}" in text and "N rows 0" in text
