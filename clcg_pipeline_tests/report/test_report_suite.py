"""The report renders what the analysis stage really produces (small synthetic study)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clcg_pipeline.config import load_config
from clcg_pipeline.report import format_h1_table, render_report
from clcg_pipeline.synthetic import (
    synthetic_articles,
    synthetic_config,
    synthetic_fertility,
    synthetic_scores,
)

analysis = pytest.importorskip("clcg_pipeline.analysis")

CONFIG_DIR = Path(__file__).resolve().parents[2] / "assets_config"


def test_renders_run_suite_output() -> None:
    config = synthetic_config(load_config(CONFIG_DIR))
    scores = synthetic_scores(config.languages, n_articles=8, n_stability=2, seed=3)
    suite = analysis.run_suite(
        scores,
        config,
        articles=synthetic_articles(8),
        fertility=synthetic_fertility(config.languages),
        replicates=50,
    )
    # Round-trip through JSON as the report asset reads study_results.json.
    results = json.loads(json.dumps(suite.results, default=str))
    languages = [
        {"iso": lang.iso, "name": lang.name, "joshi_class": lang.joshi_class}
        for lang in config.languages.languages
    ]
    html = render_report(results, suite.estimates, languages=languages)
    for key in results:
        if key in ("languages_without_data", "languages_with_data"):
            assert 'id="study-facts"' in html  # shown in the header
        elif key == "definitions":
            assert '<section id="definitions"' in html
        elif key == "drilldown":
            assert '<section id="drilldown"' in html
        elif key not in ("h1", "settings", "languages", "warnings", "estimands"):
            assert f'<section id="result-{key}"' in html, key
    assert " / " not in html  # no JSON-path rows anywhere
    assert "-0.000" not in html
    micro = results["h1"]["h1_micro"]["estimate"]
    assert f"{micro:.3f}" in html
    targets = config.languages.targets
    assert html.count("<title>") >= len(targets)  # one tooltip per language bar, plus chart titles
    assert "Basque (eu) \u00b7 class 4" in html
    assert str(results["settings"]["config_hash"]) in html
    assert "http://" not in html and "https://" not in html
    table = format_h1_table(results["h1"], languages)
    assert table.row_count == len(results["h1"]["by_language"]) + 5
