"""The report's granularity extra dimensions: length, ranks, trend, sentence position, roles,
each said once (a bucket below the rule named once; an empty dimension on one line)."""

from __future__ import annotations

from typing import Any

import pytest

from clcg_pipeline.config import ProjectConfig
from clcg_pipeline.granularity._analysis import analyse_granularity
from clcg_pipeline.report import render_report
from clcg_pipeline.synthetic import ExtraEffects, synthetic_task_scores
from clcg_pipeline_tests.granularity.analysis_world import granularity_config
from clcg_pipeline_tests.report.test_report import _full, _section_html, _text

LANGS = ("en", "pt", "sw", "fon")


@pytest.fixture(scope="module")
def config() -> ProjectConfig:
    return granularity_config()


def _section(doc: dict[str, Any]) -> str:
    return _text(_section_html(render_report({**_full(), "granularity": doc}, None), "result-granularity"))


def test_the_dimensions_render_and_a_small_bucket_is_named_once(config: ProjectConfig) -> None:
    effects = ExtraEffects(buckets=("8K", "8K", "128K"), sentence_middle=0.05)
    scores = synthetic_task_scores(
        LANGS, models=("m1", "m2"), n_documents=15, gaps={"sw": 0.1}, effects=effects
    )
    text = _section(analyse_granularity(scores, config, replicates=30).results)
    for heading in (
        "By length bucket: the cross-lingual gap",
        "Models ranked per granularity",
        "Trend of the gap across granularities",
        "Sentence position within the paragraph: middle sentence",
        "Score by key-sentence role",
    ):
        assert heading in text, heading
    assert text.count("length buckets below study.min_articles = 10 documents: 128K (5 documents)") == 1


def test_a_dimension_the_rows_lack_takes_one_line(config: ProjectConfig) -> None:
    scores = synthetic_task_scores(LANGS, n_documents=12, gaps={"sw": 0.1})
    text = _section(analyse_granularity(scores, config, replicates=30).results)
    for line in (
        "By length bucket: by length: skipped, the task_scores rows carry no 'bucket' values.",
        "Score by key-sentence role: accuracy by role: skipped, the task_scores rows carry no 'role' values.",
    ):
        assert text.count(line) == 1, line
    assert "By length bucket: the cross-lingual gap" not in text
