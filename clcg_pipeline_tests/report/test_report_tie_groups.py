"""Issue 37: the report ranks models with tie groups and shows only the pairs a reader needs."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

from clcg_pipeline.analysis import leaderboard
from clcg_pipeline.report import render_report
from clcg_pipeline.results import new_model_block
from clcg_pipeline_tests.analysis.test_tie_groups import planted_study
from clcg_pipeline_tests.report.test_report import _section_html, _text


@pytest.fixture(scope="module")
def six():
    """Six models: three that cannot be separated, then three 0.1 apart (groups {a, b, c}, {d}, {e}, {f})."""
    return planted_study([0.0, 0.0, 0.0, 0.1, 0.2, 0.3])


def _contrast_text(results: dict[str, Any], estimates: pd.DataFrame) -> str:
    return _text(_section_html(render_report(results, estimates), "result-model_contrasts"))


def _shown(text: str, results: dict[str, Any]) -> set[str]:
    return {name for name in results["model_contrasts"]["pairs"] if f"{name} (H1 micro)" in text}


def test_only_adjacent_and_significant_pairs_are_shown(six):
    results, estimates = six
    order = list(leaderboard(results).model)
    pairs = results["model_contrasts"]["pairs"]
    # The outer pair of the first group: neither adjacent nor significant, so not shown.
    hidden = next(n for n in pairs if {pairs[n]["model_a"], pairs[n]["model_b"]} == {order[0], order[2]})
    assert pairs[hidden]["h1_micro"]["p_adj"] > 0.05
    text = _contrast_text(results, estimates)
    assert _shown(text, results) == set(pairs) - {hidden}
    assert "14 of the 15 pairs shown" in text
    assert "All 15 pairs are in the catalog: clcg query --named model_contrasts" in text


def test_the_new_model_is_shown_against_every_other_model_in_its_own_section(six):
    """Its pairs are not repeated among the contrasts (the same rule as without it: its outer
    pair with the third model stays hidden there); its section lists every other model."""
    results, estimates = six
    order = list(leaderboard(results).model)
    with_new = {**results, "new_model": new_model_block(results, order[0])}
    html = render_report(with_new, estimates)
    text = _text(_section_html(html, "result-model_contrasts"))
    assert _shown(text, with_new) == _shown(_contrast_text(results, estimates), results)
    assert "14 of the 15 pairs shown" in text
    assert (
        f"The new model ({order[0]}) against each of the 5 other models (H1 micro): its own section" in text
    )
    section = _text(_section_html(html, "new-model"))
    assert all(f"{order[0]} minus {other}" in section for other in order[1:])


def test_ranks_table_and_first_screen_show_the_tie_group(six):
    results, estimates = six
    html = render_report(results, estimates)
    text = _text(_section_html(html, "result-model_contrasts"))
    assert "tie group" in text and "tie groups at level 0.05" in text
    first = html[html.index('<div id="decision"') : html.index('id="study-facts"')]
    rows = re.findall(r"<tr>(.*?)</tr>", first.split('class="decision-models"')[1], flags=re.S)
    cells = [_text(row).split(" ") for row in rows[1:7]]
    by_model = {row[1]: row[3] for row in cells}  # rank, model, rank interval, tie group, ...
    assert by_model == {m: str(g) for m, g in results["model_contrasts"]["tie_groups"]["by_model"].items()}
    assert "Tie group: models whose ranks cannot be separated at level 0.05" in _text(first)


def test_withheld_ranks_mark_the_tie_group_and_say_why_once():
    results, estimates = planted_study([0.0, 0.0, 0.1], n_articles=4)
    html = render_report(results, estimates)
    first = _text(html[html.index('<div id="decision"') : html.index('id="study-facts"')])
    assert "No tie groups: the ranks have no intervals (the reason is below)." in first
    assert first.count("too few articles") == 1
    section = _text(_section_html(html, "result-model_contrasts"))
    assert "no tie groups: too few articles" in section
