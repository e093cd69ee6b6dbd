"""The report's ``h2`` and ``context_gain`` sections read their typed models (issue 34): a field
of another type is refused naming it (no blank or string cell), and each row shows typed fields."""

from __future__ import annotations

import re

import pytest

from clcg_pipeline.report import render_report
from clcg_pipeline.storage import DocumentError
from clcg_pipeline_tests.report.test_report import _est, _full, _section_html, _text


def test_a_wrong_typed_h2_field_is_refused_naming_it() -> None:
    results = _full()
    results["h2"]["pooled"]["difference"]["n"] = "804"
    with pytest.raises(
        DocumentError, match=r"section 'h2', field h2\.pooled\.difference\.n: .*valid integer"
    ):
        render_report(results, None)


def test_a_wrong_typed_context_gain_field_is_refused_naming_it() -> None:
    results = _full()
    results["context_gain"]["by_language"]["sw"]["n_pairs"] = 6.0
    with pytest.raises(DocumentError, match=r"field context_gain\.by_language\.sw\.n_pairs"):
        render_report(results, None)


def test_context_gain_shows_the_selector_and_a_table_per_language_and_class() -> None:
    results = _full()
    entry = {"gain": 0.2, "n": 36, "n_pairs": 6, "n_articles": 1}
    results["context_gain"] = {
        "selector": {"model": "gpt-x", "doc_ids": ["d1", "d2"], "items": 12, "rule": "first six"},
        "closed_book_mean": 0.05,
        "by_language": {"sw": entry},
        "by_class": {"2": {**entry, "languages": ["sw", "mt"]}},
    }
    text = _text(_section_html(render_report(results, None), "result-context_gain"))
    assert "Closed-book mean 0.050" in text or "Closed book mean 0.050" in text
    assert "Model gpt-x" in text and "Doc ids d1, d2" in text and "Items 12" in text
    assert "language gain n pairs articles Swahili (sw) 0.200 36 6 1" in text
    assert "class languages gain n pairs articles class 2 sw, mt 0.200 36 6 1" in text


def test_a_section_that_was_not_computed_says_why() -> None:
    results = _full()
    results["context_gain"] = {"status": "not available: no closed_book rows"}
    results["h2"] = {
        "status": "not identifiable: no article dates",
        "identifiable": False,
        "reason": "no article dates",
    }
    html = render_report(results, None)
    assert "not available: no closed_book rows" in _text(_section_html(html, "result-context_gain"))
    h2 = _text(_section_html(html, "result-h2"))
    assert "not identifiable: no article dates" in h2


def test_h2_per_model_rows_read_each_contrast() -> None:
    results = _full()
    results["h2"]["by_model"]["claude-y"] = {
        "memorizable": _est(0.05, 0.04, 0.06, n=300),
        "new": _est(0.07, 0.06, 0.08, n=400),
        "difference": _est(-0.02, -0.03, -0.01, n=700, p=0.01),
    }
    h2 = _text(_section_html(render_report(results, None), "result-h2"))
    assert "claude-y \u00b7 Memorizable articles 0.050 [0.040, 0.060]" in h2
    assert "claude-y \u00b7 Difference -0.020 [-0.030, -0.010] 0.010 700" in h2


def test_the_h3_level_chart_reads_the_typed_levels_and_a_wrong_type_is_refused() -> None:
    results = _full()
    results["h3"]["standardized"] = {"L3": _est(0.2, 0.1, 0.3, n=40), "L4": _est(None, None, None, n=0)}
    html = render_report(results, None)
    section = _section_html(html, "result-h3")
    assert "chart-h3-standardized" in section and "L3" in section
    results["h3"]["standardized"]["L4"]["n"] = "0"
    with pytest.raises(DocumentError, match=r"field h3\.standardized\.L4\.n"):
        render_report(results, None)


def _repetitions() -> dict:
    return {
        "articles": 6,
        "per_repetition": {"0": _est(0.06, None, None, n=524), "1": _est(0.08, None, None, n=525)},
        "summary": {"mean": 0.07, "sd": 0.014, "min": 0.06, "max": 0.08},
        "by_model": {"gpt-x": {"0": 0.03, "1": 0.05}, "claude-y": {"0": 0.0017}},
        "kendalls_w": 0.82,
        "pairwise_spearman": {"0-1": {"rho": 0.8, "p": 0.2, "n": 4}},
        "mean_pairwise_spearman": 0.8,
    }


def test_a_wrong_typed_repetitions_field_is_refused_naming_it() -> None:
    results = _full()
    results["repetitions"] = _repetitions()
    results["repetitions"]["by_model"]["gpt-x"]["1"] = "0.05"
    with pytest.raises(DocumentError, match=r"section 'repetitions', field repetitions\.by_model\.gpt-x\.1"):
        render_report(results, None)


def test_repetitions_show_each_repetition_the_models_and_the_pairs_from_typed_fields() -> None:
    results = _full()
    results["repetitions"] = _repetitions()
    text = _text(_section_html(render_report(results, None), "result-repetitions"))
    assert "Articles 6 Kendall's W 0.820 Mean pairwise Spearman 0.800" in text
    assert "repetition 0 0.060" in text and "Summary Mean 0.070 SD 0.014" in text
    # One row per model, a column per repetition; a repetition a model lacks is a dash.
    assert "model repetition 0 repetition 1 gpt-x 0.030 0.050 claude-y 0.0017 \u2014" in text
    assert "repetitions Spearman rho p n repetitions 0 vs 1 0.800 0.200 4" in text
    # Nothing computed: why, once, no table of dashes.
    results["repetitions"] = {"status": "not available: no rows"}
    assert "not available: no rows" in _text(
        _section_html(render_report(results, None), "result-repetitions")
    )


def test_h2_says_once_why_a_difference_of_two_withheld_arms_has_an_interval() -> None:
    # The demo: both arms rest on fewer than min_articles articles (interval withheld), their
    # paired difference on all 11 (identifiable). Before, the table read "withheld, withheld,
    # [interval]" with no word on why; now the first such difference row says it, once.
    def arm(articles: int) -> dict:
        reason = f"too few articles: {articles} < study.min_articles = 10"
        return _est(0.06, None, None, n=300, n_articles=articles, identifiable=False, reason=reason)

    def contrast() -> dict:
        return {
            "memorizable": arm(5),
            "new": arm(6),
            "difference": _est(0.007, -0.04, 0.04, n=864, n_articles=11),
        }

    results = _full()
    results["h2"]["pooled"] = contrast()
    results["h2"]["by_model"] = {"gpt-x": contrast(), "claude-y": contrast()}
    h2 = _text(_section_html(render_report(results, None), "result-h2"))
    sentence = (
        "the arms' own intervals are withheld (each arm has fewer articles than study.min_articles) "
        "but their difference is paired on 11 articles and identifiable"
    )
    assert h2.count(sentence) == 1
    assert "Difference 0.007 [-0.040, 0.040]" in h2 and h2.index("Difference 0.007") < h2.index(sentence)
    assert h2.count("paired on both arms' articles, as said above") == 2  # the per-model rows
    # The estimates themselves are unchanged: the arms still show no interval.
    assert "[0.06" not in h2 and h2.count("0.060") == 6


def test_h2_says_nothing_of_pairing_when_an_arm_has_its_interval() -> None:
    h2 = _text(_section_html(render_report(_full(), None), "result-h2"))
    assert "paired on" not in h2


def test_h2_status_and_hint_say_the_arms_intervals_are_withheld() -> None:
    # The demo's H2: "Status: estimated" beside the folded title, above arms that are all withheld.
    def contrast() -> dict:
        arm = _est(0.06, None, None, n=300, n_articles=5, identifiable=False, reason="too few articles")
        return {"memorizable": arm, "new": arm, "difference": _est(0.007, -0.04, 0.04, n=864, n_articles=11)}

    results = _full()
    results["h2"]["pooled"] = contrast()
    results["h2"]["by_model"] = {"gpt-x": contrast()}
    h2 = _section_html(render_report(results, None), "result-h2")
    hint = re.findall(r'<span class="hint">([^<]*)</span>', h2)
    assert hint == ["Status: estimated, the arms&#39; intervals withheld"]
    assert "Status estimated, the arms' intervals withheld (only their differences have one)" in _text(h2)
    # One arm with its interval: the status stays as recorded.
    results["h2"]["by_model"]["gpt-x"]["new"] = _est(0.05, 0.02, 0.08, n=300, n_articles=12)
    h2 = _section_html(render_report(results, None), "result-h2")
    assert re.findall(r'<span class="hint">([^<]*)</span>', h2) == ["Status: estimated"]
