"""The report reads the results document through typed views (issue 34, item 2).

Each section the report reads through ``clcg_pipeline.storage``'s views (``StudyResults`` and
the section views) refuses a field of another type with a ``DocumentError`` naming the file,
the section and the field; before, such a field rendered as a blank, an "unreadable" status or
a silently dropped banner. A ceiling on the ``.get(`` calls left in the report's modules keeps
the conversion from sliding back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import clcg_pipeline.report
from clcg_pipeline.report import new_model_lines, render_report
from clcg_pipeline.storage import DocumentError, validate_document
from clcg_pipeline_tests.report import study_fixtures as fx
from clcg_pipeline_tests.report.test_report import _full

# ``.get(`` and ``isinstance`` lines in clcg_pipeline/report/*.py: 370 and 132 before the views;
# lower these as more of the report reads typed fields, never raise them.
GET_CEILING = 188
ISINSTANCE_CEILING = 99

WRONG = [
    # (section, its value, the field the error names)
    ("human_validation", {**fx.human(), "simulated": "true"}, "human_validation.simulated"),
    (
        "human_validation",
        {**fx.human(), "ceiling": {"triggered": "yes"}},
        "human_validation.ceiling.triggered",
    ),
    (
        "human_validation",
        {**fx.human(), "preference": {"decisive": "40"}},
        "human_validation.preference.decisive",
    ),
    ("error_taxonomy", "a string", "error_taxonomy"),
    ("error_taxonomy", {**fx.taxonomy(), "pairs": "12"}, "error_taxonomy.pairs"),
    ("granularity", {**fx.granularity(), "caveats": "one caveat"}, "granularity.caveats"),
    ("error_taxonomy", {**fx.taxonomy(), "transitions": [{"n": "3"}]}, "error_taxonomy.transitions[0].n"),
    (
        "granularity",
        {**fx.granularity(), "position_curve": [{"gap": "0.1"}]},
        "granularity.position_curve[0].gap",
    ),
    ("new_model", {"model": "m", "rank": {"estimate": "2"}}, "new_model.rank.estimate"),
    ("drilldown", {"sw": [{"question": 3, "difference": 0.5}]}, "drilldown.sw[0].question"),
    (
        "granularity",
        {**fx.granularity(), "judge_agreement": {"n": "3"}},
        "granularity.judge_agreement.n",
    ),
    (
        "granularity",
        {**fx.granularity(), "human_judge_correlation": {"simulated": "yes"}},
        "granularity.human_judge_correlation.simulated",
    ),
    ("settings", {"sources": "a corpus"}, "settings.sources"),
    ("generated_at", 20260101, "generated_at"),
    ("definitions", {"h1_micro": {"definition": 1}}, "definitions.h1_micro.definition"),
    (
        "metric_sensitivity",
        {"band_metric": "token_f1", "metrics": {"rouge_l": {"computed": "no"}}},
        "metric_sensitivity.metrics.rouge_l.computed",
    ),
    (
        "metric_sensitivity",
        {"metrics": {"rouge_l": {"h1_micro": {"ci_low": "0.1"}}}},
        "metric_sensitivity.metrics.rouge_l.h1_micro.ci_low",
    ),
]


@pytest.mark.parametrize(("section", "value", "field"), WRONG, ids=[w[2] for w in WRONG])
def test_a_wrong_typed_field_the_report_reads_is_refused_naming_it(
    section: str, value: object, field: str
) -> None:
    with pytest.raises(DocumentError) as raised:
        render_report({**_full(), section: value}, None)
    message = str(raised.value)
    assert message.startswith(f"study_results.json: section '{section}', field {field}:"), message


def test_the_terminal_lines_of_a_new_model_refuse_a_wrong_typed_field() -> None:
    with pytest.raises(DocumentError, match=r"field new_model\.n_models"):
        new_model_lines({"new_model": {"model": "m", "n_models": "4"}})


def test_the_typed_sections_render_as_the_document_says() -> None:
    """A simulated study with a triggered ceiling and a mixed model: read through the views."""
    human = {
        **fx.human(),
        "ceiling": {"triggered": True, "min_class_adequacy_median": 4.6, "high_low_difference": 0.2},
    }
    html = render_report({**_full(), "human_validation": human}, None)
    assert "Ceiling rule TRIGGERED: minimum adequacy median across resource classes 4.60" in html
    assert 'class="banner" role="alert">SIMULATED annotations' in html
    empty = render_report({**_full(), "human_validation": {**human, "ceiling": {}, "preference": {}}}, None)
    # An empty entry is no result, as an absent one: said, not shown as an empty table.
    assert "No ceiling-rule verdict recorded." in empty and "No preference result recorded." in empty


def _count(pattern: str) -> int:
    folder = Path(clcg_pipeline.report.__file__).parent
    return sum(
        1
        for path in folder.glob("*.py")
        for line in path.read_text().splitlines()
        if re.search(pattern, line)
    )


def test_the_report_reads_fewer_untyped_fields_than_its_ceiling() -> None:
    assert _count(r"\.get\(") <= GET_CEILING
    assert _count(r"\bisinstance\b") <= ISINSTANCE_CEILING


def _section_text(html: str, heading: str) -> str:
    start = html.index(heading)
    return html[start : start + 3000]


def test_the_paragraph_judges_render_from_their_typed_fields() -> None:
    """Agreement and correlation read as typed fields: an ICC withheld says why, a simulated
    correlation says so, and an empty entry is no result, as an absent one."""
    granularity = {
        **fx.granularity(),
        "judge_agreement": {"alpha_ordinal": 0.61, "icc": None, "icc_reason": "one judge", "n": 12},
        "human_judge_correlation": {"pearson_r": 0.5, "n": 9, "simulated": True},
    }
    html = render_report({**_full(), "granularity": granularity}, None)
    judges = _section_text(html, "Paragraph-filling judges: agreement and spread")
    assert "not computed: one judge" in judges and "0.610" in judges
    assert "SIMULATED ratings (the demo&#39;s simulated annotator)" in judges
    empty = {**granularity, "judge_agreement": {}, "human_judge_correlation": {}}
    html = render_report({**_full(), "granularity": empty}, None)
    judges = _section_text(html, "Paragraph-filling judges: agreement and spread")
    assert "agreement not computed" in judges and "Human vs judge correlation: not available" in judges


def test_the_settings_header_reads_the_merged_typed_settings() -> None:
    """``settings`` wins over ``h1.settings`` key by key; an older document's top-level
    ``generated_at`` fills in where neither has it."""
    document = {
        **_full(),
        "h1": {**_full()["h1"], "settings": {"confidence": 0.9, "band": {"metric": "exact_match"}}},
        "settings": {"band": {"metric": "token_f1", "levels": ["L1"]}, "config_hash": "abcdef0123456789xyz"},
        "generated_at": "2026-01-01T00:00:00Z",
    }
    html = render_report(document, None)
    assert "metric token_f1; levels L1" in html and "90% CI" in html
    assert "2026-01-01T00:00:00Z" in html and "abcdef0123456789<" in html


def test_the_metric_sensitivity_shape_refuses_a_key_it_does_not_declare() -> None:
    """``metric_sensitivity`` has a shape of its own (it was an open mapping): checked when
    study_results.json is written, as every section."""
    document = {"metric_sensitivity": {"metrics": {"rouge_l": {"computed": True, "h1_mikro": {}}}}}
    with pytest.raises(DocumentError, match=r"field metric_sensitivity\.metrics\.rouge_l\.h1_mikro: a key"):
        validate_document(document, source="study_results.json")
