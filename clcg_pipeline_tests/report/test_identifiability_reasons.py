"""Issue 34: a study computed below study.min_articles shows its estimates with the rule's reason
(``analysis.withheld_reason``), said once in its report section."""

from __future__ import annotations

from typing import Any

from clcg_pipeline.analysis import withheld_reason
from clcg_pipeline.config import default_config_dir, load_config
from clcg_pipeline.report import render_report
from clcg_pipeline.validation.taxonomy import analyse_error_taxonomy
from clcg_pipeline_tests.report.test_report import _full, _section_html, _text
from clcg_pipeline_tests.validation.test_taxonomy_analysis import TAXONOMY, _inputs, crafted


def _section(key: str, block: dict[str, Any]) -> str:
    return _text(_section_html(render_report({**_full(), key: block}, None), f"result-{key}"))


def test_the_taxonomy_section_says_the_rules_reason_once() -> None:
    sample, judgements, order = crafted(n_articles=5)
    doc = analyse_error_taxonomy(
        sample, judgements, order, TAXONOMY, _inputs(), load_config(default_config_dir())
    )
    rule = withheld_reason(0.0, 5, 10)
    text = _section("error_taxonomy", doc.results)
    assert f"Not identifiable: {rule}." in text and text.count(rule) == 1
